import { isUtf8 } from "node:buffer";
import { randomBytes } from "node:crypto";
import {
  chmodSync,
  closeSync,
  constants,
  existsSync,
  fchmodSync,
  fstatSync,
  fsyncSync,
  ftruncateSync,
  linkSync,
  lstatSync,
  mkdirSync,
  openSync,
  renameSync,
  rmdirSync,
  symlinkSync,
  unlinkSync,
  writeSync,
} from "node:fs";
import { ErrorCode, errnoCode, TimewarpError } from "./errors.ts";
import { DATA_DIR } from "./paths.ts";

/**
 * The one home of the rule "never write outside the workspace" (issue 16 §2). Every write,
 * delete, mkdir, rmdir, chmod and symlink a restore, an edit, a patch, a revert or an export makes
 * in a workspace (or an export target) goes through the `safe*` functions below, which check the
 * path at the moment of the write:
 *
 * - lexically: relative, `/`-separated, no empty, `.` or `..` segment, no NUL, not inside
 *   `.timewarp/` (`unsafeRelPathReason`);
 * - on disk: every parent component, from the root down, is a real directory, never a symlink.
 *
 * On Linux the parents are opened one by one with `O_PATH | sys().directory | sys().nofollow`, each
 * relative to the one above through `/proc/self/fd/<fd>/` (Node has no `openat`), and the
 * syscall names its file relative to the last of them: a parent swapped for a symlink after the
 * check cannot redirect the write, there is no window. Elsewhere each parent is lstat-ed right
 * before the syscall (a window of microseconds remains).
 *
 * Failures of the check are UNSAFE_PATH; the syscalls' own failures (ENOENT, EEXIST, ENOTEMPTY,
 * EISDIR, ENOSPC, …) are rethrown as Node system errors so callers keep branching on errno.
 * Paths may be strings or exact bytes (a `Uint8Array`, for names that are not UTF-8).
 */

/** A workspace-relative path: `/`-separated text, or its exact bytes. */
export type WorkspaceRelPath = string | Uint8Array;

type Segment = string | Buffer;

/** Linux's O_PATH (not in `fs.constants`): a handle for path walking that needs no read right. */
const O_PATH = 0o10000000;

// Looked up on first use, not at load: this module must cost nothing to the processes that
// import core without writing (the hook client's bundle keeps only what it calls).
let flags: { nofollow: number; directory: number; procFd: boolean } | undefined;
function sys(): { nofollow: number; directory: number; procFd: boolean } {
  flags ??= {
    nofollow: constants.O_NOFOLLOW ?? 0,
    directory: constants.O_DIRECTORY ?? 0,
    procFd: process.platform === "linux" && existsSync("/proc/self/fd"),
  };
  return flags;
}

/** Why `rel` is not a plain relative path a write may use, or null when it is. */
export function unsafeRelPathReason(rel: WorkspaceRelPath): string | null {
  const text = typeof rel === "string" ? rel : Buffer.from(rel).toString("latin1");
  if (text.length === 0) return "empty path";
  if (text.charCodeAt(0) === 0x2f) return "absolute path";
  if (text.includes("\0")) return "contains NUL";
  let start = 0;
  for (;;) {
    const slash = text.indexOf("/", start);
    const end = slash < 0 ? text.length : slash;
    const len = end - start;
    if (len === 0) return "empty segment";
    if (len <= 2 && text.charCodeAt(start) === 0x2e) {
      if (len === 1) return "'.' segment";
      if (text.charCodeAt(start + 1) === 0x2e) return "'..' segment";
    }
    if (start === 0 && end === DATA_DIR.length && text.startsWith(DATA_DIR))
      return `inside ${DATA_DIR}/`;
    if (slash < 0) return null;
    start = slash + 1;
  }
}

/** The display form of a path for messages. */
export function showRelPath(rel: WorkspaceRelPath): string {
  return typeof rel === "string" ? rel : Buffer.from(rel).toString("utf8");
}

