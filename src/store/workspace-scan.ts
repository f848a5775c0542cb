import { lstatSync, mkdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import {
  type Config,
  effectiveExcludes,
  gitBlobId,
  readConfig,
  workspacePaths,
  writeFileAtomic,
} from "../core/index.ts";
import { createExcludeMatcher } from "./excludes.ts";
import { createObjectStore } from "./object-store.ts";
import { parentsAreDirs, readFileStable } from "./read-stable.ts";
import { scanScope, scanWorkspace } from "./scan-workspace.ts";
import {
  type CachedStat,
  loadStatCache,
  lookupStatCache,
  peekStatCache,
  readStatCache,
  type StatCache,
  writeStatCache,
} from "./stat-cache.ts";
import { runningWatchDaemon, watchedChanges } from "./watch.ts";

/**
 * The store's door for a kept view of the workspace: a directory (the hooks use
 * `.timewarp/hooks/`) holding a stat cache (`stat-cache.bin`, a full index in the store's
 * format, seeded from the snapshots' cache) and, when the watch daemon runs, an overlay
 * (`overlay.json`): the files changed since that cache, with their content ids and the daemon's
 * token. `scanKept` brings the view up to date, touching only what the daemon reports (a few
 * files) instead of loading, rescanning and rewriting 10k entries; the overlay is folded into a
 * new cache by the next full scan, which runs whenever the daemon cannot answer, reports a
 * directory, or the overlay grows past `MAX_OVERLAY`. New contents go to the object store, so a
 * change has its pre-image there later. Kept apart from the snapshots' cache so a hook scan
 * never changes what the next snapshot re-reads.
 */

/** A file whose content id differs between two states of the workspace; null oid: absent. */
export interface FileChange {
  path: string;
  before: string | null;
  after: string | null;
}

/** The files added, removed or modified from cache `a` to cache `b`, sorted by path. Pure. */
export function diffStatCaches(a: StatCache, b: StatCache): FileChange[] {
  const out: FileChange[] = [];
  for (const [path, now] of b.entries) {
    const then = a.entries.get(path);
    if (then === undefined) out.push({ path, before: null, after: now.oid });
    else if (then.oid !== now.oid) out.push({ path, before: then.oid, after: now.oid });
  }
  for (const [path, then] of a.entries)
    if (!b.entries.has(path)) out.push({ path, before: then.oid, after: null });
  return out.sort((x, y) => (x.path < y.path ? -1 : x.path > y.path ? 1 : 0));
}

interface Overlay {
  /** The `scanStartMs` of the cache this overlays; another cache makes it void. */
  base: number;
  token: string;
  files: number;
  /** Files changed since the cache: their state now, null when gone. */
  entries: Record<string, CachedStat | null>;
}

/** Past this many files in the overlay, a full scan folds it into a new cache. */
const MAX_OVERLAY = 2_000;
/** Past this many reported paths at once, a full scan is as cheap. */
const MAX_REPORTED = 500;

/** Where a kept view of the workspace keeps its files, all in one directory. */
interface ViewPaths {
  dir: string;
  /** The full index: the stat data and content id of every file as the last full scan saw it. */
  statCache: string;
  /** The files changed since that index, as the watch daemon reported them. */
  overlay: string;
}

function viewPaths(dir: string): ViewPaths {
  return { dir, statCache: join(dir, "stat-cache.bin"), overlay: join(dir, "overlay.json") };
}

function readOverlay(vp: ViewPaths, base: number): Overlay | null {
  try {
    const o = JSON.parse(readFileSync(vp.overlay, "utf8")) as Overlay;
    return o.base === base && typeof o.token === "string" && typeof o.entries === "object"
      ? o
      : null;
  } catch {
    return null;
  }
}

const idOf = (base: number, overlay: Overlay | null): string =>
  overlay === null ? `${base}` : `${base}:${overlay.token}`;

/** What `scanKept` found. */
export interface KeptScan {
  /** The baseline on disk before this scan (its id), and after it. */
  beforeId: string;
  id: string;
  files: number;
  rehashed: number;
  changes: FileChange[];
  /** The baseline on disk was empty (no snapshot, no hook scan yet). */
  known: boolean;
}

/**
 * The watch path: what changed since the baseline, from the daemon's report, reading only the
 * reported files. Null when it cannot answer exactly (no daemon or token, a directory reported,
 * too much at once): the caller then takes the full scan.
 */
function scanReported(root: string, vp: ViewPaths, config: Config): KeptScan | null {
  if (process.env.TIMEWARP_WATCH === "0") return null;
  const header = peekStatCache(vp.statCache);
  if (header?.watchToken === undefined) return null;
  const overlay = readOverlay(vp, header.scanStartMs);
  const excludes = effectiveExcludes(config);
  const answer = watchedChanges(root, overlay?.token ?? header.watchToken, scanScope(excludes));
  if (answer.changed === undefined || answer.token === undefined) return null;
  const beforeId = idOf(header.scanStartMs, overlay);
  const files = overlay?.files ?? header.files;
  if (answer.changed.length === 0) {
    return { beforeId, id: beforeId, files, rehashed: 0, changes: [], known: true };
  }
  if (answer.changed.length > MAX_REPORTED) return null;
  // A name holding U+FFFD may stand for bytes that are not UTF-8: the full scan reads those.
  if (answer.changed.some((p) => p.includes("\uFFFD"))) return null;
  const excluded = createExcludeMatcher(excludes);
  const reported = answer.changed.filter((p) => p !== ".timewarp" && !p.startsWith(".timewarp/"));
  const entries: Record<string, CachedStat | null> = { ...(overlay?.entries ?? {}) };
  // One read of the cache for every lookup; it must still be the one the header described
  // (another hook's full scan may have replaced it meanwhile).
  const base = lookupStatCache(
    vp.statCache,
    reported.filter((p) => !(p in entries)),
    { under: reported },
  );
  if (base === null || base.scanStartMs !== header.scanStartMs) return null;
  const store = createObjectStore(workspacePaths(root).objects);
  const changes: FileChange[] = [];
  const dirOk = new Map<string, boolean>();
  let count = files;
  let rehashed = 0;
  for (const path of reported) {
    const name = path.slice(path.lastIndexOf("/") + 1);
    if (excluded(path, name, false)) continue;
    const before = path in entries ? entries[path] : (base.found.get(path) ?? null);
    let now: CachedStat | null = null;
    let isDir = false;
    // Below a parent that is no longer a real directory (gone, or now a symlink) a walk sees
    // nothing; never read through it.
    if (parentsAreDirs(root, path, dirOk)) {
      const got = readFileStable(join(root, path));
      if (got !== null && "skip" in got) return null; // the full scan reports it
      if (got === null) {
        try {
          isDir = lstatSync(join(root, path)).isDirectory();
        } catch {
          // gone
        }
      } else {
        if (got.stat.size > config.max_file_bytes) return null; // the full scan reports it
        const oid = gitBlobId(got.bytes);
        store.writeKnown(oid, got.bytes);
        rehashed++;
        now = {
          size: got.stat.size,
          mtimeMs: got.stat.mtimeMs,
          ctimeMs: got.stat.ctimeMs,
          ino: got.stat.ino,
          mode: got.stat.mode,
          oid,
        };
      }
    }
    if (isDir) return null; // a new subtree: the full scan walks it
    // A directory that went away (moved out, deleted, replaced by a file or a link) took its
    // files along, and the daemon only names the directory: the full scan finds them.
    if (now === null && (base.under.has(path) || hasOverlayBelow(entries, path))) return null;
    if (before === null && now !== null) count++;
    if (before !== null && now === null) count--;
    if ((before?.oid ?? null) !== (now?.oid ?? null)) {
      changes.push({ path, before: before?.oid ?? null, after: now?.oid ?? null });
    }
    entries[path] = now;
  }
  if (Object.keys(entries).length > MAX_OVERLAY) return null;
  const next: Overlay = { base: header.scanStartMs, token: answer.token, files: count, entries };
  mkdirSync(vp.dir, { recursive: true });
  writeFileAtomic(vp.overlay, JSON.stringify(next), { durable: false });
  changes.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return {
    beforeId,
    id: idOf(header.scanStartMs, next),
    files: count,
    rehashed,
    changes,
    known: true,
  };
}

function hasOverlayBelow(entries: Record<string, CachedStat | null>, dir: string): boolean {
  const prefix = `${dir}/`;
  for (const [p, e] of Object.entries(entries)) if (e !== null && p.startsWith(prefix)) return true;
  return false;
}

/** The view's last full scan (`own`), else the snapshots' stat cache. */
function lastScan(root: string, vp: ViewPaths): { cache: StatCache; own: boolean } {
  const own = loadStatCache(vp.statCache);
  return own !== null
    ? { cache: own, own: true }
    : { cache: readStatCache(workspacePaths(root).statCache), own: false };
}

/** `cache` with an overlay's changes applied: the baseline the overlay path would diff against. */
function withOverlay(cache: StatCache, overlay: Overlay): StatCache {
  const entries = new Map(cache.entries);
  for (const [path, e] of Object.entries(overlay.entries)) {
    if (e === null) entries.delete(path);
    else entries.set(path, e);
  }
  return { scanStartMs: cache.scanStartMs, entries };
}

/**
 * The full path: scan through the last cache (the daemon's report or a walk) and keep the
 * result as the new cache, folding in and removing the overlay — unless every file was a cache
 * hit, none came or went and there is no overlay: then the cache on disk already says exactly
 * this, and the write (a megabyte at 10k files) is skipped.
 */
function scanAll(root: string, vp: ViewPaths, config: Config): KeptScan {
  const paths = workspacePaths(root);
  mkdirSync(vp.dir, { recursive: true });
  const last = lastScan(root, vp);
  const overlay = last.own ? readOverlay(vp, last.cache.scanStartMs) : null;
  const result = scanWorkspace(paths.root, {
    excludes: effectiveExcludes(config),
    maxFileBytes: config.max_file_bytes,
    statCache: last.cache,
    // New contents go to the object store, so a shell change has its pre-image there later.
    store: createObjectStore(paths.objects),
    clockDir: vp.dir,
    useWatcher: true,
  });
  const after = result.statCache;
  const unchanged =
    last.own &&
    overlay === null &&
    result.watchQuiet &&
    result.rehashed === 0 &&
    after.entries.size === last.cache.entries.size;
  if (!unchanged) {
    writeStatCache(vp.statCache, after);
    rmSync(vp.overlay, { force: true });
  }
  const before = overlay === null ? last.cache : withOverlay(last.cache, overlay);
  const known = before.scanStartMs !== 0 || before.entries.size > 0;
  const beforeId = idOf(last.cache.scanStartMs, overlay);
  return {
    beforeId,
    id: unchanged ? beforeId : `${after.scanStartMs}`,
    files: result.files,
    rehashed: result.rehashed,
    // No baseline at all (no snapshot, no earlier hook scan): this scan becomes the baseline;
    // calling every file of the workspace "changed by the shell" would be a lie.
    changes: known && !unchanged ? diffStatCaches(before, after) : [],
    known,
  };
}

/**
 * Bring the view kept in `dir` up to date with the workspace at `root` and keep the result as
 * its new baseline; `changes` are the files that differ from the baseline it had. Reads only
 * files that changed (by the watch daemon's report, else by stat data).
 */
export function scanKept(root: string, dir: string): KeptScan {
  const config = readConfig(workspacePaths(root).config);
  const vp = viewPaths(dir);
  return scanReported(root, vp, config) ?? scanAll(root, vp, config);
}

/** The view's files as they are now (identity and last change). */
function viewStamp(vp: ViewPaths): string {
  return [vp.statCache, vp.overlay]
    .map((f) => {
      const st = statSync(f, { bigint: true, throwIfNoEntry: false });
      return st === undefined ? "-" : `${st.ino}:${st.size}:${st.ctimeNs}`;
    })
    .join(" ");
}

/**
 * Bring the view kept in `dir` to the running watch daemon's token by a scan in this process:
 * the daemon's prime (`timewarp watch prime`), so that the first shell hook the daemon serves
 * reads only what the daemon reports instead of scanning the whole workspace in its worker.
 * `mayMove` is asked before and again right before the view is written (the hooks say no while
 * a shell command's baseline is in use); nothing is written either when the view changed
 * meanwhile. Returns `primed`, `current` (already at this daemon's token), or why not.
 */
export function primeKept(root: string, dir: string, mayMove: () => boolean): string {
  const vp = viewPaths(dir);
  const info = runningWatchDaemon(root);
  if (info === null) return "no watch daemon runs";
  const header = peekStatCache(vp.statCache);
  const token =
    (header === null ? null : readOverlay(vp, header.scanStartMs))?.token ?? header?.watchToken;
  if (token?.startsWith(`${info.instance}:`) === true) return "current";
  // (a view made anew starts from the snapshots' cache: without one it would read every file)
  if (header === null && peekStatCache(workspacePaths(root).statCache) === null)
    return "no view and no stat cache yet";
  if (!mayMove()) return "a shell command is running";
  const stamp = viewStamp(vp);
  const paths = workspacePaths(root);
  const config = readConfig(paths.config);
  // From the snapshots' cache when it is at this daemon's token already (the prime's first
  // step): the daemon's report since then instead of a second walk, as a view made anew starts.
  const snapshots = peekStatCache(paths.statCache)?.watchToken;
  const base = snapshots?.startsWith(`${info.instance}:`)
    ? readStatCache(paths.statCache)
    : lastScan(root, vp).cache;
  const result = scanWorkspace(paths.root, {
    excludes: effectiveExcludes(config),
    maxFileBytes: config.max_file_bytes,
    statCache: base,
    store: createObjectStore(paths.objects),
    clockDir: vp.dir,
    useWatcher: true,
  });
  if (viewStamp(vp) !== stamp || !mayMove())
    return "the view moved meanwhile, or a shell command began";
  mkdirSync(vp.dir, { recursive: true });
  writeStatCache(vp.statCache, result.statCache);
  rmSync(vp.overlay, { force: true });
  return "primed";
}
