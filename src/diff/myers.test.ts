import { spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { makeTempDir } from "../../test/helpers/cli.ts";
import { realisticEdit } from "../../test/helpers/realistic-edit.ts";
import { formatTextHunks } from "./create-file-patch.ts";
import { bogoSqrt } from "./myers.ts";

/**
 * The Myers core is git's classic diff: run alone over a file pair, its hunks (function names
 * included) are `git diff --no-index`'s byte for byte, on real code and on inputs made of the
 * frequent lines (`}`, ` *`, blank) that drive xdiff's pre-pass and cost cap.
 */

const tmp = makeTempDir("tw-myers-");
afterAll(() => tmp.cleanup());
const lib = dirname(createRequire(import.meta.url).resolve("typescript"));

function gitHunks(before: Buffer, after: Buffer): string {
  const fa = join(tmp.dir, "a");
  const fb = join(tmp.dir, "b");
  writeFileSync(fa, before);
  writeFileSync(fb, after);
  const r = spawnSync("git", ["diff", "--no-index", "--no-color", fa, fb], {
    encoding: "utf8",
    maxBuffer: 1 << 30,
  });
  expect(r.status).toBe(1);
  return r.stdout.slice(r.stdout.indexOf("\n@@") + 1);
}

const ourHunks = (before: Buffer, after: Buffer) =>
  formatTextHunks(before, after, {
    context: 3,
    maxWork: Number.POSITIVE_INFINITY,
    algorithm: "myers",
  }).hunks;

describe("myers: git's classic diff", () => {
  it("rounds square roots as xdiff does (a power of two)", () => {
    expect([0, 1, 3, 4, 15, 16, 17_210, 35_000].map(bogoSqrt)).toEqual([
      1, 2, 2, 4, 4, 8, 256, 256,
    ]);
  });

  it.each([
    ["lib.es5.d.ts", "every other line"],
    ["lib.es5.d.ts", "every third line a brace"],
    ["lib.es5.d.ts", "realistic"],
    ["lib.es2015.core.d.ts", "every other line"],
  ])(
    "%s, %s: the hunks are git diff's",
    (name, kind) => {
      const before = readFileSync(join(lib, name));
      const lines = before.toString().split("\n");
      const after = Buffer.from(
        kind === "realistic"
          ? realisticEdit(before.toString(), 5)
          : lines
              .map((l, i) =>
                kind === "every other line" ? (i % 2 ? `${l} //x` : l) : i % 3 ? l : "}",
              )
              .join("\n"),
      );
      expect(ourHunks(before, after)).toBe(gitHunks(before, after));
    },
    60_000,
  );

  it("is git's on files of frequent lines, past the cost cap (property)", () => {
    const frequent = ["}", " *", "", "    }", "  return x;", "/**"];
    const line = fc.oneof(
      { weight: 4, arbitrary: fc.constantFrom(...frequent) },
      { weight: 1, arbitrary: fc.nat(400).map((n) => `function f${n}() {`) },
    );
    const file = fc.array(line, { minLength: 0, maxLength: 1500 });
    fc.assert(
      fc.property(file, file, fc.boolean(), (a, b, shareHalf) => {
        // Half the time the new file is an edit of the old, so long equal runs exist.
        const bLines = shareHalf ? [...a.slice(0, a.length >> 1), ...b] : b;
        const before = Buffer.from(a.map((l) => `${l}\n`).join(""));
        const after = Buffer.from(bLines.map((l) => `${l}\n`).join(""));
        if (before.equals(after)) return;
        expect(ourHunks(before, after)).toBe(gitHunks(before, after));
      }),
      { numRuns: 60, seed: 23 },
    );
  }, 180_000);
});
