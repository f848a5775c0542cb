import { createHash } from "node:crypto";
import {
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  openSync,
  readSync,
  type Stats,
} from "node:fs";
import { join } from "node:path";
import { errnoCode } from "../core/index.ts";
import { OBJECT_CHUNK_BYTES, type ObjectStore } from "./object-store.ts";

/** Why a path is not in a snapshot. A snapshot with any skipped path is `partial`. */
export type SkipReason =
  | "special_file"
  | "too_large"
  | "unreadable"
  | "changed_while_reading"
  | "unreadable_directory";

/** A path given as text, or as bytes when its name is not UTF-8. */
export type FsPath = string | Buffer;

type Skip = { skip: SkipReason; detail: string };

const OPEN_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;
const MAX_READ_ATTEMPTS = 3;

function sameStat(a: Stats, b: Stats): boolean {
  return a.size === b.size && a.mtimeMs === b.mtimeMs && a.ctimeMs === b.ctimeMs && a.ino === b.ino;
}

/**
 * Read a file so that what is made of its bytes matches one stat: `attempt` reads from a
 * descriptor opened without following a symlink and returns its result, or undefined when the
 * file changed meanwhile (fstat after differs from the lstat before). It is tried again a few
 * times, then reported — never stored torn. Undefined when the file is gone or no longer a
 * regular file.
 */
function readConsistently<T>(
  path: FsPath,
  first: Stats,
  beforeRead: (() => void) | undefined,
  attempt: (fd: number, before: Stats) => T | undefined,
): T | Skip | undefined {
  let before = first;
  for (let n = 1; ; n++) {
    let fd: number | undefined;
    try {
      beforeRead?.();
      fd = openSync(path, OPEN_FLAGS);
      const got = attempt(fd, before);
      if (got !== undefined) return got;
    } catch (error) {
      const code = errnoCode(error);
      if (code === "ENOENT") return undefined; // deleted during the scan: not part of the workspace
      if (code === "ELOOP") return undefined; // replaced by a symlink: the next scan sees the link
      return { skip: "unreadable", detail: code ?? String(error) };
    } finally {
      if (fd !== undefined) closeSync(fd);
    }
    if (n >= MAX_READ_ATTEMPTS) {
      return {
        skip: "changed_while_reading",
        detail: `changed during each of ${MAX_READ_ATTEMPTS} reads`,
      };
    }
    try {
      before = lstatSync(path);
    } catch (error) {
      if (errnoCode(error) === "ENOENT") return undefined;
      return { skip: "unreadable", detail: errnoCode(error) ?? String(error) };
    }
    if (!before.isFile()) return undefined;
  }
}

/** A file's bytes, matching one stat (see `readConsistently`). */
export function readStable(
  path: FsPath,
  first: Stats,
  beforeRead: (() => void) | undefined,
): { bytes: Buffer; stat: Stats } | Skip | undefined {
  return readConsistently(path, first, beforeRead, (fd, before) => {
    const size = before.size;
    const bytes = Buffer.allocUnsafe(size);
    let off = 0;
    while (off < size) {
      const n = readSync(fd, bytes, off, size - off, off);
      if (n === 0) break;
      off += n;
    }
    const after = fstatSync(fd);
    return off === size && sameStat(after, before) ? { bytes, stat: after } : undefined;
  });
}

/**
 * `readStable` for a large file: hashed in chunks (git's blob header, then the bytes), never
 * held whole, then copied into `store` (when given and it lacks the object) by a second pass that
 * hashes again; a file that changes between or during the passes is read again, a few times,
 * then reported. A sparse file costs its chunk buffer, not its size, in memory; in the store
 * its holes stay holes.
 */
export function hashStable(
  path: FsPath,
  first: Stats,
  beforeRead: (() => void) | undefined,
  store: ObjectStore | undefined,
  /** A buffer to read through, for a caller that hashes many files (fsck): one, not one each. */
  chunk: Buffer = Buffer.allocUnsafe(OBJECT_CHUNK_BYTES),
): { oid: string; stat: Stats; written: boolean } | Skip | undefined {
  return readConsistently(path, first, beforeRead, (fd, before) => {
    const size = before.size;
    const hash = createHash("sha1").update(`blob ${size}\0`);
    let off = 0;
    while (off < size) {
      const n = readSync(fd, chunk, 0, Math.min(chunk.length, size - off), off);
      if (n === 0) break;
      hash.update(chunk.subarray(0, n));
      off += n;
    }
    const after = fstatSync(fd);
    if (off !== size || !sameStat(after, before)) return undefined;
    const oid = hash.digest("hex");
    const stored = store === undefined ? "present" : store.writeFromFile(oid, path, size);
    return stored === "changed" ? undefined : { oid, stat: after, written: stored === "written" };
  });
}

/**
 * One file read the way a scan reads it: not through a symlink (O_NOFOLLOW), and with bytes
 * that match a single stat (re-read when it changes meanwhile). Null when it is gone or not a
 * regular file; `skip` when it cannot be read stably.
 */
export function readFileStable(path: string): { bytes: Buffer; stat: Stats } | Skip | null {
  let st: Stats;
  try {
    st = lstatSync(path);
  } catch (error) {
    const code = errnoCode(error);
    if (code === "ENOENT" || code === "ENOTDIR") return null;
    return { skip: "unreadable", detail: code ?? String(error) };
  }
  if (!st.isFile()) return null;
  return readStable(path, st, undefined) ?? null;
}

/**
 * Is every ancestor of `path` (workspace-relative, below `root`) a real directory, not a symlink?
 * What a read of one path checks first, so that it never follows a link out of the workspace.
 * `memo` holds the answers per directory for one scan or verify.
 */
export function parentsAreDirs(root: string, path: string, memo: Map<string, boolean>): boolean {
  const slash = path.lastIndexOf("/");
  if (slash < 0) return true;
  const parent = path.slice(0, slash);
  const known = memo.get(parent);
  if (known !== undefined) return known;
  let ok = false;
  try {
    ok = lstatSync(join(root, parent)).isDirectory() && parentsAreDirs(root, parent, memo);
  } catch {
    ok = false;
  }
  memo.set(parent, ok);
  return ok;
}