/** Throws UNSAFE_PATH unless `rel` is a plain relative path (see `unsafeRelPathReason`). */
export function assertSafeRelPath(rel: WorkspaceRelPath, what = "path"): void {
  const why = unsafeRelPathReason(rel);
  if (why !== null) {
    const shown = showRelPath(rel);
    throw new TimewarpError(
      ErrorCode.UNSAFE_PATH,
      `${what} ${JSON.stringify(shown)} is unsafe: ${why}`,
      { data: { path: shown, reason: why } },
    );
  }
}

/** A lone low surrogate U+DC80–U+DCFF: one byte of a name that is not UTF-8 (see `pathTextOf`). */
const ESCAPED_BYTE = /(?<![\uD800-\uDBFF])[\uDC80-\uDCFF]/;

/**
 * A path's bytes as text that keeps them all: valid UTF-8 decodes as usual, each other byte `b`
 * becomes the lone surrogate U+DC00+b (Python's "surrogateescape", PEP 383). Ledger records and
 * plans hold such text; `pathBytesOf` gives the exact bytes back (issue 16 §7: a name with bytes
 * \377\376 was written as U+FFFD).
 */
export function pathTextOf(bytes: Uint8Array): string {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (isUtf8(buf)) return buf.toString("utf8");
  let out = "";
  let i = 0;
  while (i < buf.length) {
    const b = buf[i] as number;
    const n =
      b < 0x80
        ? 1
        : b >= 0xc2 && b < 0xe0
          ? 2
          : b >= 0xe0 && b < 0xf0
            ? 3
            : b >= 0xf0 && b < 0xf5
              ? 4
              : 0;
    if (n > 0 && i + n <= buf.length && isUtf8(buf.subarray(i, i + n))) {
      out += buf.toString("utf8", i, i + n);
      i += n;
    } else {
      out += String.fromCharCode(0xdc00 + b);
      i++;
    }
  }
  return out;
}

/** The exact bytes of a path held as text by `pathTextOf`. */
export function pathBytesOf(text: string): Buffer {
  if (!ESCAPED_BYTE.test(text)) return Buffer.from(text, "utf8");
  const parts: Buffer[] = [];
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    const prev = i > 0 ? text.charCodeAt(i - 1) : 0;
    if (c >= 0xdc80 && c <= 0xdcff && !(prev >= 0xd800 && prev <= 0xdbff)) {
      parts.push(Buffer.from(text.slice(start, i), "utf8"), Buffer.from([c - 0xdc00]));
      start = i + 1;
    }
  }
  parts.push(Buffer.from(text.slice(start), "utf8"));
  return Buffer.concat(parts);
}

/** A path for `node:fs`: the text itself, or its exact bytes when it holds escaped bytes. */
export function toFsPath(text: string): string | Buffer {
  return ESCAPED_BYTE.test(text) ? pathBytesOf(text) : text;
}

function segmentsOf(relIn: WorkspaceRelPath): Segment[] {
  const rel = typeof relIn === "string" ? toFsPath(relIn) : relIn;
  if (typeof rel === "string") return rel.split("/");
  const bytes = Buffer.from(rel.buffer, rel.byteOffset, rel.byteLength);
  const out: Segment[] = [];
  let start = 0;
  for (let i = 0; i <= bytes.length; i++) {
    if (i === bytes.length || bytes[i] === 0x2f) {
      out.push(bytes.subarray(start, i));
      start = i + 1;
    }
  }
  return out;
}

function join(base: string | Buffer, seg: Segment): string | Buffer {
  return typeof base === "string" && typeof seg === "string"
    ? `${base}/${seg}`
    : Buffer.concat([Buffer.from(base), Buffer.from("/"), Buffer.from(seg)]);
}

function segText(seg: Segment): string {
  return typeof seg === "string" ? seg : seg.toString("utf8");
}

function unsafeParent(rel: WorkspaceRelPath, parent: string, what: string): TimewarpError {
  const shown = showRelPath(rel);
  return new TimewarpError(
    ErrorCode.UNSAFE_PATH,
    `refusing to touch ${JSON.stringify(shown)}: ${JSON.stringify(parent)} on disk is ${what}`,
    { data: { path: shown, reason: `parent is ${what}`, parent } },
  );
}

