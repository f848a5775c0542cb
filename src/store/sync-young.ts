import { readdirSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { errnoCode, fromSystemError, gitBlobId, isTempName } from "../core/index.ts";
import { writePack } from "./object-packs.ts";

/**
 * How far back a travel's backup looks for store files the kernel may still hold dirty: Linux
 * writes dirty pages back once they are 30 s old (`dirty_expire_centisecs`), by a flusher that
 * wakes every 5 s; 60 s leaves room for a loaded disk.
 */
const YOUNG_STORE_FILE_MS = 60_000;

/** A loose object's path: `<fan-out>/<38 hex>` under the objects directory. */
const LOOSE = /[\\/]([0-9a-f]{2})[\\/]([0-9a-f]{38})$/;
const FAN_OUT = /[\\/][0-9a-f]{2}$/;
/**
 * Young loose objects up to this size are copied into one synced pack; larger ones are synced
 * where they lie. A copy costs its bytes again until gc (on a nearly full disk it can turn a
 * travel into DISK_FULL at its backup), a sync costs a disk flush per file: the copy pays only
 * for small files, where the flushes dominate.
 */
const COPY_MAX_BYTES = 256 * 1024;

/**
 * The files under `dir` (recursively, temp files aside) whose inode changed at or after `since`
 * (ms since the epoch, the file system's clock), and the directories that gained or lost an
 * entry since then (which a rename into it does). A directory not changed since `since` has no
 * younger entry (every store file is renamed into place), so it is not listed: at 10k files the
 * store's 256 fan-out directories cost one stat each. A directory gone meanwhile is skipped.
 */
function changedSince(
  dir: string,
  since: number,
  out: { files: { path: string; size: number }[]; dirs: string[] },
): void {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch (error) {
    if (errnoCode(error) === "ENOENT") return;
    throw fromSystemError(error, `listing ${dir}`);
  }
  for (const name of names) {
    if (isTempName(name)) continue;
    const path = join(dir, name);
    const st = statSync(path, { throwIfNoEntry: false });
    if (st === undefined || st.ctimeMs < since) continue;
    if (st.isDirectory()) changedSince(path, since, out);
    else if (st.isFile()) out.files.push({ path, size: st.size });
  }
  const self = statSync(dir, { throwIfNoEntry: false });
  if (self !== undefined && self.mtimeMs >= since) out.dirs.push(dir);
}

/** What a travel's backup must sync of the store before its restore (`fsyncAll`). */
export interface YoungStoreFiles {
  /** Files renamed in during the window (some may be removed before they are synced). */
  files: string[];
  /** The directories that gained them. */
  dirs: string[];
  /** Call once they are synced: the next sweep starts from this one's beginning. */
  done(): void;
}

/**
 * What changed under `dirs` since `since` (see `changedSince`) that a travel's backup must make
 * durable: the objects and manifest nodes it names that it or an earlier command wrote seconds
 * ago (its own packs, the edit tools' images, a turn checkpoint, the hooks' scan, the watch
 * prime) are not fsynced, like all of a snapshot's; after the restore the workspace no longer
 * holds them. Listed, not synced: the caller syncs them all at once with its record.
 *
 * Young loose objects of `objectsDir` are not listed one by one: their bytes (checked against
 * their ids) are copied into one new pack, which is listed with its directory, so a store that
 * took 200 loose objects in the last minute costs one fsync, not 200 and their fan-out
 * directories' (a duplicate of a loose object is harmless; gc keeps one). Other files (packs,
 * node packs, a large object) are listed each, and the directories that gained them.
 */
function listChangedSince(
  dirs: readonly string[],
  since: number,
  objectsDir?: string,
): { files: string[]; dirs: string[] } {
  const found = { files: [] as { path: string; size: number }[], dirs: [] as string[] };
  for (const dir of dirs) changedSince(dir, since, found);
  const copies = new Map<string, Uint8Array>();
  const copied = new Set<string>();
  const files: string[] = [];
  for (const { path, size } of found.files) {
    const loose = objectsDir !== undefined && path.startsWith(objectsDir) ? LOOSE.exec(path) : null;
    if (loose !== null && size <= COPY_MAX_BYTES) {
      const oid = `${loose[1]}${loose[2]}`;
      let bytes: Buffer | undefined;
      try {
        bytes = readFileSync(path);
      } catch (error) {
        if (errnoCode(error) === "ENOENT") continue; // removed meanwhile: nothing to keep
        throw fromSystemError(error, `reading ${path}`);
      }
      if (gitBlobId(bytes) === oid) {
        copies.set(oid, bytes);
        copied.add(path);
        continue;
      }
    }
    files.push(path);
  }
  const out = { files, dirs: [] as string[] };
  if (objectsDir !== undefined && copies.size > 0) {
    const pack = writePack(objectsDir, copies);
    out.files.push(pack.file);
    out.dirs.push(dirname(pack.file));
  }
  // A fan-out directory whose young entries all went into the pack needs no sync of its own.
  const needed = new Set<string>();
  for (const { path } of found.files) if (!copied.has(path)) needed.add(dirname(path));
  for (const dir of found.dirs) {
    const fanOut = objectsDir !== undefined && dirname(dir) === objectsDir && FAN_OUT.test(dir);
    if ((!fanOut || needed.has(dir)) && !out.dirs.includes(dir)) out.dirs.push(dir);
  }
  return out;
}

/**
 * `listChangedSince` over `dirs` for the files changed in the last `YOUNG_STORE_FILE_MS`, or
 * since the last such sweep began when that is later: `marker`'s modification time is that
 * moment, by the file system's own clock (the one that stamps the store's files: no slack for
 * its coarse ticks). It is made before the sweep under another name and renamed in by `done`,
 * after the caller synced what the sweep listed, not synced itself. Everything renamed in
 * before it was synced by that sweep or was old enough then, so a travel after a travel does
 * not sync the same files again. A marker lost, or ahead of the clock (set back), only widens
 * the sweep to the whole window. `objectsDir`: whose young loose objects are copied into one
 * pack instead of listed one by one.
 */
export function youngStoreFiles(
  dirs: readonly string[],
  marker: string,
  objectsDir?: string,
): YoungStoreFiles {
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
  return {
    ...listChangedSince(dirs, since, objectsDir),
    done: () => {
      if (!began) return;
      try {
        renameSync(next, marker);
      } catch {
        // as above
      }
    },
  };
}
