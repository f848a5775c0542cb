import { mkdirSync } from "node:fs";
import { effectiveExcludes, readConfig, workspacePaths } from "../core/index.ts";
import {
  createObjectStore,
  loadStatCache,
  peekStatCache,
  readStatCache,
  type StatCache,
  scanScope,
  scanWorkspace,
  watchedChanges,
  writeStatCache,
} from "../store/index.ts";
import { hookPaths } from "./hook-paths.ts";
import { type CachedChange, diffStatCaches } from "./hook-stat-cache.ts";

export interface ShellScan {
  /** The scan's id (its file-system start time), which PostToolUse expects to find as baseline. */
  id: string;
  files: number;
  rehashed: number;
}

function scanNow(
  root: string,
  previous: StatCache,
): { cache: StatCache; files: number; rehashed: number; quiet: boolean } {
  const paths = workspacePaths(root);
  const config = readConfig(paths.config);
  mkdirSync(hookPaths(root).dir, { recursive: true });
  const result = scanWorkspace(paths.root, {
    excludes: effectiveExcludes(config),
    maxFileBytes: config.max_file_bytes,
    statCache: previous,
    // New contents go to the object store, so a shell change has its pre-image there later.
    store: createObjectStore(paths.objects),
    clockDir: hookPaths(root).dir,
    useWatcher: true,
  });
  // The watcher reported nothing (or, without one, the token did not move): the cache on disk
  // still describes the workspace, and its older token only makes the next answer longer.
  const quiet =
    result.statCache.watchToken === previous.watchToken ||
    (result.watch !== undefined && "changed" in result.watch && result.watch.changed === 0);
  return { cache: result.statCache, files: result.files, rehashed: result.rehashed, quiet };
}

/** The last hook scan (`own`), else the snapshots' stat cache (the session-start scan). */
function lastScan(root: string): { cache: StatCache; own: boolean } {
  const own = loadStatCache(hookPaths(root).statCache);
  return own !== null
    ? { cache: own, own: true }
    : { cache: readStatCache(workspacePaths(root).statCache), own: false };
}

interface KeptScan {
  before: StatCache | null;
  after: StatCache | null;
  id: string;
  files: number;
  rehashed: number;
  unchanged: boolean;
}

/**
 * The hooks' own cache is current when the watch daemon saw nothing change since its token:
 * then neither it nor the workspace is read (most shell commands write nothing, and this is
 * ~1 ms where loading 10k entries and scanning is tens). Null when that cannot be told.
 */
function unchangedSinceLastScan(root: string): KeptScan | null {
  if (process.env.TIMEWARP_WATCH === "0") return null;
  const header = peekStatCache(hookPaths(root).statCache);
  if (header?.watchToken === undefined) return null;
  const config = readConfig(workspacePaths(root).config);
  const answer = watchedChanges(root, header.watchToken, scanScope(effectiveExcludes(config)));
  if (answer.changed === undefined || answer.changed.length > 0) return null;
  return {
    before: null,
    after: null,
    id: `${header.scanStartMs}`,
    files: header.files,
    rehashed: 0,
    unchanged: true,
  };
}

/**
 * Scan through the last cache and keep the result as the new baseline — unless every file was a
 * cache hit and none came or went: then the cache on disk already says exactly this, and the
 * write (a megabyte at 10k files) is skipped. Returns the id of the cache now on disk.
 */
function scanAndKeep(root: string): KeptScan {
  const quick = unchangedSinceLastScan(root);
  if (quick !== null) return quick;
  const last = lastScan(root);
  const scan = scanNow(root, last.cache);
  const unchanged =
    last.own &&
    scan.quiet &&
    scan.rehashed === 0 &&
    scan.cache.entries.size === last.cache.entries.size;
  if (!unchanged) writeStatCache(hookPaths(root).statCache, scan.cache);
  const kept = unchanged ? last.cache : scan.cache;
  return {
    before: last.cache,
    after: scan.cache,
    id: `${kept.scanStartMs}`,
    files: scan.files,
    rehashed: scan.rehashed,
    unchanged,
  };
}

/**
 * PreToolUse of a shell tool: scan the workspace through the stat cache (only files whose stat
 * data changed are read) and keep the result as the baseline of this command.
 */
export function scanBaseline(root: string): ShellScan {
  const { id, files, rehashed } = scanAndKeep(root);
  return { id, files, rehashed };
}

export interface ShellRescan extends ShellScan {
  /** Files whose content changed since the baseline. */
  changes: CachedChange[];
  /** The baseline was not the one PreToolUse took (another scan ran in between, or none). */
  baselineMoved: boolean;
}

/** PostToolUse of a shell tool: scan again and diff against the baseline. */
export function rescanAfterShell(root: string, expectedBaseline: string | null): ShellRescan {
  const scan = scanAndKeep(root);
  const { before, after } = scan;
  // No baseline at all (no snapshot, no earlier hook scan): this scan becomes the baseline;
  // calling every file of the workspace "changed by the shell" would be a lie.
  const known = before !== null && (before.scanStartMs !== 0 || before.entries.size > 0);
  return {
    id: scan.id,
    files: scan.files,
    rehashed: scan.rehashed,
    changes: known && after !== null && !scan.unchanged ? diffStatCaches(before, after) : [],
    baselineMoved: expectedBaseline !== (before === null ? scan.id : `${before.scanStartMs}`),
  };
}
