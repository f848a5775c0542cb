import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { afterAll, afterEach, describe, expect, it, vi } from "vitest";
import { makeTempDir } from "../../test/helpers/cli.ts";
import { gitApply } from "../../test/helpers/git-apply.ts";
import { createFilePatch } from "./create-file-patch.ts";
import { parsePatch } from "./parse-patch.ts";
import { patchStats } from "./patch-stats.ts";

/**
 * The line diff's cap counts work, never time (issue 22): the same input gives the same patch
 * however loaded the machine is, capped or not, and a capped patch is still one that real
 * `git apply` applies exactly.
 */

const tmp = makeTempDir("tw-budget-");
afterAll(() => tmp.cleanup());
afterEach(() => vi.restoreAllMocks());

const file = (n: number, f: (i: number) => string) =>
  Buffer.from(Array.from({ length: n }, (_, i) => `${f(i)}\n`).join(""));

/** Lines from a few frequent values in two unrelated orders: the Myers search's hard case. */
const before = file(4000, (i) => `${((i * 2654435761) >>> 7) % 40}`);
const after = file(4000, (i) => `${((i * 40503 + 17) >>> 3) % 40}`);
const removed = (patch: string) => {
  const p = parsePatch(patch)[0];
  return p === undefined ? 0 : patchStats(p).removed;
};
const diff = (maxWork?: number) =>
  createFilePatch({ oldPath: "f", newPath: "f", before, after, maxWork });

describe("the line diff's work budget", () => {
  it("gives the same patch for the same input, tiny budget or huge, and git applies both", () => {
    const tiny = diff(1000);
    const huge = diff(Number.MAX_SAFE_INTEGER);
    expect(diff(1000)).toBe(tiny);
    expect(diff(Number.MAX_SAFE_INTEGER)).toBe(huge);
    // The tiny budget did cut the search short: every line changed, where the search keeps many.
    expect(removed(tiny)).toBe(4000);
    expect(removed(huge)).toBeLessThan(3600);
    expect(gitApply(tmp.dir, before, tiny).equals(after)).toBe(true);
    expect(gitApply(tmp.dir, before, huge).equals(after)).toBe(true);
  }, 60_000);

  it("never reads the clock: a clock that jumps an hour per read changes nothing", () => {
    const expected = diff();
    let t = 0;
    vi.spyOn(performance, "now").mockImplementation(() => (t += 3_600_000));
    vi.spyOn(Date, "now").mockImplementation(() => (t += 3_600_000));
    expect(diff()).toBe(expected);
    expect(removed(expected)).toBeLessThan(3600);
  }, 60_000);

  it("leaves real code uncut: typescript.js with every other line changed", () => {
    const lib = dirname(createRequire(import.meta.url).resolve("typescript"));
    const ts = readFileSync(join(lib, "typescript.js"));
    const eo = Buffer.from(
      ts
        .toString()
        .split("\n")
        .map((l, i) => (i % 2 ? `${l} //x` : l))
        .join("\n"),
    );
    const byDefault = createFilePatch({ oldPath: "f", newPath: "f", before: ts, after: eo });
    const unbounded = createFilePatch({
      oldPath: "f",
      newPath: "f",
      before: ts,
      after: eo,
      maxWork: Number.MAX_SAFE_INTEGER,
    });
    expect(byDefault.length).toBe(unbounded.length);
    expect(byDefault === unbounded).toBe(true);
    expect(removed(byDefault)).toBeLessThan(ts.toString().split("\n").length / 2 + 1);
  }, 180_000);
});
