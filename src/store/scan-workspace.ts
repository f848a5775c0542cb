import { closeSync, constants, fstatSync, openSync, statSync, writeSync } from "node:fs";
import { join } from "node:path";
import { ErrorCode, errnoCode, TimewarpError } from "../core/index.ts";
import { createExcludeMatcher } from "./excludes.ts";
import {
  MANIFEST_SCHEMA_VERSION,
  type Manifest,
  type ManifestEntry,
  manifestBytes,
  manifestBytesOf,
  sortEntries,
} from "./manifest.ts";
import type { ObjectStore } from "./object-store.ts";
import type { SkipReason } from "./read-stable.ts";
import { updateFromIndex } from "./scan-from-index.ts";
import { createScanWalker, newFindings } from "./scan-walker.ts";
import { emptyStatCache, type ScanIndex, type StatCache } from "./stat-cache.ts";
import type { StatTable } from "./stat-cache-table.ts";
import { type WatchedChanges, watchedChanges } from "./watch.ts";

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
  /** The manifest, made on first use (`manifestText` makes its text without it). */
  manifest: Manifest;
  /** The manifest's canonical text (`manifestBytes`), made from the scan's columns. */
  manifestText: () => Buffer;
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

/**
 * Without a marker file, the wall clock stands in for the file-system clock; timestamps can lag
 * it by a coarse-clock tick (Linux) or be truncated to 1–2 s (FAT, HFS+), hence the margin.
 */
const WALL_CLOCK_MARGIN_MS = 2000;

function fsClockMs(clockDir: string | undefined): number {
  if (clockDir !== undefined) {
    try {
      return touchClockMarker(join(clockDir, CLOCK_MARKER));
    } catch {
      // fall through to the wall clock
    }
  }
  return Date.now() - WALL_CLOCK_MARGIN_MS;
}

/** The marker whose modification time is the file-system clock (in `.timewarp/tmp/`). */
const CLOCK_MARKER = "scan-clock";
/** Its length: always the same, so it is overwritten in place and never truncated. */
const CLOCK_MARKER_BYTES = 32;

/**
 * Write the marker in place and return its new modification time. Not truncated: on ext4 a
 * file truncated and written again is written back when it is closed (`auto_da_alloc`), which
 * cost every scan 1.5–3 ms (issue 22); a write over the same bytes ~0.05 ms. What it holds is
 * never read (a torn write is harmless): only the time of the write matters.
 */
function touchClockMarker(marker: string): number {
  const fd = openSync(marker, constants.O_RDWR | constants.O_CREAT | constants.O_NOFOLLOW, 0o644);
  try {
    const text = `${process.pid} ${Date.now()}`.slice(0, CLOCK_MARKER_BYTES - 1);
    writeSync(fd, `${text.padEnd(CLOCK_MARKER_BYTES - 1)}\n`, 0);
    return fstatSync(fd).mtimeMs;
  } finally {
    closeSync(fd);
  }
}

/**
 * The scope a stat cache's index is valid for: the excludes of the scan that built it (a scan
 * with other excludes cannot update that index from a change list). The size cap is not part
 * of it: it only decides about files a scan reads, and skipped paths are always revisited.
 */
