import { basename } from "node:path";
import {
  type Config,
  ErrorCode,
  effectiveExcludes,
  readConfig,
  TimewarpError,
  workspacePaths,
} from "../core/index.ts";
import {
  createObjectStore,
  listSnapshots,
  type Manifest,
  type RestoreOptions,
  type RestoreResult,
  readManifest,
  readSnapshot,
  readStatCache,
  restoreManifest,
  type SnapshotRecord,
  type StatCache,
  verifyWorkspace,
  type WorkspaceDifference,
} from "../store/index.ts";

/**
 * The few store operations the time machine composes, phrased the way travel/return need them.
 * Everything goes through `src/store/index.ts`.
 */

export function snapshotExists(root: string, id: string): boolean {
  try {
    readSnapshot(root, id);
    return true;
  } catch (error) {
    if (error instanceof TimewarpError && error.code === ErrorCode.SNAPSHOT_NOT_FOUND) return false;
    throw error;
  }
}

export function readConfigOf(root: string): Config {
  return readConfig(workspacePaths(root).config);
}

/**
 * The excludes a travel uses for its backup and its restore: the config's now plus the ones the
 * snapshot was taken with. A path excluded by either is neither backed up nor touched, so a
 * pattern added since the snapshot (or dropped since) can never make a restore delete it.
 */
export function travelExcludes(config: Config, record: SnapshotRecord): string[] {
  return [...new Set([...effectiveExcludes(config), ...record.exclude_globs])];
}

/** Restore `manifest` into the workspace; a restore that could not apply every entry throws. */
export function restoreExactly(
  root: string,
  manifest: Manifest,
  excludes: readonly string[],
  options: {
    /** The workspace as scanned a moment ago under the lock (travel's backup): skips a re-scan. */
    current?: RestoreOptions["current"] | undefined;
    /** Travel: the objects of present files about to be overwritten must be in the store too. */
    requireReplacedObjects?: boolean;
    /** The stat cache, when the caller has it in hand (read from disk otherwise). */
    statCache?: StatCache;
  } = {},
): RestoreResult {
  const { current, statCache, requireReplacedObjects = false } = options;
  const paths = workspacePaths(root);
  const result = restoreManifest(paths.root, manifest, {
    store: createObjectStore(paths.objects),
    excludes,
    // with `current` known there is no scan, so no cache to read
    ...(current === undefined
      ? { statCache: statCache ?? readStatCache(paths.statCache), useWatcher: true }
      : { current }),
    requireReplacedObjects,
  });
  if (result.blocked.length > 0) {
    throw new TimewarpError(
      ErrorCode.IO_ERROR,
      `restore could not apply ${result.blocked.length} path(s): ${result.blocked
        .slice(0, 5)
        .map((b) => `${b.path} (${b.reason})`)
        .join(", ")}`,
      { data: { blocked: result.blocked } },
    );
  }
  return result;
}

/** Every difference between the workspace and `manifest` (exact: unmatched stat data is re-read). */
export function verifyAgainst(
  root: string,
  manifest: Manifest,
  excludes: readonly string[],
  statCache?: StatCache,
): { ok: boolean; differences: WorkspaceDifference[]; checked: number } {
  const paths = workspacePaths(root);
  return verifyWorkspace(paths.root, manifest, {
    excludes,
    statCache: statCache ?? readStatCache(paths.statCache),
    useWatcher: true,
  });
}

export function readBackup(
  root: string,
  backupId: string,
): { record: SnapshotRecord; manifest: Manifest } {
  const record = readSnapshot(root, backupId, { kind: "present_backup" });
  return { record, manifest: readManifest(root, record) };
}

export function backupIdOf(backupPath: string): string {
  return basename(backupPath);
}

export function listBackupIds(root: string): string[] {
  return listSnapshots(root, { kind: "present_backup" }).map((r) => r.backup_id ?? "");
}
