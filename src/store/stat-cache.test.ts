import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { makeTempDir } from "../../test/helpers/cli.ts";
import {
  encodeStatCache,
  loadStatCache,
  readStatCache,
  type StatCache,
  writeStatCache,
} from "./stat-cache.ts";

const cache: StatCache = {
  scanStartMs: 1763884800123.4568,
  entries: new Map([
    [
      "src/a b.ts",
      {
        size: 12,
        mtimeMs: 1763884700000.25,
        ctimeMs: 1763884700001.5,
        ino: 2 ** 40 + 3,
        mode: 0o100755,
        oid: "0123456789abcdef0123456789abcdef01234567",
      },
    ],
    [
      "日本/ファイル.txt",
      {
        size: 0,
        mtimeMs: 1,
        ctimeMs: 2,
        ino: 7,
        mode: 0o100644,
        oid: "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391",
      },
    ],
    [
      "\0b64:/w==",
      {
        size: 5,
        mtimeMs: 3,
        ctimeMs: 4,
        ino: 8,
        mode: 0o100600,
        oid: "ffffffffffffffffffffffffffffffffffffffff",
      },
    ],
  ]),
};

describe("stat cache file", () => {
  it("round-trips every field exactly: fractional milliseconds, big inodes, non-ASCII and byte keys", () => {
    const { dir, cleanup } = makeTempDir();
    try {
      const file = join(dir, "stat-cache.bin");
      writeStatCache(file, cache);
      const got = loadStatCache(file);
      // Read back as columns (a StatTable): compared as the map it stands for.
      expect(got === null ? null : { ...got, entries: new Map(got.entries) }).toEqual(cache);
    } finally {
      cleanup();
    }
  });

  it("a file cut at any length, a foreign file or none at all is no cache (never a wrong one)", () => {
    const { dir, cleanup } = makeTempDir();
    try {
      const file = join(dir, "stat-cache.bin");
      const bytes = encodeStatCache(cache);
      for (let cut = 0; cut < bytes.length; cut++) {
        writeFileSync(file, bytes.subarray(0, cut));
        expect(loadStatCache(file), `cut at ${cut}`).toBeNull();
      }
      writeFileSync(file, Buffer.concat([bytes, Buffer.from([0])]));
      expect(loadStatCache(file)).toBeNull();
      writeFileSync(file, '{"schema_version":2,"scan_start_ms":1,"entries":[]}');
      expect(loadStatCache(file)).toBeNull();
      expect(loadStatCache(join(dir, "absent"))).toBeNull();
      expect(readStatCache(join(dir, "absent")).entries.size).toBe(0);
      writeStatCache(file, cache);
      expect(readFileSync(file).equals(bytes)).toBe(true);
    } finally {
      cleanup();
    }
  });
});
