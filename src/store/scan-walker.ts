import { createHash } from "node:crypto";
import { type Dirent, lstatSync, readdirSync, readlinkSync, type Stats } from "node:fs";
import { errnoCode, fromSystemError, gitBlobId } from "../core/index.ts";
import { decodeName } from "./entry-path.ts";
import type { ManifestEntry } from "./manifest.ts";
import { LARGE_OBJECT_BYTES, type ObjectStore } from "./object-store.ts";
import { type FsPath, hashStable, readStable, type SkipReason } from "./read-stable.ts";
import type { SkippedPath } from "./scan-workspace.ts";
import type { CachedStat, StatCache } from "./stat-cache.ts";
import { StatTable } from "./stat-cache-table.ts";

/** What a scan has found so far; a walk and an update from the index both add to it. */
export interface ScanFindings {
  /**
   * The manifest entries kept as objects: directories, symlinks, and files named by bytes or
   * with other hard links (`markHardLinks` edits those). Every other file's entry is its row of
   * `cache.entries`, a `StatTable` (issue 22, item 5: an object per file cost ~290 bytes more).
   */
  entries: ManifestEntry[];
  /** The directories and symlinks (the index keeps them; files are in the stat cache). */
  others: ManifestEntry[];
  skipped: SkippedPath[];
  /** Files with other hard links (by path), looked at again by every incremental scan. */
  linked: string[];
  /** Files with other hard links, by device and inode: grouped into `link` fields at the end. */
  links: { entry: ManifestEntry; id: string }[];
  /** The new stat cache's entries are added here. */
  cache: StatCache & { entries: StatTable };
  files: number;
  dirs: number;
  symlinks: number;
  bytes: number;
  rehashed: number;
  objectsWritten: number;
  seen: number;
}

export interface ScanWalkerOptions {
  root: string;
  excluded: (rel: string, name: string, isDir: boolean) => boolean;
  maxBytes: number;
  /** The previous scan's cache: a file whose stat matches it is not read. */
  oldCache: StatCache;
  /** Paths not to read or enter, each reported as given. */
  leave: ReadonlyMap<string, SkippedPath>;
  store: ObjectStore | undefined;
  beforeRead: ((relPath: string) => void) | undefined;
  onProgress: ((progress: { entries: number; rehashed: number }) => void) | undefined;
  findings: ScanFindings;
}

/** Visits paths and walks directories, adding what it finds to `findings`. */
export interface ScanWalker {
  /** Look at one path (found in a directory, or reported changed) and record what it is. */
  visit(fsPath: FsPath, rel: string, raw: Buffer | undefined, text: string, isDir: boolean): void;
  /** Walk every directory visited so far (and `root` when `fromRoot`), depth first. */
  walk(fromRoot?: boolean): void;
}

export function newFindings(scanStartMs: number): ScanFindings {
  return {
    entries: [],
    others: [],
    skipped: [],
    linked: [],
    links: [],
    cache: { scanStartMs, entries: new StatTable(1024) },
    files: 0,
    dirs: 0,
    symlinks: 0,
    bytes: 0,
    rehashed: 0,
    objectsWritten: 0,
    seen: 0,
  };
}