/**
 * The directory that holds `rel`'s last segment, checked: on Linux an `O_PATH` descriptor whose
 * `/proc/self/fd/<fd>` names it; elsewhere its plain path. `create` makes missing parents
 * (mode 0o755 before the umask), each checked as it is made.
 */
interface Parent {
  /** The path of a child of the directory (for a syscall). */
  child(seg: Segment): string | Buffer;
  /** The directory itself (for fsync). */
  self: string | Buffer;
  close(): void;
}

function openParent(root: string, rel: WorkspaceRelPath, create: boolean): Parent {
  assertSafeRelPath(rel);
  const segs = segmentsOf(rel);
  const parents = segs.slice(0, -1);
  if (!sys().procFd) {
    let dir: string | Buffer = root;
    for (let i = 0; i < parents.length; i++) {
      const p = join(dir, parents[i] as Segment);
      let st: ReturnType<typeof lstatSync>;
      try {
        st = lstatSync(p);
      } catch (error) {
        if (errnoCode(error) !== "ENOENT" || !create) throw error;
        mkdirOk(p);
        st = lstatSync(p);
      }
      if (st.isSymbolicLink())
        throw unsafeParent(
          rel,
          parents
            .slice(0, i + 1)
            .map(segText)
            .join("/"),
          "a symlink",
        );
      if (!st.isDirectory()) throw notADirectory(p);
      dir = p;
    }
    const at = dir;
    return { child: (seg) => join(at, seg), self: at, close: () => {} };
  }
  let fd = openSync(root, O_PATH | sys().directory);
  try {
    for (let i = 0; i < parents.length; i++) {
      const seg = parents[i] as Segment;
      const p = join(`/proc/self/fd/${fd}`, seg);
      let next: number;
      try {
        next = openSync(p, O_PATH | sys().directory | sys().nofollow);
      } catch (error) {
        const code = errnoCode(error);
        const shown = parents
          .slice(0, i + 1)
          .map(segText)
          .join("/");
        if (code === "ENOENT" && create) {
          mkdirOk(p);
          next = openSync(p, O_PATH | sys().directory | sys().nofollow);
        } else if (code === "ENOTDIR" || code === "ELOOP") {
          if (lstatSync(p).isSymbolicLink()) throw unsafeParent(rel, shown, "a symlink");
          throw error;
        } else throw error;
      }
      closeSync(fd);
      fd = next;
    }
  } catch (error) {
    closeSync(fd);
    throw error;
  }
  const dirFd = fd;
  return {
    child: (seg) => join(`/proc/self/fd/${dirFd}`, seg),
    self: `/proc/self/fd/${dirFd}`,
    close: () => closeSync(dirFd),
  };
}

function mkdirOk(p: string | Buffer): void {
  try {
    mkdirSync(p, { mode: 0o755 });
  } catch (error) {
    if (errnoCode(error) !== "EEXIST") throw error;
  }
}

function notADirectory(p: string | Buffer): Error {
  return Object.assign(new Error(`ENOTDIR: not a directory, '${p.toString()}'`), {
    code: "ENOTDIR",
  });
}

function lastOf(rel: WorkspaceRelPath): Segment {
  const segs = segmentsOf(rel);
  return segs[segs.length - 1] as Segment;
}

function withParent<T>(
  root: string,
  rel: WorkspaceRelPath,
  create: boolean,
  run: (at: Parent, name: Segment) => T,
): T {
  const parent = openParent(root, rel, create);
  try {
    return run(parent, lastOf(rel));
  } finally {
    parent.close();
  }
}

/** Open a file that must not exist yet (never through a symlink), private until its mode is set. */
function openNew(path: string | Buffer): number {
  return openSync(
    path,
    constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | sys().nofollow,
    0o600,
  );
}

/** After a failed write: close the descriptor if still open, remove the temp file if it was made. */
function abandonTemp(fd: number | undefined, created: boolean, temp: string | Buffer): void {
  if (fd !== undefined) closeSync(fd);
  if (created) unlinkQuietly(temp);
}

