import { type Dirent, lstatSync, readdirSync, type Stats } from "node:fs";
import { errnoCode } from "../core/index.ts";
import { createExcludeMatcher } from "./excludes.ts";
import { scanScope } from "./scan-workspace.ts";
import type { StatCache } from "./stat-cache.ts";
import { StatTable } from "./stat-cache-table.ts";

/**
 * The paths where the workspace at `root` may no longer be what a scan with `excludes` found
 * (`scan`: that scan's stat cache and index, kept in memory), by a walk that reads no file:
 * what the watch daemon's journal says after a mark, for a workspace without a daemon. A file
 * counts as unchanged only when its lstat (size, mtime, ctime, inode, mode, and the root's
 * device) is what the scan recorded and its mtime is older than the scan's start (git's racy
 * rule: a file written in the scan's own clock tick could have changed after it was read);
 * everything else is listed: a file that differs, is racy, has other hard links or is new; a
 * directory that is new or whose mode changed; every symlink (its target is read again); every
 * path the scan found that the walk does not (gone, or no longer reachable); anything else the
 * walk meets that the scan did not skip. What the scan skipped is not listed (the verify
 * compares it as the scan left it). Undefined when only a whole verify can tell: the cache is
 * not a complete index of this scope in columns, a name is not plain UTF-8, or an entry or a
 * directory cannot be read.
 */
export function changedSinceScan(
  root: string,
  scan: StatCache,
  excludes: readonly string[],
): string[] | undefined {
  const index = scan.index;
  const files = scan.entries;
  if (index === undefined || index.scope !== scanScope(excludes)) return undefined;
  if (!(files instanceof StatTable)) return undefined;
  const skipped = new Set<string>();
  for (const s of index.skipped) {
    if (s.path_b64 !== undefined) return undefined;
    skipped.add(s.path);
  }
  const others = new Map<string, number>();
  for (let i = 0; i < index.others.length; i++) {
    const e = index.others[i]!;
    if (e.path_b64 !== undefined) return undefined;
    others.set(e.path, i);
  }
  const seenFile = new Uint8Array(files.rows);
  const seenOther = new Uint8Array(index.others.length);
  const excluded = createExcludeMatcher(excludes);
  const changed: string[] = [];
  let rootDev: number;
  try {
    rootDev = lstatSync(root).dev;
  } catch {
    return undefined;
  }

  /** Is `st` the file the scan recorded at `row`, and was it not racy then? */
  const vouched = (row: number, st: Stats): boolean =>
    st.nlink === 1 &&
    st.dev === rootDev &&
    files.statMatches(row, st) &&
    files.mtimeAt(row) < scan.scanStartMs;

  const stack: string[] = [""];
  while (stack.length > 0) {
    const dir = stack.pop()!;
    let names: Dirent[];
    try {
      names = readdirSync(dir === "" ? root : `${root}/${dir}`, { withFileTypes: true });
    } catch (error) {
      const code = errnoCode(error);
      // Gone or replaced since it was listed: what the scan found below it is missing below.
      if (dir !== "" && (code === "ENOENT" || code === "ENOTDIR")) continue;
      return undefined;
    }
    for (const d of names) {
      const name = d.name;
      if (name.includes("\uFFFD")) return undefined;
      if (dir === "" && name === ".timewarp") continue;
      const rel = dir === "" ? name : `${dir}/${name}`;
      if (excluded(rel, name, d.isDirectory())) continue;
      if (skipped.has(rel)) {
        // Compared as the scan left it, whatever is there now (an unreadable directory is in
        // `others` too: it is not gone).
        const at = others.get(rel);
        if (at !== undefined) seenOther[at] = 1;
        continue;
      }
      let st: Stats;
      try {
        st = lstatSync(`${root}/${rel}`);
      } catch (error) {
        const code = errnoCode(error);
        if (code === "ENOENT" || code === "ENOTDIR") continue;
        return undefined;
      }
      const isDir = st.isDirectory();
      if (isDir && !d.isDirectory() && excluded(rel, name, true)) continue;
      // Whatever the scan found here is accounted for: listed below if it is not the same.
      const row = files.rowOf(rel);
      if (row >= 0) seenFile[row] = 1;
      const at = others.get(rel);
      if (at !== undefined) seenOther[at] = 1;
      let same: boolean;
      if (isDir) {
        const was = at === undefined ? undefined : index.others[at];
        same = was?.type === "dir" && was.mode === (st.mode & 0o7777);
        stack.push(rel);
      } else if (st.isFile()) same = row >= 0 && vouched(row, st);
      else same = false;
      if (!same) changed.push(rel);
    }
  }
  for (let row = 0; row < seenFile.length; row++) {
    if (seenFile[row] === 1 || !files.isLive(row)) continue;
    const key = files.keyAt(row);
    if (key.charCodeAt(0) === 0) return undefined;
    changed.push(key);
  }
  for (let i = 0; i < seenOther.length; i++) {
    if (seenOther[i] === 0) changed.push(index.others[i]!.path);
  }
  return changed;
}
