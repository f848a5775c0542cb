import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { effectiveExcludes, readConfig, workspacePaths } from "../core/index.ts";
import { createObjectStore, readStatCache, type StatCache, scanWorkspace } from "../store/index.ts";
import { hookPaths } from "./hook-paths.ts";
import {
  type CachedChange,
  diffStatCaches,
  readHookStatCache,
  writeHookStatCache,
} from "./hook-stat-cache.ts";

export interface ShellScan {
  /** The scan's id (its file-system start time), which PostToolUse expects to find as baseline. */
  id: string;
  files: number;
  rehashed: number;
}

function scanNow(
  root: string,
  previous: StatCache,
): { cache: StatCache; files: number; rehashed: number } {
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
  });
  return { cache: result.statCache, files: result.files, rehashed: result.rehashed };
}

function cacheFile(root: string): string {
  return join(hookPaths(root).dir, "stat-cache.json");
}

/** The last hook scan, else the snapshots' stat cache (the session-start scan). */
function lastScan(root: string): StatCache {
  return readHookStatCache(cacheFile(root)) ?? readStatCache(workspacePaths(root).statCache);
}

/**
 * PreToolUse of a shell tool: scan the workspace through the stat cache (only files whose stat
 * data changed are read) and keep the result as the baseline of this command.
 */
export function scanBaseline(root: string): ShellScan {
  const scan = scanNow(root, lastScan(root));
  writeHookStatCache(cacheFile(root), scan.cache);
  return { id: `${scan.cache.scanStartMs}`, files: scan.files, rehashed: scan.rehashed };
}

export interface ShellRescan extends ShellScan {
  /** Files whose content changed since the baseline. */
  changes: CachedChange[];
  /** The baseline was not the one PreToolUse took (another scan ran in between, or none). */
  baselineMoved: boolean;
}

/** PostToolUse of a shell tool: scan again and diff against the baseline. */
export function rescanAfterShell(root: string, expectedBaseline: string | null): ShellRescan {
  const before = lastScan(root);
  const scan = scanNow(root, before);
  writeHookStatCache(cacheFile(root), scan.cache);
  // No baseline at all (no snapshot, no earlier hook scan): this scan becomes the baseline;
  // calling every file of the workspace "changed by the shell" would be a lie.
  const known = before.scanStartMs !== 0 || before.entries.size > 0;
  return {
    id: `${scan.cache.scanStartMs}`,
    files: scan.files,
    rehashed: scan.rehashed,
    changes: known ? diffStatCaches(before, scan.cache) : [],
    baselineMoved: expectedBaseline !== `${before.scanStartMs}`,
  };
}
