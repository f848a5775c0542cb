import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { CachedStat } from "./stat-cache.ts";
import { StatTable, tableWithChanges } from "./stat-cache-table.ts";

const key = fc.constantFrom("a", "a/b", "a/b/c", "b", "ab", "a-b", "é", "日本", "\0b64:/w==", "z");
const stat = fc.record({
  size: fc.nat(),
  mtimeMs: fc.double({ min: 0, max: 2e12, noNaN: true }),
  ctimeMs: fc.double({ min: 0, max: 2e12, noNaN: true }),
  ino: fc.nat({ max: 2 ** 40 }),
  mode: fc.nat({ max: 0o177777 }),
  oid: fc.stringMatching(/^[0-9a-f]{40}$/),
});
const op = fc.oneof(
  fc.tuple(fc.constant("set" as const), key, stat),
  fc.tuple(fc.constant("delete" as const), key, fc.constant(null)),
);

/** What a map holds, in key order, to compare a table with it. */
const sorted = (m: Iterable<[string, CachedStat]>) =>
  [...m].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));

describe("StatTable", () => {
  it("answers as a Map given the same sets and deletes, in any order", () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 40 }), (ops) => {
        const table = new StatTable(2);
        const map = new Map<string, CachedStat>();
        for (const [what, k, c] of ops) {
          if (what === "set") {
            table.set(k, c as CachedStat);
            map.set(k, c as CachedStat);
          } else expect(table.delete(k)).toBe(map.delete(k));
          expect(table.size).toBe(map.size);
        }
        for (const k of ["a", "a/b", "b", "é", "\0b64:/w==", "zz"]) {
          expect(table.get(k)).toEqual(map.get(k));
          expect(table.has(k)).toBe(map.has(k));
        }
        expect(sorted(table)).toEqual(sorted(map));
        const rows = [...table.sortedRows()].map((r) => table.keyAt(r));
        expect(rows).toEqual(sorted(map).map(([k]) => k));
      }),
    );
  });

  it("applies changes as a Map would, in key order", () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(key, stat), { maxLength: 12 }),
        fc.array(fc.tuple(key, fc.option(stat)), { maxLength: 12 }),
        (base, changes) => {
          const map = new Map(base);
          const change = new Map(changes);
          const table = tableWithChanges(map, change);
          for (const [k, c] of change) {
            if (c === null) map.delete(k);
            else map.set(k, c);
          }
          expect([...table]).toEqual(sorted(map));
          // A table in key order finds its keys by search, and takes changes on top again.
          for (const [k, c] of map) expect(table.get(k)).toEqual(c);
          expect([...tableWithChanges(table, new Map())]).toEqual(sorted(map));
        },
      ),
    );
  });
});