export function scanScope(excludes: readonly string[]): string {
  return JSON.stringify(excludes);
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
  assertDirectory(root);
  const scope = scanScope(options.excludes);
  const oldCache = options.statCache ?? emptyStatCache();
  const asked = askWatcher(root, options, oldCache, scope);
  const leave = new Map<string, SkippedPath>();
  for (const s of options.leaveAlone ?? []) leave.set(s.path, s);
  const revisit =
    asked.changed !== undefined && oldCache.index?.scope === scope && leave.size === 0
      ? pathsToRevisit(oldCache, asked.changed)
      : undefined;
  const out = newFindings(fsClockMs(options.clockDir));
  const walker = createScanWalker({
    root,
    excluded: createExcludeMatcher(options.excludes),
    maxBytes: options.maxFileBytes ?? Number.POSITIVE_INFINITY,
    oldCache,
    leave,
    store: options.store,
    beforeRead: options.beforeRead,
    onProgress: options.onProgress,
    findings: out,
  });
  let unchanged = false;
  if (revisit === undefined) walker.walk(true);
  else {
    unchanged = updateFromIndex({
      root,
      index: oldCache.index!,
      cached: oldCache.entries,
      roots: revisit,
      walker,
      findings: out,
    });
  }

  options.onProgress?.({ entries: out.seen, rehashed: out.rehashed });
  markHardLinks(out.links);
  const newCache = out.cache;
  const { others, skipped, linked } = out;
  newCache.index = { scope, others, skipped, ...(linked.length > 0 ? { linked } : {}) };
  const knownManifest = oldCache.index?.manifest;
  if (unchanged && knownManifest !== undefined) newCache.index.manifest = knownManifest;
  if (asked.token !== undefined) newCache.watchToken = asked.token;
  const watch = asked.watch;
  const rows = manifestRows(out.entries, newCache.entries);
  let manifest: Manifest | undefined;
  return {
    get manifest() {
      if (manifest === undefined) {
        const entries = new Array<ManifestEntry>(rows.count);
        for (let i = 0; i < rows.count; i++) entries[i] = rows.at(i);
        manifest = { schema_version: MANIFEST_SCHEMA_VERSION, entries };
      }
      return manifest;
    },
    manifestText: () =>
      manifest === undefined
        ? manifestBytesOf(MANIFEST_SCHEMA_VERSION, rows.count, rows.at)
        : manifestBytes(manifest),
    skipped,
    files: out.files,
    dirs: out.dirs,
    symlinks: out.symlinks,
    bytes: out.bytes,
    rehashed: out.rehashed,
    objects_written: out.objectsWritten,
    statCache: newCache,
    incremental: revisit !== undefined,
    unchanged,
    watchQuiet:
      newCache.watchToken === oldCache.watchToken ||
      (watch !== undefined && "changed" in watch && watch.changed === 0),
    ...(watch === undefined ? {} : { watch }),
  };
}

/**
 * The manifest's entries in order, from the scan's entry objects and the rows of its table that
 * have none (`ScanFindings.entries`): both sorted as `sortEntries` sorts (the rows' keys are
 * their paths), then merged. `at(i)` makes a row's entry anew on each call.
 */
function manifestRows(
  objects: ManifestEntry[],
  table: StatTable,
): { count: number; at: (i: number) => ManifestEntry } {
  sortEntries(objects);
  const all = table.sortedRows();
  let n = 0;
  for (let i = 0; i < all.length; i++) {
    if (!table.isMarked(all[i] as number)) all[n++] = all[i] as number;
  }
  const rows = all.subarray(0, n);
  // order[i] >= 0: a row of the table; < 0: objects[-order[i] - 1].
  const order = new Int32Array(objects.length + n);
  let o = 0;
  let r = 0;
  for (let i = 0; i < order.length; i++) {
    const obj = objects[o];
    const takeObject =
      obj !== undefined && (r >= n || (obj.path_b64 ?? obj.path) <= table.keyAt(rows[r] as number));
    order[i] = takeObject ? -++o : (rows[r++] as number);
  }
  const at = (i: number): ManifestEntry => {
    const k = order[i] as number;
    if (k < 0) return objects[-k - 1] as ManifestEntry;
    return {
      path: table.keyAt(k),
      type: "file",
      mode: table.modeAt(k) & 0o7777,
      size: table.sizeAt(k),
      mtime_ms: table.mtimeAt(k),
      oid: table.oidAt(k),
    };
  };
  return { count: order.length, at };
}

/** Throws NOT_A_DIRECTORY unless `root` is a directory. */
function assertDirectory(root: string): void {
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
}

/** The changed paths (given, or the watch daemon's answer) and what to report about asking. */
function askWatcher(
  root: string,
  options: ScanOptions,
  oldCache: StatCache,
  scope: string,
): { changed?: readonly string[]; token?: string; watch?: ScanResult["watch"] } {
  if (options.changed !== undefined) return { changed: options.changed };
  if (options.watched === undefined && options.useWatcher !== true) return {};
  if (options.watched === undefined && process.env.TIMEWARP_WATCH === "0") {
    return { watch: { reason: "TIMEWARP_WATCH=0" } };
  }
  const answer = options.watched ?? watchedChanges(root, oldCache.watchToken, scope);
  const changed = answer.changed;
  return {
    changed,
    token: answer.token,
    watch: changed !== undefined ? { changed: changed.length } : { reason: answer.reason ?? "" },
  };
}
