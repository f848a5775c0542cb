import { lstatSync } from "node:fs";
import type { ScanFindings, ScanWalker } from "./scan-walker.ts";
import type { CachedStat, ScanIndex } from "./stat-cache.ts";

/** Is `path` one of `roots` or below one? */
function isCovered(roots: ReadonlySet<string>, path: string): boolean {
  // A watcher's few paths: compared as prefixes, with no string made per ancestor (this runs
  // for every directory of the index, 25k at 100k files).
  if (roots.size <= 32) {
    for (const r of roots) {
      if (path.startsWith(r) && (path.length === r.length || path.charCodeAt(r.length) === 47))
        return true;
    }
    return false;
  }
  let q = path;
  for (;;) {
    if (roots.has(q)) return true;
    const slash = q.lastIndexOf("/");
    if (slash < 0) return false;
    q = q.slice(0, slash);
  }
}

export interface IndexUpdate {
  root: string;
  /** The previous scan's index and its files (the stat cache's entries). */
  index: ScanIndex;
  cached: ReadonlyMap<string, CachedStat>;
  /** The paths to look at again (`pathsToRevisit`). */
  roots: Set<string>;
  walker: ScanWalker;
  findings: ScanFindings;
}

/**
 * An incremental scan: carry over every index entry outside the paths to revisit, refresh the
 * directories those paths sit in (their mtime moved), then visit each path (walking it when it
 * is a directory). True when nothing was dropped, found or moved: the manifest is the index's.
 */
export function updateFromIndex(update: IndexUpdate): boolean {
  const { root, index, roots, walker, findings: out } = update;
  let moved = false;
  const parents = new Set<string>();
  const tops: string[] = [];
  for (const r of roots) {
    const slash = r.lastIndexOf("/");
    const parent = slash < 0 ? "" : r.slice(0, slash);
    if (parent !== "" && isCovered(roots, parent)) continue;
    tops.push(r);
    if (parent !== "") parents.add(parent);
  }
  let dropped = 0;
  const liveDirs = new Set<string>();
  const gone = (path: string): boolean => {
    const slash = path.lastIndexOf("/");
    return (
      (roots.size > 0 && isCovered(roots, path)) ||
      (slash >= 0 && !liveDirs.has(path.slice(0, slash)))
    );
  };
  for (const e of index.others) {
    // Parents come before their children in `others` (both walks push a directory first).
    if (gone(e.path)) {
      dropped++;
      continue;
    }
    let kept = e;
    if (e.type === "dir") {
      if (parents.has(e.path)) {
        try {
          const st = lstatSync(`${root}/${e.path}`);
          if (!st.isDirectory()) {
            dropped++; // replaced: its parent's event revisits it
            continue;
          }
          if (st.mtimeMs !== e.mtime_ms || (st.mode & 0o7777) !== e.mode) {
            kept = { ...e, mode: st.mode & 0o7777, mtime_ms: st.mtimeMs };
            moved = true;
          }
        } catch {
          dropped++; // gone: its parent's event revisits it
          continue;
        }
      }
      liveDirs.add(e.path);
      out.dirs++;
    } else {
      out.symlinks++;
    }
    out.entries.push(kept);
    out.others.push(kept);
  }
  for (const [key, c] of update.cached) {
    if (gone(key)) {
      dropped++;
      continue;
    }
    // Its manifest entry is the row itself (`ScanFindings.entries`).
    out.cache.entries.add(key, c, false);
    out.files++;
    out.bytes += c.size;
  }
  const found = () => out.files + out.dirs + out.symlinks;
  const carried = found();
  for (const r of tops) {
    const slash = r.lastIndexOf("/");
    if (slash >= 0 && !liveDirs.has(r.slice(0, slash))) continue;
    walker.visit(`${root}/${r}`, r, undefined, r.slice(slash + 1), false);
  }
  walker.walk();
  // Nothing dropped, nothing found, no directory moved: the same manifest as the index's.
  return !moved && dropped === 0 && found() === carried && out.skipped.length === 0;
}
