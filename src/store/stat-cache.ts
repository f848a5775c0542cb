import { readFileSync } from "node:fs";
import { writeFileAtomic } from "../core/index.ts";

/** What the last scan saw of one file, and the content id it hashed to. */
export interface CachedStat {
  size: number;
  mtimeNs: bigint;
  ctimeNs: bigint;
  ino: bigint;
  mode: number;
  oid: string;
}

/**
 * The stat cache: per file the stat data of the last scan and its content id, so the next scan
 * re-reads only what changed (git's index idea). `scanStartNs` is the file-system time at which
 * that scan began: an entry whose mtime is not older than it is "racy" and always re-read.
 */
export interface StatCache {
  scanStartNs: bigint;
  entries: Map<string, CachedStat>;
}

export function emptyStatCache(): StatCache {
  return { scanStartNs: 0n, entries: new Map() };
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
  const { schema_version, scan_start_ns, entries } = doc as Record<string, unknown>;
  if (schema_version !== 1 || typeof scan_start_ns !== "string" || !Array.isArray(entries))
    return emptyStatCache();
  const map = new Map<string, CachedStat>();
  try {
    for (const row of entries) {
      if (!Array.isArray(row) || row.length !== 7) return emptyStatCache();
      const [key, size, mtime, ctime, ino, mode, oid] = row;
      if (
        typeof key !== "string" ||
        typeof size !== "number" ||
        typeof mtime !== "string" ||
        typeof ctime !== "string" ||
        typeof ino !== "string" ||
        typeof mode !== "number" ||
        typeof oid !== "string"
      )
        return emptyStatCache();
      map.set(key, {
        size,
        mtimeNs: BigInt(mtime),
        ctimeNs: BigInt(ctime),
        ino: BigInt(ino),
        mode,
        oid,
      });
    }
    return { scanStartNs: BigInt(scan_start_ns), entries: map };
  } catch {
    return emptyStatCache();
  }
}

/** Write the cache atomically. Not fsynced: a cache lost to a power cut only costs a re-hash. */
export function writeStatCache(path: string, cache: StatCache): void {
  const rows: string[] = [];
  for (const [key, c] of cache.entries) {
    rows.push(
      `[${JSON.stringify(key)},${c.size},"${c.mtimeNs}","${c.ctimeNs}","${c.ino}",${c.mode},"${c.oid}"]`,
    );
  }
  writeFileAtomic(
    path,
    `{"schema_version":1,"scan_start_ns":"${cache.scanStartNs}","entries":[\n${rows.join(",\n")}\n]}\n`,
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
