import { readFileSync } from "node:fs";
import { writeFileAtomic } from "../core/index.ts";
import type { CachedStat, StatCache } from "../store/index.ts";

/**
 * The hooks' own stat cache (`.timewarp/hooks/stat-cache.json`): the stat data and content id
 * of every file as the last hook scan saw it. It doubles as the baseline a shell command is
 * diffed against — only regular files matter for the ledger, and this is exactly them. Kept apart
 * from the snapshots' cache so a hook scan never changes what the next snapshot re-reads.
 * Returns null when absent or unreadable (a lost cache costs one full re-hash, nothing else).
 */
export function readHookStatCache(path: string): StatCache | null {
  let doc: unknown;
  try {
    doc = JSON.parse(readFileSync(path, "utf8"));
  } catch {
    return null;
  }
  if (typeof doc !== "object" || doc === null) return null;
  const { schema_version, scan_start_ms, entries } = doc as Record<string, unknown>;
  if (schema_version !== 2 || typeof scan_start_ms !== "number" || !Array.isArray(entries))
    return null;
  const map = new Map<string, CachedStat>();
  for (const row of entries) {
    if (!Array.isArray(row) || row.length !== 7) return null;
    const [key, size, mtimeMs, ctimeMs, ino, mode, oid] = row as unknown[];
    if (
      typeof key !== "string" ||
      typeof size !== "number" ||
      typeof mtimeMs !== "number" ||
      typeof ctimeMs !== "number" ||
      typeof ino !== "number" ||
      typeof mode !== "number" ||
      typeof oid !== "string"
    )
      return null;
    map.set(key, { size, mtimeMs, ctimeMs, ino, mode, oid });
  }
  return { scanStartMs: scan_start_ms, entries: map };
}

/** Write the cache atomically, without fsync (losing it only costs a re-hash). */
export function writeHookStatCache(path: string, cache: StatCache): void {
  const rows: string[] = [];
  for (const [key, c] of cache.entries)
    rows.push(JSON.stringify([key, c.size, c.mtimeMs, c.ctimeMs, c.ino, c.mode, c.oid]));
  writeFileAtomic(
    path,
    `{"schema_version":2,"scan_start_ms":${JSON.stringify(cache.scanStartMs)},"entries":[\n${rows.join(",\n")}\n]}\n`,
    { durable: false },
  );
}

/** A file whose content id differs between two caches; null oid: absent on that side. */
export interface CachedChange {
  path: string;
  before: string | null;
  after: string | null;
}

/** The files added, removed or modified from cache `a` to cache `b`, sorted by path. Pure. */
export function diffStatCaches(a: StatCache, b: StatCache): CachedChange[] {
  const out: CachedChange[] = [];
  for (const [path, now] of b.entries) {
    const then = a.entries.get(path);
    if (then === undefined) out.push({ path, before: null, after: now.oid });
    else if (then.oid !== now.oid) out.push({ path, before: then.oid, after: now.oid });
  }
  for (const [path, then] of a.entries)
    if (!b.entries.has(path)) out.push({ path, before: then.oid, after: null });
  return out.sort((x, y) => (x.path < y.path ? -1 : x.path > y.path ? 1 : 0));
}
