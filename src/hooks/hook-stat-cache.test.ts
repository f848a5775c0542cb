import { describe, expect, it } from "vitest";
import { makeTempDir } from "../../test/helpers/cli.ts";
import type { CachedStat, StatCache } from "../store/index.ts";
import { diffStatCaches, readHookStatCache, writeHookStatCache } from "./hook-stat-cache.ts";

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

describe("hook stat cache", () => {
  it("diffs two scans into added, removed and modified files, sorted", () => {
    expect(
      diffStatCaches(cache({ a: "1", b: "2", c: "3" }), cache({ a: "1", b: "9", d: "4" })),
    ).toEqual([
      { path: "b", before: "2", after: "9" },
      { path: "c", before: "3", after: null },
      { path: "d", before: null, after: "4" },
    ]);
  });

  it("round-trips through its file, fractional milliseconds included; a torn file reads as absent", async () => {
    const { dir, cleanup } = makeTempDir();
    try {
      const file = `${dir}/c.json`;
      const c = cache({ "src/a b.ts": "aa" }, 1763884800123.4568);
      writeHookStatCache(file, c);
      expect(readHookStatCache(file)).toEqual(c);
      const { writeFileSync } = await import("node:fs");
      writeFileSync(file, '{"schema_version":2,"scan_start_ms":1,"entries":[["x"');
      expect(readHookStatCache(file)).toBeNull();
    } finally {
      cleanup();
    }
  });
});