function childPath(parent: FsPath, name: Buffer, text: string, exact: boolean): FsPath {
  if (typeof parent === "string" && exact) return `${parent}/${text}`;
  const p = typeof parent === "string" ? Buffer.from(parent, "utf8") : parent;
  return Buffer.concat([p, Buffer.from("/"), name]);
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

/**
 * A number as a small integer when it is one. V8 keeps a number read from a `Stats` object as a
 * heap number, and a field that once held one boxes every later value (16 bytes each); `| 0`
 * stores it in the field itself. At 100k files that was ~8 MB of boxes (issue 22, item 5).
 */
export function small(n: number): number {
  const i = n | 0;
  return i === n ? i : n;
}

/**
 * A file's manifest entry. Built as one literal of a fixed shape (`path_b64` only for names
 * that are not UTF-8): a spread of the rest gave each entry a separate property array, ~56
 * bytes more per file.
 */
function fileEntry(
  path: string,
  raw: Buffer | undefined,
  st: { mode: number; size: number; mtimeMs: number },
  oid: string,
): ManifestEntry {
  const mode = st.mode & 0o7777;
  const size = small(st.size);
  if (raw === undefined) return { path, type: "file", mode, size, mtime_ms: st.mtimeMs, oid };
  const path_b64 = raw.toString("base64");
  return { path, path_b64, type: "file", mode, size, mtime_ms: st.mtimeMs, oid };
}

/** A directory's manifest entry (see `fileEntry`). */
function dirEntry(path: string, raw: Buffer | undefined, st: Stats): ManifestEntry {
  const mode = st.mode & 0o7777;
  if (raw === undefined) return { path, type: "dir", mode, size: 0, mtime_ms: st.mtimeMs };
  const path_b64 = raw.toString("base64");
  return { path, path_b64, type: "dir", mode, size: 0, mtime_ms: st.mtimeMs };
}

/** A file's stat cache entry, numbers kept small where they can be (see `small`). */
function cachedStatOf(st: Stats, oid: string): CachedStat {
  return {
    size: small(st.size),
    mtimeMs: st.mtimeMs,
    ctimeMs: st.ctimeMs,
    ino: small(st.ino),
    mode: small(st.mode),
    oid,
  };
}

function specialKind(d: Stats): string {
  if (d.isFIFO()) return "fifo";
  if (d.isSocket()) return "socket";
  if (d.isCharacterDevice()) return "character device";
  if (d.isBlockDevice()) return "block device";
  return "unknown type";
}

function cacheHit(cached: CachedStat | undefined, st: Stats, scanStartMs: number): boolean {
  return (
    cached !== undefined &&
    cached.size === st.size &&
    cached.mtimeMs === st.mtimeMs &&
    cached.ctimeMs === st.ctimeMs &&
    cached.ino === st.ino &&
    cached.mode === st.mode &&
    st.mtimeMs < scanStartMs
  );
}

export function createScanWalker(options: ScanWalkerOptions): ScanWalker {
  const { root, excluded, maxBytes, oldCache, leave, store, findings: out } = options;
  // Directories still to read: fs path, relative path, and raw relative bytes when not UTF-8.
  const stack: { fs: FsPath; rel: string; raw: Buffer | undefined }[] = [];

  const visitSymlink = (fsPath: FsPath, rel: string, raw: Buffer | undefined, st: Stats) => {
    let target: Buffer;
    try {
      target = readlinkSync(fsPath, { encoding: "buffer" });
    } catch (error) {
      const code = errnoCode(error);
      if (code === "ENOENT" || code === "EINVAL") return;
      pushSkip(out.skipped, rel, raw, "unreadable", code ?? String(error));
      return;
    }
    const t = decodeName(target);
    out.symlinks++;
    const entry: ManifestEntry = {
      path: rel,
      ...(raw === undefined ? {} : { path_b64: raw.toString("base64") }),
      type: "symlink",
      mode: st.mode & 0o7777,
      size: target.length,
      mtime_ms: st.mtimeMs,
      oid: gitBlobId(target),
      ...(t.exact ? { target: t.text } : { target_b64: target.toString("base64") }),
    };
    out.entries.push(entry);
    out.others.push(entry);
  };

  /** Read and hash a file the cache does not vouch for (writing it to the store). */
  const readFile = (
    fsPath: FsPath,
    rel: string,
    st: Stats,
  ): { stat: Stats; oid: string } | { skip: SkipReason; detail: string } | undefined => {
    const beforeRead =
      options.beforeRead === undefined ? undefined : () => options.beforeRead?.(rel);
    if (st.size > LARGE_OBJECT_BYTES) {
      const hashed = hashStable(fsPath, st, beforeRead, store);
      if (hashed !== undefined && !("skip" in hashed) && hashed.written) out.objectsWritten++;
      return hashed;
    }
    const got = readStable(fsPath, st, beforeRead);
    if (got === undefined || "skip" in got) return got;
    const oid = createHash("sha1")
      .update(`blob ${got.bytes.length}\0`)
      .update(got.bytes)
      .digest("hex");
    if (store?.writeKnown(oid, got.bytes)) out.objectsWritten++;
    return { stat: got.stat, oid };
  };

  /** Record a file: a row of the new cache, and an entry object only when it needs one. */
  const addFile = (rel: string, raw: Buffer | undefined, key: string, st: Stats, c: CachedStat) => {
    out.files++;
    out.bytes += c.size;
    const apart = raw !== undefined || st.nlink > 1;
    out.cache.entries.add(key, c, apart);
    if (!apart) return;
    const entry = fileEntry(rel, raw, st, c.oid);
    out.entries.push(entry);
    // A hard link is one whatever its name's bytes (a cache hit must group as a miss does).
    if (st.nlink > 1) out.links.push({ entry, id: `${st.dev}:${st.ino}` });
  };

  const visitFile = (fsPath: FsPath, rel: string, raw: Buffer | undefined, st: Stats) => {
    const key = raw === undefined ? rel : `\0b64:${raw.toString("base64")}`;
    if (st.nlink > 1 && raw === undefined) out.linked.push(rel);
    const cached = oldCache.entries.get(key);
    if (cached !== undefined && cacheHit(cached, st, oldCache.scanStartMs)) {
      // Fast path: nothing to read, the cache entry carries over as it is.
      addFile(rel, raw, key, st, cached);
      return;
    }
    if (st.size > maxBytes) {
      pushSkip(out.skipped, rel, raw, "too_large", `${st.size} bytes > max_file_bytes ${maxBytes}`);
      return;
    }
    const read = readFile(fsPath, rel, st);
    if (read === undefined) return;
    if ("skip" in read) {
      pushSkip(out.skipped, rel, raw, read.skip, read.detail);
      return;
    }
    const { stat, oid } = read;
    out.rehashed++;
    addFile(rel, raw, key, stat, cachedStatOf(stat, oid));
  };

  const visit: ScanWalker["visit"] = (fsPath, rel, raw, text, isDir) => {
    if (excluded(rel, text, isDir)) return;
    if (++out.seen % 500 === 0) options.onProgress?.({ entries: out.seen, rehashed: out.rehashed });
    let st: Stats;
    try {
      st = lstatSync(fsPath);
    } catch (error) {
      const code = errnoCode(error);
      if (code === "ENOENT" || code === "ENOTDIR") return;
      pushSkip(out.skipped, rel, raw, "unreadable", code ?? String(error));
      return;
    }
    const left = leave.size === 0 ? undefined : leave.get(rel);
    if (left !== undefined) {
      out.skipped.push(left);
      return;
    }
    if (st.isDirectory()) {
      // A directory that matched no dir-only pattern as a file type hint may still match now.
      if (!isDir && excluded(rel, text, true)) return;
      out.dirs++;
      const entry = dirEntry(rel, raw, st);
      out.entries.push(entry);
      out.others.push(entry);
      stack.push({ fs: fsPath, rel, raw });
    } else if (st.isSymbolicLink()) {
      visitSymlink(fsPath, rel, raw, st);
    } else if (st.isFile()) {
      visitFile(fsPath, rel, raw, st);
    } else {
      pushSkip(out.skipped, rel, raw, "special_file", specialKind(st));
    }
  };

  /** The entries of one directory (names as strings, or as bytes when one did not decode). */
  const readDir = (dir: { fs: FsPath; rel: string; raw: Buffer | undefined }) => {
    try {
      // Names are read as strings (the fast path); only a directory holding a name that did not
      // decode (U+FFFD), or below such a name, is read again as bytes.
      const dirents: (Dirent<string> | Dirent<Buffer>)[] =
        dir.raw === undefined && typeof dir.fs === "string"
          ? readdirSync(dir.fs, { withFileTypes: true })
          : readdirSync(dir.fs, { withFileTypes: true, encoding: "buffer" });
      if (dirents.some((d) => typeof d.name === "string" && d.name.includes("\uFFFD"))) {
        return readdirSync(dir.fs, { withFileTypes: true, encoding: "buffer" });
      }
      return dirents;
    } catch (error) {
      if (dir.rel === "") throw fromSystemError(error, `reading workspace root ${root}`);
      const code = errnoCode(error);
      if (code === "ENOENT" || code === "ENOTDIR") return undefined; // vanished or replaced mid-scan
      out.skipped.push({
        path: dir.rel,
        ...(dir.raw === undefined ? {} : { path_b64: dir.raw.toString("base64") }),
        reason: "unreadable_directory",
        detail: code ?? String(error),
      });
      return undefined;
    }
  };

  const walk = (fromRoot = false): void => {
    if (fromRoot) stack.push({ fs: root, rel: "", raw: undefined });
    while (stack.length > 0) {
      const dir = stack.pop()!;
      const dirents = readDir(dir);
      if (dirents === undefined) continue;
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

  return { visit, walk };
}
