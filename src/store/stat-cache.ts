import { readFileSync } from "node:fs";
import { writeFileAtomic } from "../core/index.ts";

/** What the last scan saw of one file, and the content id it hashed to. */
export interface CachedStat {
  size: number;
  /**
   * Node's `mtimeMs`/`ctimeMs` doubles: sub-microsecond resolution (2^-12 ms at today's dates).
   * Cheaper than bigint nanoseconds at 100k files, and exact enough with the racy rule: a write
   * after a scan began lands on a later double than that scan's start, so it cannot hide.
   */
  mtimeMs: number;
  ctimeMs: number;
  ino: number;
  mode: number;
  oid: string;
}

/**
 * The stat cache: per file the stat data of the last scan and its content id, so the next scan
 * re-reads only what changed (git's index idea). `scanStartMs` is the file-system time at which
 * that scan began: an entry whose mtime is not older than it is "racy" and always re-read.
 */
export interface StatCache {
  scanStartMs: number;
  entries: Map<string, CachedStat>;
}

export function emptyStatCache(): StatCache {
  return { scanStartMs: 0, entries: new Map() };
}

/**
 * Read `.timewarp/stat-cache.json`. A missing, torn or foreign cache is an empty cache: the
 * only cost of losing it is one full re-hash, so it never fails a snapshot.
 */
export function readStatCache(path: string): StatCache {
  let doc: unknown;
  try {
    doc = JSON.parse(readFileSync(path, "utf8"));
  } catch {
    return emptyStatCache();
  }
  if (typeof doc !== "object" || doc === null) return emptyStatCache();
  const { schema_version, scan_start_ms, entries } = doc as Record<string, unknown>;
  if (schema_version !== 2 || typeof scan_start_ms !== "number" || !Array.isArray(entries))
    return emptyStatCache();
  const map = new Map<string, CachedStat>();
  for (const row of entries) {
    if (!Array.isArray(row) || row.length !== 7) return emptyStatCache();
    const [key, size, mtimeMs, ctimeMs, ino, mode, oid] = row;
    if (
      typeof key !== "string" ||
      typeof size !== "number" ||
      typeof mtimeMs !== "number" ||
      typeof ctimeMs !== "number" ||
      typeof ino !== "number" ||
      typeof mode !== "number" ||
      typeof oid !== "string"
    )
      return emptyStatCache();
    map.set(key, { size, mtimeMs, ctimeMs, ino, mode, oid });
  }
  return { scanStartMs: scan_start_ms, entries: map };
}

/** Write the cache atomically. Not fsynced: a cache lost to a power cut only costs a re-hash. */
export function writeStatCache(path: string, cache: StatCache): void {
  const rows: string[] = [];
  for (const [key, c] of cache.entries) {
    rows.push(
      `[${JSON.stringify(key)},${c.size},${c.mtimeMs},${c.ctimeMs},${c.ino},${c.mode},"${c.oid}"]`,
    );
  }
  writeFileAtomic(
    path,
    `{"schema_version":2,"scan_start_ms":${cache.scanStartMs},"entries":[\n${rows.join(",\n")}\n]}\n`,
    { durable: false },
  );
}

/** Drop the entries whose content id is in `oids` (after gc removed those objects). */
export function pruneStatCache(path: string, oids: ReadonlySet<string>): number {
  const cache = readStatCache(path);
  let dropped = 0;
  for (const [key, c] of cache.entries) {
    if (oids.has(c.oid)) {
      cache.entries.delete(key);
      dropped++;
    }
  }
  if (dropped > 0) writeStatCache(path, cache);
  return dropped;
}
