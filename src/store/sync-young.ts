import { existsSync, readdirSync, renameSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  errnoCode,
  fromSystemError,
  fsyncDirectory,
  fsyncFile,
  isTempName,
} from "../core/index.ts";

/**
 * How far back a travel's backup looks for store files the kernel may still hold dirty: Linux
 * writes dirty pages back once they are 30 s old (`dirty_expire_centisecs`), by a flusher that
 * wakes every 5 s; 60 s leaves room for a loaded disk.
 */
export const YOUNG_STORE_FILE_MS = 60_000;

/**
 * fsync every file under `dir` (recursively, temp files aside) whose inode changed at or after
 * `since` (ms since the epoch, the file system's clock), except those in `skip`, then every
 * directory that gained or lost an entry since then (which a rename into it does), except those
 * in `skip` (already synced after their last rename: still looked into). A directory
 * not changed since `since` has no younger entry (every store file is renamed into place), so
 * it is not listed: at 10k files the store's 256 fan-out directories cost one stat each.
 * Returns the files synced. A directory gone meanwhile is skipped.
 *
 * For a travel's backup: the objects and manifest nodes it names that an earlier command wrote
 * seconds ago (the edit tools' images, a turn checkpoint, the hooks' scan, the watch prime) are
 * not fsynced, like all of a snapshot's; after the restore the workspace no longer holds them.
 */
export function syncChangedSince(
  dir: string,
  since: number,
  skip: ReadonlySet<string> = new Set(),
): number {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch (error) {
    if (errnoCode(error) === "ENOENT") return 0;
    throw fromSystemError(error, `listing ${dir}`);
  }
  let synced = 0;
  for (const name of names) {
    if (isTempName(name)) continue;
    const path = join(dir, name);
    const st = statSync(path, { throwIfNoEntry: false });
    if (st === undefined || st.ctimeMs < since) continue;
    if (st.isDirectory()) {
      synced += syncChangedSince(path, since, skip);
    } else if (st.isFile() && !skip.has(path)) {
      try {
        fsyncFile(path);
      } catch (error) {
        if (existsSync(path)) throw error;
        continue; // removed meanwhile: nothing to keep
      }
      synced++;
    }
  }
  const self = statSync(dir, { throwIfNoEntry: false });
  if (self !== undefined && self.mtimeMs >= since && !skip.has(dir)) fsyncDirectory(dir);
  return synced;
}

/**
 * `syncChangedSince` over `dirs` for the files changed in the last `YOUNG_STORE_FILE_MS`, or
 * since the last such sweep began when that is later: `marker`'s modification time is that
 * moment, by the file system's own clock (the one that stamps the store's files: no slack for
 * its coarse ticks). It is made before the sweep under another name and renamed in after it,
 * not synced. Everything renamed in before it was synced by that sweep or was old enough then,
 * so a travel after a travel does not sync the same files again. A marker lost, or ahead of the
 * clock (set back), only widens the sweep to the whole window.
 */
export function syncYoungStoreFiles(
  dirs: readonly string[],
  marker: string,
  skip: ReadonlySet<string> = new Set(),
): number {
  const now = Date.now();
  let since = now - YOUNG_STORE_FILE_MS;
  const last = statSync(marker, { throwIfNoEntry: false })?.mtimeMs;
  if (last !== undefined && last <= now) since = Math.max(since, last);
  const next = `${marker}.next`;
  let began = true;
  try {
    writeFileSync(next, "");
  } catch {
    began = false; // (no marker then: the next sweep looks at the whole window)
  }
  let synced = 0;
  for (const dir of dirs) synced += syncChangedSince(dir, since, skip);
  if (began) {
    try {
      renameSync(next, marker);
    } catch {
      // as above
    }
  }
  return synced;
}