function unlinkQuietly(path: string | Buffer): void {
  try {
    unlinkSync(path);
  } catch {
    // never made, or renamed already
  }
}

/** `make` a temp entry, then rename it over `dest`; on failure, no temp entry is left. */
function renameIntoPlace(temp: string | Buffer, dest: string | Buffer, make: () => void): void {
  try {
    make();
    renameSync(temp, dest);
  } catch (error) {
    unlinkQuietly(temp);
    throw error;
  }
}

function tempName(name: Segment): Segment {
  const mark = `.tw-tmp-${process.pid}-${randomBytes(4).toString("hex")}`;
  // A long name plus the mark could pass NAME_MAX; the temp name need not contain it whole.
  const base = typeof name === "string" ? Buffer.from(name, "utf8") : name;
  return Buffer.concat([Buffer.from("."), base.subarray(0, 200), Buffer.from(mark)]);
}

function fsyncDir(parent: Parent): void {
  let fd: number | undefined;
  try {
    fd = openSync(parent.self, "r");
    fsyncSync(fd);
  } catch {
    // some file systems refuse fsync on directories; the rename itself is still atomic
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

export interface SafeWriteOptions {
  /** The file's exact mode (fchmod: the umask does not interfere). Default 0o644. */
  mode?: number;
  /**
   * true (default): temp file in the same directory, then rename, so a reader sees the old file
   * or the whole new one. false: unlink, then create, as git's checkout does (a restore, whose
   * transition journal makes it atomic).
   */
  atomic?: boolean;
  /** fsync the file (and, when atomic, its directory). Default: the value of `atomic`. */
  durable?: boolean;
  /** Create missing parent directories (each checked as it is made). Default false. */
  createParents?: boolean;
}

/** Write `bytes` to `root/rel`, through checked parents (see the module comment). */
export function safeWriteFile(
  root: string,
  rel: WorkspaceRelPath,
  bytes: Uint8Array,
  options: SafeWriteOptions = {},
): void {
  const atomic = options.atomic ?? true;
  const durable = options.durable ?? atomic;
  const mode = options.mode ?? 0o644;
  withParent(root, rel, options.createParents === true, (parent, name) => {
    const dest = parent.child(name);
    const path = atomic ? parent.child(tempName(name)) : dest;
    if (!atomic) {
      try {
        unlinkSync(dest);
      } catch (error) {
        if (errnoCode(error) !== "ENOENT") throw error;
      }
    }
    let fd: number | undefined;
    let created = false;
    try {
      fd = openNew(path);
      created = true;
      let off = 0;
      while (off < bytes.length) off += writeSync(fd, bytes, off, bytes.length - off);
      fchmodSync(fd, mode);
      if (durable) fsyncSync(fd);
      closeSync(fd);
      fd = undefined;
      if (atomic) {
        renameSync(path, dest);
        if (durable) fsyncDir(parent);
      }
    } catch (error) {
      abandonTemp(fd, created, path);
      throw error;
    }
  });
}

/** Where `safeWriteFileWith`'s `fill` writes: at positions, so runs of zeros can stay holes. */
export interface FileSink {
  write(bytes: Uint8Array, position: number): void;
  /** Set the file's size (a hole at the end when it grows). */
  truncate(size: number): void;
}

/**
 * Replace `root/rel` by a file that `fill` writes (for content too large
 * to hold: a streamed copy, holes kept): a temp file beside it, fchmod to `mode`, rename over.
 * A `fill` that throws leaves the old file as it was and no temp file.
 */
export function safeWriteFileWith(
  root: string,
  rel: WorkspaceRelPath,
  fill: (out: FileSink) => void,
  options: { mode?: number } = {},
): void {
  withParent(root, rel, false, (parent, name) => {
    const temp = parent.child(tempName(name));
    let fd: number | undefined;
    let created = false;
    try {
      fd = openNew(temp);
      created = true;
      const at = fd;
      fill({
        write(bytes, position) {
          for (let off = 0; off < bytes.length; )
            off += writeSync(at, bytes, off, bytes.length - off, position + off);
        },
        truncate: (size) => ftruncateSync(at, size),
      });
      fchmodSync(fd, options.mode ?? 0o644);
      closeSync(fd);
      fd = undefined;
      renameSync(temp, parent.child(name));
    } catch (error) {
      abandonTemp(fd, created, temp);
      throw error;
    }
  });
}

/**
 * Replace `root/rel` by a hard link of the file `root/from` (temp link, then rename); both
 * paths through checked parents. Errors are the system's (EXDEV, EMLINK…: the caller copies).
 */
export function safeLink(root: string, from: WorkspaceRelPath, rel: WorkspaceRelPath): void {
  withParent(root, from, false, (source, sourceName) =>
    withParent(root, rel, false, (parent, name) => {
      const temp = parent.child(tempName(name));
      renameIntoPlace(temp, parent.child(name), () => linkSync(source.child(sourceName), temp));
    }),
  );
}

/** Replace `root/rel` by a symlink to `target` (temp link, then rename), through checked parents. */
export function safeSymlink(
  root: string,
  rel: WorkspaceRelPath,
  target: string | Uint8Array,
  options: { createParents?: boolean } = {},
): void {
  withParent(root, rel, options.createParents === true, (parent, name) => {
    const temp = parent.child(tempName(name));
    renameIntoPlace(temp, parent.child(name), () =>
      symlinkSync(typeof target === "string" ? target : Buffer.from(target), temp),
    );
  });
}

/** Unlink the file or symlink `root/rel` (a symlink itself, never its target). */
export function safeUnlink(root: string, rel: WorkspaceRelPath): void {
  withParent(root, rel, false, (parent, name) => unlinkSync(parent.child(name)));
}

/** Make the directory `root/rel` (EEXIST when something is there); `parents` makes missing ones. */
export function safeMkdir(
  root: string,
  rel: WorkspaceRelPath,
  options: { mode?: number; parents?: boolean } = {},
): void {
  withParent(root, rel, options.parents === true, (parent, name) =>
    mkdirSync(parent.child(name), { mode: options.mode ?? 0o755 }),
  );
}

/** Remove the empty directory `root/rel` (ENOTEMPTY, ENOTDIR as the system says). */
export function safeRmdir(root: string, rel: WorkspaceRelPath): void {
  withParent(root, rel, false, (parent, name) => rmdirSync(parent.child(name)));
}

/**
 * Set the mode of the file or directory `root/rel`. chmod follows a final symlink, so the entry
 * itself is opened without following (Linux) or lstat-ed first: a symlink is UNSAFE_PATH.
 */
export function safeChmod(root: string, rel: WorkspaceRelPath, mode: number): void {
  withParent(root, rel, false, (parent, name) => {
    const path = parent.child(name);
    if (!sys().procFd) {
      if (lstatSync(path).isSymbolicLink()) throw unsafeParent(rel, showRelPath(rel), "a symlink");
      chmodSync(path, mode);
      return;
    }
    const fd = openSync(path, O_PATH | sys().nofollow);
    try {
      if (fstatSync(fd).isSymbolicLink()) throw unsafeParent(rel, showRelPath(rel), "a symlink");
      chmodSync(`/proc/self/fd/${fd}`, mode);
    } finally {
      closeSync(fd);
    }
  });
}

/**
 * The read-side check: throws UNSAFE_PATH when `rel` is not a plain relative path or a parent
 * of it on disk is a symlink (reading through it would read, then plan a write, outside).
 * Missing parents are fine (nothing to read there).
 */
export function assertSafeToRead(root: string, rel: WorkspaceRelPath): void {
  assertSafeRelPath(rel);
  const segs = segmentsOf(rel);
  let cur: string | Buffer = root;
  for (let i = 0; i < segs.length - 1; i++) {
    cur = join(cur, segs[i] as Segment);
    let st: ReturnType<typeof lstatSync>;
    try {
      st = lstatSync(cur);
    } catch {
      return;
    }
    if (st.isSymbolicLink())
      throw unsafeParent(
        rel,
        segs
          .slice(0, i + 1)
          .map(segText)
          .join("/"),
        "a symlink",
      );
    if (!st.isDirectory()) return;
  }
}
