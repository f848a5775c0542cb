import { createHash } from "node:crypto";
import {
  closeSync,
  constants,
  type Dirent,
  fstatSync,
  lstatSync,
  openSync,
  readdirSync,
  readlinkSync,
  readSync,
  type Stats,
  statSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { ErrorCode, errnoCode, fromSystemError, gitBlobId, TimewarpError } from "../core/index.ts";
import { decodeName } from "./entry-path.ts";
import { createExcludeMatcher } from "./excludes.ts";
import {
  MANIFEST_SCHEMA_VERSION,
  type Manifest,
  type ManifestEntry,
  sortEntries,
} from "./manifest.ts";
import { LARGE_OBJECT_BYTES, OBJECT_CHUNK_BYTES, type ObjectStore } from "./object-store.ts";
import { type CachedStat, emptyStatCache, type ScanIndex, type StatCache } from "./stat-cache.ts";
import { type WatchedChanges, watchedChanges } from "./watch.ts";

/** Why a path is not in a snapshot. A snapshot with any skipped path is `partial`. */
export type SkipReason =
  | "special_file"
  | "too_large"
  | "unreadable"
  | "changed_while_reading"
  | "unreadable_directory";

export interface SkippedPath {
  path: string;
  path_b64?: string;
  reason: SkipReason;
  detail: string;
}

export interface ScanOptions {
  /** gitignore-syntax excludes (`effectiveExcludes(config)`); `.timewarp/` is always out regardless. */
  excludes: readonly string[];
  /** A file larger than this whose content is not already known from the stat cache is skipped. */
  maxFileBytes?: number;
  /** The previous scan's cache; a hit means the file is not read again. */
  statCache?: StatCache;
  /** Where new file contents are written. Without a store, files are only hashed. */
  store?: ObjectStore;
  /**
   * A directory where a marker file may be written to read the file system's own clock at scan
   * start (for the racy rule). Without it, the wall clock minus a safety margin is used.
   */
  clockDir?: string;
  /** Called every few hundred entries. */
  onProgress?: (progress: { entries: number; rehashed: number }) => void;
  /** Test hook: runs before each file read (may throw an errno error, or change the file). */
  beforeRead?: (relPath: string) => void;
  /**
   * Workspace-relative paths that may have changed since the scan that built `statCache`, as a
   * file watcher reported them (`watch.ts`). When given and the cache holds a complete index
   * of the same scope (`scanScope`), only these paths (whole subtrees for directories), the
   * cache's racy files and its skipped paths are looked at; everything else carries over from
   * the index. Without it, or when the index cannot vouch for the rest, the tree is walked.
   */
  changed?: readonly string[];
  /**
   * Ask the workspace's watch daemon (`watch.ts`) for `changed`, when one runs and `changed` is
   * not given; the answer's token is kept in the result's cache. Only for `root` being the
   * workspace the daemon watches. Off when the environment says `TIMEWARP_WATCH=0`.
   */
  useWatcher?: boolean;
  /** The daemon's answer when the caller already asked (instead of asking again). */
  watched?: WatchedChanges;
  /**
   * Paths a restore or verify must leave alone (what the record it works from did not capture):
   * not read, not entered; each one present is reported in `skipped` as given. Forces a walk.
   */
  leaveAlone?: readonly SkippedPath[];
}

/** What a scan found: the manifest, what it skipped and why, counts, and the new stat cache. */
export interface ScanResult {
  manifest: Manifest;
  skipped: SkippedPath[];
  files: number;
  dirs: number;
  symlinks: number;
  /** Total bytes of the files in the manifest. */
  bytes: number;
  /** Files read and hashed this time (stat cache misses). */
  rehashed: number;
  /** Objects newly written to the store. */
  objects_written: number;
  statCache: StatCache;
  /** True when only the watcher's changed paths were looked at (no walk of the tree). */
  incremental: boolean;
  /**
   * True when an incremental scan found the index exactly as it was: the manifest is the one
   * the index describes (`statCache.index.manifest`, when a snapshot recorded it).
   */
  unchanged: boolean;
  /** With `useWatcher`: how many paths the daemon reported, or why it could not tell. */
  watch?: { changed: number } | { reason: string };
  /**
   * The daemon reported nothing, or the cache's watch token did not move: a cache on disk that
   * held `statCache` needs no rewrite for the token's sake (an older token only makes the next
   * answer longer).
   */
  watchQuiet: boolean;
}

const OPEN_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;
const MAX_READ_ATTEMPTS = 3;
/**
 * Without a marker file, the wall clock stands in for the file-system clock; timestamps can lag
 * it by a coarse-clock tick (Linux) or be truncated to 1–2 s (FAT, HFS+), hence the margin.
 */
const WALL_CLOCK_MARGIN_MS = 2000;

type FsPath = string | Buffer;

function childPath(parent: FsPath, name: Buffer, text: string, exact: boolean): FsPath {
  if (typeof parent === "string" && exact) return `${parent}/${text}`;
  const p = typeof parent === "string" ? Buffer.from(parent, "utf8") : parent;
  return Buffer.concat([p, Buffer.from("/"), name]);
}

function fsClockMs(clockDir: string | undefined): number {
  if (clockDir !== undefined) {
    try {
      const marker = join(clockDir, "scan-clock");
      writeFileSync(marker, `${process.pid} ${Date.now()}\n`);
      return lstatSync(marker).mtimeMs;
    } catch {
      // fall through to the wall clock
    }
  }
  return Date.now() - WALL_CLOCK_MARGIN_MS;
}

type ReadOutcome = { bytes: Buffer; stat: Stats } | { skip: SkipReason; detail: string };

/**
 * Read a file so that its bytes match one stat: lstat before, fstat on the same descriptor after;
 * any difference (size, mtime, ctime, inode) means it changed while being read, and it is read
 * again (a few times) and otherwise reported — never stored torn.
 */
function readStable(
  path: FsPath,
  first: Stats,
  rel: string,
  beforeRead: ((relPath: string) => void) | undefined,
): ReadOutcome | undefined {
  let before = first;
  for (let attempt = 1; ; attempt++) {
    let fd: number | undefined;
    try {
      beforeRead?.(rel);
      fd = openSync(path, OPEN_FLAGS);
      const size = before.size;
      const bytes = Buffer.allocUnsafe(size);
      let off = 0;
      while (off < size) {
        const n = readSync(fd, bytes, off, size - off, off);
        if (n === 0) break;
        off += n;
      }
      const after = fstatSync(fd);
      if (
        off === size &&
        after.size === before.size &&
        after.mtimeMs === before.mtimeMs &&
        after.ctimeMs === before.ctimeMs &&
        after.ino === before.ino
      ) {
        return { bytes, stat: after };
      }
    } catch (error) {
      const code = errnoCode(error);
      if (code === "ENOENT") return undefined; // deleted during the scan: not part of the workspace
      if (code === "ELOOP") return undefined; // replaced by a symlink: the next scan sees the link
      return { skip: "unreadable", detail: code ?? String(error) };
    } finally {
      if (fd !== undefined) closeSync(fd);
    }
    if (attempt >= MAX_READ_ATTEMPTS) {
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

type HashOutcome = { oid: string; stat: Stats } | { skip: SkipReason; detail: string };

/**
 * `readStable` for a large file: hashed in chunks (git's blob header, then the bytes), never
 * held whole, then copied into `store` (when given and it lacks the object) by a second pass that
 * hashes again; a file that changes between or during the passes is read again, a few times,
 * then reported. A sparse file costs its chunk buffer, not its size, in memory; in the store
 * its holes stay holes.
 */
function hashStable(
  path: FsPath,
  first: Stats,
  rel: string,
  beforeRead: ((relPath: string) => void) | undefined,
  store: ObjectStore | undefined,
): (HashOutcome & { written?: boolean }) | undefined {
  let before = first;
  const chunk = Buffer.allocUnsafe(OBJECT_CHUNK_BYTES);
  for (let attempt = 1; ; attempt++) {
    let fd: number | undefined;
    try {
      beforeRead?.(rel);
      fd = openSync(path, OPEN_FLAGS);
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
      closeSync(fd);
      fd = undefined;
      if (
        off === size &&
        after.size === before.size &&
        after.mtimeMs === before.mtimeMs &&
        after.ctimeMs === before.ctimeMs &&
        after.ino === before.ino
      ) {
        const oid = hash.digest("hex");
        const stored = store === undefined ? "present" : store.writeFromFile(oid, path, size);
        if (stored !== "changed") return { oid, stat: after, written: stored === "written" };
      }
    } catch (error) {
      const code = errnoCode(error);
      if (code === "ENOENT") return undefined;
      if (code === "ELOOP") return undefined;
      return { skip: "unreadable", detail: code ?? String(error) };
    } finally {
      if (fd !== undefined) closeSync(fd);
    }
    if (attempt >= MAX_READ_ATTEMPTS) {
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

/**
 * One file read the way a scan reads it: not through a symlink (O_NOFOLLOW), and with bytes
 * that match a single stat (re-read when it changes meanwhile). Null when it is gone or not a
 * regular file; `skip` when it cannot be read stably.
 */
export function readFileStable(
  path: string,
): { bytes: Buffer; stat: Stats } | { skip: SkipReason; detail: string } | null {
  let st: Stats;
  try {
    st = lstatSync(path);
  } catch (error) {
    const code = errnoCode(error);
    if (code === "ENOENT" || code === "ENOTDIR") return null;
    return { skip: "unreadable", detail: code ?? String(error) };
  }
  if (!st.isFile()) return null;
  return readStable(path, st, path, undefined) ?? null;
}

function pushSkip(
  skipped: SkippedPath[],
  path: string,
  raw: Buffer | undefined,
  reason: SkipReason,
  detail: string,
): void {
  skipped.push(
    raw === undefined
      ? { path, reason, detail }
      : { path, path_b64: raw.toString("base64"), reason, detail },
  );
}

/** A manifest entry; `path_b64` only for names that are not UTF-8 (no spread on the hot path). */
function entryOf(
  path: string,
  raw: Buffer | undefined,
  rest: Omit<ManifestEntry, "path" | "path_b64">,
): ManifestEntry {
  if (raw === undefined) return { path, ...rest };
  return { path, path_b64: raw.toString("base64"), ...rest };
}

function specialKind(d: Stats): string {
  if (d.isFIFO()) return "fifo";
  if (d.isSocket()) return "socket";
  if (d.isCharacterDevice()) return "character device";
  if (d.isBlockDevice()) return "block device";
  return "unknown type";
}

/**
 * The scope a stat cache's index is valid for: the excludes of the scan that built it (a scan
 * with other excludes cannot update that index from a change list). The size cap is not part
 * of it: it only decides about files a scan reads, and skipped paths are always revisited.
 */
export function scanScope(excludes: readonly string[]): string {
  return JSON.stringify(excludes);
}

/** Is `path` one of `roots` or below one? */
function isCovered(roots: ReadonlySet<string>, path: string): boolean {
  let q = path;
  for (;;) {
    if (roots.has(q)) return true;
    const slash = q.lastIndexOf("/");
    if (slash < 0) return false;
    q = q.slice(0, slash);
  }
}

/**
 * The paths an incremental scan must look at again: the watcher's changes, the index's racy
 * files (modified at or after its scan began) and the paths it skipped (a full walk would try
 * them again too). Undefined when the index cannot be updated this way: the root itself
 * changed, or a name is not UTF-8 (those take the byte-exact walk).
 */
function pathsToRevisit(cache: StatCache, changed: readonly string[]): Set<string> | undefined {
  const index = cache.index;
  if (index === undefined) return undefined;
  const racy: string[] = [];
  for (const [key, c] of cache.entries) {
    // A byte name, or a name holding U+FFFD (its directory is not watched): walk.
    if (key.charCodeAt(0) === 0 || key.includes("\uFFFD")) return undefined;
    if (c.mtimeMs >= cache.scanStartMs) racy.push(key);
  }
  return revisitRoots(index, changed, racy);
}

/**
 * `pathsToRevisit` given the index's racy files (the delta path has them stored): the changed
 * paths, those racy files, the skipped paths and the files with other hard links. Undefined
 * when the root changed or a path of the index is not plain UTF-8.
 */
export function revisitRoots(
  index: ScanIndex,
  changed: readonly string[],
  racy: Iterable<string>,
): Set<string> | undefined {
  const roots = new Set<string>();
  for (const raw of changed) {
    const p = raw.endsWith("/") ? raw.slice(0, -1) : raw;
    if (p === "" || p.includes("\uFFFD")) return undefined;
    if (p === ".timewarp" || p.startsWith(".timewarp/")) continue;
    roots.add(p);
  }
  for (const key of racy) roots.add(key);
  // Files with other hard links: a write through a link outside a watched directory is not
  // reported for this name, so they are looked at every time.
  for (const p of index.linked ?? []) roots.add(p);
  for (const e of index.others) {
    if (e.path_b64 !== undefined || e.path.includes("\uFFFD")) return undefined;
  }
  for (const s of index.skipped) {
    if (s.path_b64 !== undefined) return undefined;
    roots.add(s.path);
  }
  return roots;
}

/**
 * Record hard links: the files of one inode (two or more in the scan, same content) point by
 * `link` to the first of them in manifest order (`link_b64` too when that name is not UTF-8),
 * which a restore writes and links the others to.
 */
function markHardLinks(links: { entry: ManifestEntry; id: string }[]): void {
  if (links.length < 2) return;
  const groups = new Map<string, ManifestEntry[]>();
  for (const { entry, id } of links) {
    const g = groups.get(id);
    if (g === undefined) groups.set(id, [entry]);
    else g.push(entry);
  }
  for (const g of groups.values()) {
    if (g.length < 2) continue;
    const first = g[0] as ManifestEntry;
    // A file written between two of its names' reads: no group (each keeps its own content).
    if (g.some((e) => e.oid !== first.oid)) continue;
    sortEntries(g);
    const leader = g[0] as ManifestEntry;
    for (let i = 1; i < g.length; i++) {
      const e = g[i] as ManifestEntry;
      e.link = leader.path;
      if (leader.path_b64 !== undefined) e.link_b64 = leader.path_b64;
    }
  }
}

/**
 * Walk the workspace at `root`: every non-excluded file, symlink (stored as a link, never
 * followed) and directory (empty ones included), with its mode and content id. Files whose stat
 * data matches `statCache` (and are not racy) are not read; the others are read once, hashed
 * with one SHA-1, and written to `store` when absent. FIFOs, sockets and devices, unreadable
 * files and new files over `maxFileBytes` are skipped and listed in `skipped`. With `changed`
 * (a watcher's report) and a complete index in `statCache`, only the changed paths are visited
 * and the result is the same as the walk's.
 *
 * Throws NOT_A_DIRECTORY when `root` is not a directory.
 */
export function scanWorkspace(root: string, options: ScanOptions): ScanResult {
  let why: string | undefined;
  try {
    if (!statSync(root).isDirectory()) why = "not a directory";
  } catch (error) {
    why = errnoCode(error) ?? "not a directory";
  }
  if (why !== undefined) {
    throw new TimewarpError(
      ErrorCode.NOT_A_DIRECTORY,
      `workspace root ${root} is not a directory (${why})`,
      { data: { path: root } },
    );
  }
  const excluded = createExcludeMatcher(options.excludes);
  const maxBytes = options.maxFileBytes ?? Number.POSITIVE_INFINITY;
  const scope = scanScope(options.excludes);
  const oldCache = options.statCache ?? emptyStatCache();
  let changed = options.changed;
  let watchToken: string | undefined;
  let watch: ScanResult["watch"];
  if (changed === undefined && (options.watched !== undefined || options.useWatcher === true)) {
    if (options.watched === undefined && process.env.TIMEWARP_WATCH === "0") {
      watch = { reason: "TIMEWARP_WATCH=0" };
    } else {
      const answer = options.watched ?? watchedChanges(root, oldCache.watchToken, scope);
      changed = answer.changed;
      watchToken = answer.token;
      watch = changed !== undefined ? { changed: changed.length } : { reason: answer.reason ?? "" };
    }
  }
  const leave = new Map<string, SkippedPath>();
  for (const s of options.leaveAlone ?? []) leave.set(s.path, s);
  const revisit =
    changed !== undefined && oldCache.index?.scope === scope && leave.size === 0
      ? pathsToRevisit(oldCache, changed)
      : undefined;
  const scanStartMs = fsClockMs(options.clockDir);
  const newCache: StatCache = { scanStartMs, entries: new Map() };
  const store = options.store;
  const entries: ManifestEntry[] = [];
  const others: ManifestEntry[] = [];
  const skipped: SkippedPath[] = [];
  const linked: string[] = [];
  /** Files with other hard links, by device and inode: grouped into `link` fields at the end. */
  const links: { entry: ManifestEntry; id: string }[] = [];
  let files = 0;
  let dirs = 0;
  let symlinks = 0;
  let bytes = 0;
  let rehashed = 0;
  let objectsWritten = 0;
  let seen = 0;

  // Directories still to read: fs path, relative path, and raw relative bytes when not UTF-8.
  const stack: { fs: FsPath; rel: string; raw: Buffer | undefined }[] = [];

  /** Look at one path (found in a directory, or reported changed) and record what it is. */
  const visit = (
    fsPath: FsPath,
    rel: string,
    raw: Buffer | undefined,
    text: string,
    isDir: boolean,
  ): void => {
    if (excluded(rel, text, isDir)) return;
    if (++seen % 500 === 0) options.onProgress?.({ entries: seen, rehashed });
    let st: Stats;
    try {
      st = lstatSync(fsPath);
    } catch (error) {
      const code = errnoCode(error);
      if (code === "ENOENT" || code === "ENOTDIR") return;
      pushSkip(skipped, rel, raw, "unreadable", code ?? String(error));
      return;
    }
    const left = leave.size === 0 ? undefined : leave.get(rel);
    if (left !== undefined) {
      skipped.push(left);
      return;
    }
    const mode = st.mode & 0o7777;
    const mtime_ms = st.mtimeMs;
    if (st.isDirectory()) {
      // A directory that matched no dir-only pattern as a file type hint may still match now.
      if (!isDir && excluded(rel, text, true)) return;
      dirs++;
      const entry = entryOf(rel, raw, { type: "dir", mode, size: 0, mtime_ms });
      entries.push(entry);
      others.push(entry);
      stack.push({ fs: fsPath, rel, raw });
    } else if (st.isSymbolicLink()) {
      let target: Buffer;
      try {
        target = readlinkSync(fsPath, { encoding: "buffer" });
      } catch (error) {
        const code = errnoCode(error);
        if (code === "ENOENT" || code === "EINVAL") return;
        pushSkip(skipped, rel, raw, "unreadable", code ?? String(error));
        return;
      }
      const t = decodeName(target);
      symlinks++;
      const entry = entryOf(rel, raw, {
        type: "symlink",
        mode,
        size: target.length,
        mtime_ms,
        oid: gitBlobId(target),
        ...(t.exact ? { target: t.text } : { target_b64: target.toString("base64") }),
      });
      entries.push(entry);
      others.push(entry);
    } else if (st.isFile()) {
      const key = raw === undefined ? rel : `\0b64:${raw.toString("base64")}`;
      if (st.nlink > 1 && raw === undefined) linked.push(rel);
      const cached = oldCache.entries.get(key);
      if (
        cached !== undefined &&
        cached.size === st.size &&
        cached.mtimeMs === st.mtimeMs &&
        cached.ctimeMs === st.ctimeMs &&
        cached.ino === st.ino &&
        cached.mode === st.mode &&
        st.mtimeMs < oldCache.scanStartMs
      ) {
        // Fast path: nothing to read, the cache entry carries over as it is.
        newCache.entries.set(key, cached);
        files++;
        bytes += cached.size;
        const hit = entryOf(rel, raw, {
          type: "file",
          mode,
          size: cached.size,
          mtime_ms,
          oid: cached.oid,
        });
        entries.push(hit);
        // A hard link is one whatever its name's bytes (a cache hit must group as a miss does).
        if (st.nlink > 1) links.push({ entry: hit, id: `${st.dev}:${st.ino}` });
        return;
      }
      if (st.size > maxBytes) {
        pushSkip(skipped, rel, raw, "too_large", `${st.size} bytes > max_file_bytes ${maxBytes}`);
        return;
      }
      let stat: Stats;
      let oid: string;
      if (st.size > LARGE_OBJECT_BYTES) {
        const hashed = hashStable(fsPath, st, rel, options.beforeRead, store);
        if (hashed === undefined) return;
        if ("skip" in hashed) {
          pushSkip(skipped, rel, raw, hashed.skip, hashed.detail);
          return;
        }
        if (hashed.written === true) objectsWritten++;
        stat = hashed.stat;
        oid = hashed.oid;
      } else {
        const got = readStable(fsPath, st, rel, options.beforeRead);
        if (got === undefined) return;
        if ("skip" in got) {
          pushSkip(skipped, rel, raw, got.skip, got.detail);
          return;
        }
        stat = got.stat;
        oid = createHash("sha1")
          .update(`blob ${got.bytes.length}\0`)
          .update(got.bytes)
          .digest("hex");
        if (store?.writeKnown(oid, got.bytes)) objectsWritten++;
      }
      rehashed++;
      const size = stat.size;
      const entry: CachedStat = {
        size,
        mtimeMs: stat.mtimeMs,
        ctimeMs: stat.ctimeMs,
        ino: stat.ino,
        mode: stat.mode,
        oid,
      };
      newCache.entries.set(key, entry);
      files++;
      bytes += size;
      const made = entryOf(rel, raw, {
        type: "file",
        mode: stat.mode & 0o7777,
        size,
        mtime_ms: stat.mtimeMs,
        oid,
      });
      entries.push(made);
      if (stat.nlink > 1) links.push({ entry: made, id: `${stat.dev}:${stat.ino}` });
    } else {
      pushSkip(skipped, rel, raw, "special_file", specialKind(st));
    }
  };

  const walk = (): void => {
    while (stack.length > 0) {
      const dir = stack.pop()!;
      // Names are read as strings (the fast path); only a directory holding a name that did not
      // decode (U+FFFD), or below such a name, is read again as bytes.
      let dirents: (Dirent<string> | Dirent<Buffer>)[];
      try {
        dirents =
          dir.raw === undefined && typeof dir.fs === "string"
            ? readdirSync(dir.fs, { withFileTypes: true })
            : readdirSync(dir.fs, { withFileTypes: true, encoding: "buffer" });
        if (dirents.some((d) => typeof d.name === "string" && d.name.includes("\uFFFD"))) {
          dirents = readdirSync(dir.fs, { withFileTypes: true, encoding: "buffer" });
        }
      } catch (error) {
        if (dir.rel === "") throw fromSystemError(error, `reading workspace root ${root}`);
        const code = errnoCode(error);
        if (code === "ENOENT" || code === "ENOTDIR") continue; // vanished or replaced mid-scan
        skipped.push({
          path: dir.rel,
          ...(dir.raw === undefined ? {} : { path_b64: dir.raw.toString("base64") }),
          reason: "unreadable_directory",
          detail: code ?? String(error),
        });
        continue;
      }
      for (const d of dirents) {
        let text: string;
        let raw: Buffer | undefined;
        let fsPath: FsPath;
        if (typeof d.name === "string") {
          text = d.name;
          fsPath = `${dir.fs as string}/${text}`;
        } else {
          const decoded = decodeName(d.name);
          text = decoded.text;
          if (!decoded.exact || dir.raw !== undefined) {
            const parentRaw = dir.raw ?? Buffer.from(dir.rel, "utf8");
            raw = dir.rel === "" ? d.name : Buffer.concat([parentRaw, Buffer.from("/"), d.name]);
          }
          fsPath = childPath(dir.fs, d.name, text, decoded.exact);
        }
        if (dir.rel === "" && text === ".timewarp") continue;
        visit(fsPath, dir.rel === "" ? text : `${dir.rel}/${text}`, raw, text, d.isDirectory());
      }
    }
  };

  let unchanged = false;
  if (revisit === undefined) {
    stack.push({ fs: root, rel: "", raw: undefined });
    walk();
  } else {
    unchanged = updateFromIndex(revisit);
  }

  /**
   * Carry over every index entry outside the paths to revisit, refresh the directories those
   * paths sit in (their mtime moved), then visit each path (walking it when it is a directory).
   */
  function updateFromIndex(roots: Set<string>): boolean {
    const index = oldCache.index!;
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
    for (const e of index.others) {
      // Parents come before their children in `others` (both walks push a directory first).
      const slash = e.path.lastIndexOf("/");
      if (
        (roots.size > 0 && isCovered(roots, e.path)) ||
        (slash >= 0 && !liveDirs.has(e.path.slice(0, slash)))
      ) {
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
        dirs++;
      } else {
        symlinks++;
      }
      entries.push(kept);
      others.push(kept);
    }
    for (const [key, c] of oldCache.entries) {
      const slash = key.lastIndexOf("/");
      if (
        (roots.size > 0 && isCovered(roots, key)) ||
        (slash >= 0 && !liveDirs.has(key.slice(0, slash)))
      ) {
        dropped++;
        continue;
      }
      newCache.entries.set(key, c);
      files++;
      bytes += c.size;
      entries.push({
        path: key,
        type: "file",
        mode: c.mode & 0o7777,
        size: c.size,
        mtime_ms: c.mtimeMs,
        oid: c.oid,
      });
    }
    const carried = entries.length;
    for (const r of tops) {
      const slash = r.lastIndexOf("/");
      if (slash >= 0 && !liveDirs.has(r.slice(0, slash))) continue;
      visit(`${root}/${r}`, r, undefined, r.slice(slash + 1), false);
    }
    walk();
    // Nothing dropped, nothing found, no directory moved: the same manifest as the index's.
    return !moved && dropped === 0 && entries.length === carried && skipped.length === 0;
  }

  options.onProgress?.({ entries: seen, rehashed });
  markHardLinks(links);
  newCache.index = { scope, others, skipped, ...(linked.length > 0 ? { linked } : {}) };
  const knownManifest = oldCache.index?.manifest;
  if (unchanged && knownManifest !== undefined) newCache.index.manifest = knownManifest;
  if (watchToken !== undefined) newCache.watchToken = watchToken;
  return {
    manifest: { schema_version: MANIFEST_SCHEMA_VERSION, entries: sortEntries(entries) },
    skipped,
    files,
    dirs,
    symlinks,
    bytes,
    rehashed,
    objects_written: objectsWritten,
    statCache: newCache,
    incremental: revisit !== undefined,
    unchanged,
    watchQuiet:
      newCache.watchToken === oldCache.watchToken ||
      (watch !== undefined && "changed" in watch && watch.changed === 0),
    ...(watch === undefined ? {} : { watch }),
  };
}
