import { spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { createFilePatch } from "../src/diff/index.ts";
import { makeTempDir } from "./helpers/cli.ts";
import { gitApply } from "./helpers/git-apply.ts";
import { realisticEdit } from "./helpers/realistic-edit.ts";

/**
 * Issue 22 item 3: on real code our hunks are git's (`git diff --no-index --histogram`, with
 * its default indent heuristic), and every patch we make is applied by real `git apply`
 * exactly. The files are TypeScript's own, from node_modules. Where every common line of a region
 * is frequent, git falls back to its classic Myers, and so do we (`myers.ts`).
 */

const lib = dirname(createRequire(import.meta.url).resolve("typescript"));
const real = (name: string) => readFileSync(join(lib, name));
const tmp = makeTempDir("tw-hist-");
afterAll(() => tmp.cleanup());

/** git's patch body from the first `@@` (function names after `@@ … @@` included). */
function gitBody(before: Buffer, after: Buffer, algorithm: string[]): string {
  const fa = join(tmp.dir, "a");
  const fb = join(tmp.dir, "b");
  writeFileSync(fa, before);
  writeFileSync(fb, after);
  const r = spawnSync("git", ["diff", "--no-index", "--no-color", ...algorithm, fa, fb], {
    encoding: "utf8",
    maxBuffer: 1 << 30,
  });
  expect(r.status).toBe(1);
  return r.stdout.slice(r.stdout.indexOf("\n@@") + 1);
}

const ourBody = (p: string) => p.slice(p.indexOf("\n@@") + 1);

describe("line diff against real git on real code", () => {
  it.each([
    ["lib.es5.d.ts", 1],
    ["lib.es5.d.ts", 2],
    ["lib.es2015.core.d.ts", 3],
    ["lib.dom.d.ts", 4],
  ])(
    "%s, realistic edits (seed %i): the hunks are git --histogram's",
    (name, seed) => {
      const before = real(name);
      const after = Buffer.from(realisticEdit(before.toString(), seed));
      const ours = createFilePatch({ oldPath: "f", newPath: "f", before, after });
      expect(ourBody(ours)).toBe(gitBody(before, after, ["--histogram"]));
      expect(gitApply(tmp.dir, before, ours).equals(after)).toBe(true);
    },
    60_000,
  );

  it("every other line changed: no larger than git's patch, and git applies it", () => {
    const before = real("lib.es5.d.ts");
    const text = before.toString().split("\n");
    const after = Buffer.from(text.map((l, i) => (i % 2 ? `${l} //x` : l)).join("\n"));
    const ours = createFilePatch({ oldPath: "f", newPath: "f", before, after });
    const git = gitBody(before, after, []);
    expect(ourBody(ours).length).toBeLessThanOrEqual(git.length);
    expect(gitApply(tmp.dir, before, ours).equals(after)).toBe(true);
  }, 60_000);

  it("git apply applies every patch exactly, and it is git's (property over edits of a real file)", () => {
    const base = real("lib.es2015.collection.d.ts").toString().split("\n");
    const pool = [...base.slice(0, 40), "}", "", " *", "    }", "new line"];
    const edit = fc.record({
      kind: fc.constantFrom("delete", "insert", "replace"),
      pos: fc.nat(),
      len: fc.integer({ min: 1, max: 6 }),
      lines: fc.array(fc.constantFrom(...pool), { minLength: 1, maxLength: 6 }),
    });
    fc.assert(
      fc.property(fc.array(edit, { minLength: 1, maxLength: 8 }), (edits) => {
        const lines = [...base];
        for (const e of edits) {
          const p = e.pos % (lines.length + 1);
          if (e.kind === "delete") lines.splice(p, e.len);
          else if (e.kind === "insert") lines.splice(p, 0, ...e.lines);
          else lines.splice(p, e.len, ...e.lines);
        }
        const before = Buffer.from(base.join("\n"));
        const after = Buffer.from(lines.join("\n"));
        const patch = createFilePatch({ oldPath: "f", newPath: "f", before, after });
        if (patch === "") return;
        expect(gitApply(tmp.dir, before, patch).equals(after)).toBe(true);
        expect(ourBody(patch)).toBe(gitBody(before, after, ["--histogram"]));
      }),
      { numRuns: 40, seed: 22 },
    );
  }, 120_000);

  it("on files of frequent lines the hunks are git --histogram's, and git applies them (property)", () => {
    // More than 64 copies of `}`, ` *` and blank lines: regions go to the Myers fallback.
    const frequent = ["}", " *", "", "    }", "  return x;"];
    const line = fc.oneof(
      { weight: 5, arbitrary: fc.constantFrom(...frequent) },
      { weight: 1, arbitrary: fc.nat(300).map((n) => `function f${n}() {`) },
    );
    const edit = fc.record({
      pos: fc.nat(),
      del: fc.nat(40),
      ins: fc.array(line, { maxLength: 40 }),
    });
    const input = fc.record({
      base: fc.array(line, { minLength: 200, maxLength: 1200 }),
      edits: fc.array(edit, { minLength: 1, maxLength: 12 }),
    });
    fc.assert(
      fc.property(input, ({ base, edits }) => {
        const lines = [...base];
        for (const e of edits) lines.splice(e.pos % (lines.length + 1), e.del, ...e.ins);
        const before = Buffer.from(base.map((l) => `${l}\n`).join(""));
        const after = Buffer.from(lines.map((l) => `${l}\n`).join(""));
        const patch = createFilePatch({ oldPath: "f", newPath: "f", before, after });
        if (patch === "") return;
        expect(ourBody(patch)).toBe(gitBody(before, after, ["--histogram"]));
        expect(gitApply(tmp.dir, before, patch).equals(after)).toBe(true);
      }),
      { numRuns: 40, seed: 23 },
    );
  }, 180_000);
});
