import type { StatCache } from "../store/index.ts";

/**
 * The hooks keep their own stat cache (`.timewarp/hooks/stat-cache.bin`, the store's format:
 * `loadStatCache`/`writeStatCache`): the stat data and content id of every file as the last hook
 * scan saw it. It doubles as the baseline a shell command is diffed against — only regular files
 * matter for the ledger, and this is exactly them. Kept apart from the snapshots' cache so a hook
 * scan never changes what the next snapshot re-reads.
 */

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
