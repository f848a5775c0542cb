import { describe, expect, it } from "vitest";
import type { CachedStat, StatCache } from "./stat-cache.ts";
import { diffStatCaches } from "./workspace-scan.ts";

const stat = (oid: string): CachedStat => ({
  size: 1,
  mtimeMs: 5.25,
  ctimeMs: 6.5,
  ino: 7,
  mode: 0o100644,
  oid,
});
const cache = (entries: Record<string, string>, start = 1): StatCache => ({
  scanStartMs: start,
  entries: new Map(Object.entries(entries).map(([k, v]) => [k, stat(v)])),
});

describe("kept workspace view", () => {
  it("diffs two scans into added, removed and modified files, sorted", () => {
    expect(
      diffStatCaches(cache({ a: "1", b: "2", c: "3" }), cache({ a: "1", b: "9", d: "4" })),
    ).toEqual([
      { path: "b", before: "2", after: "9" },
      { path: "c", before: "3", after: null },
      { path: "d", before: null, after: "4" },
    ]);
  });
});
