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
  CHANGED_SINCE_SCAN,
  changedSinceScan,
  createObjectStore,
  diffManifests,
  diffManifestTrees,
  listSnapshotIds,
  type Manifest,
  type ManifestDiff,
  type ManifestTree,
  parseManifestText,
  type RestoreResult,
  readManifestTree,
  readSnapshot,
  readStatCache,
  recordId,
  restoreManifest,
  restoreManifestTree,
  type SkippedPath,
  type SnapshotRecord,
  type StatCache,
  scanScope,
  scanWorkspace,
  scanWorkspaceTree,
  treeOfText,
  treeText,
  verifyWorkspace,
  verifyWorkspacePaths,
  verifyWorkspaceTree,
  type WorkspaceDifference,
  watchedChanges,
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

/**
 * A manifest in hand: its tree (what travel and return compare, node by node: only the leaves
 * that differ are read), and the decoded form, made only when a comparison of trees cannot be
 * had (names that are not UTF-8).
 */
export interface ManifestSource {
  tree: () => ManifestTree;
  manifest: () => Manifest;
  /** What the record did not capture: no restore to it or verify against it touches these. */
  skipped: readonly SkippedPath[];
}

function memo<T>(make: () => T): () => T {
  let value: T | undefined;
  let made = false;
  return () => {
    if (!made) {
      value = make();
      made = true;
    }
    return value as T;
  };
}

/** A tree's manifest, its whole text read and parsed. */
const treeManifest = (tree: () => ManifestTree, source: string) => () => {
  const t = tree();
  return parseManifestText(treeText(t), source);
};

/** A record's manifest: its root read (and checked against its hash) on first use. */
export function recordSource(root: string, record: SnapshotRecord): ManifestSource {
  const tree = memo(() => readManifestTree(root, record));
  return {
    tree,
    manifest: memo(treeManifest(tree, `the manifest of ${recordId(record)}`)),
    skipped: record.skipped,
  };
}

/** A freshly taken snapshot's (or backup's) manifest. */
export function createdSource(
  root: string,
  made: { manifest: Manifest; record: SnapshotRecord },
): ManifestSource {
  return {
    tree: memo(() => readManifestTree(root, made.record)),
    manifest: () => made.manifest,
    skipped: made.record.skipped,
  };
}

/** The workspace as a scan found it a moment ago. */
export interface CurrentState {
  source: ManifestSource;
  skipped: SkippedPath[];
  /**
   * When the scan walked (no daemon vouched for it) and `keepStatCache` asked: its stat cache
   * and index, kept in memory, what a verify's walk by stat (`changedSinceScan`) compares the
   * workspace with afterwards.
   */
  walked?: StatCache;
}

/**
 * The workspace now, by the delta scan (its tree; nothing written) when the watch daemon can
 * vouch for it; null otherwise (the restore or verify then scans the usual way).
 */
function scanCurrent(root: string, excludes: readonly string[]): CurrentState | null {
  const paths = workspacePaths(root);
  const scanned = scanWorkspaceTree(paths.root, {
    excludes,
    statCachePath: paths.statCache,
    dataDir: paths.data,
  });
  if (scanned === null) return null;
  const tree = scanned.tree;
  return {
    source: {
      tree: () => tree,
      manifest: memo(treeManifest(() => tree, "the workspace")),
      skipped: scanned.skipped,
    },
    skipped: scanned.skipped,
  };
}

/**
 * The workspace now as a source, nothing written: the delta scan's tree when the watch daemon
 * vouches for it, else a scan through the stat cache, whose text makes a tree in memory.
 */
export function scanSource(
  root: string,
  excludes: readonly string[],
  options: { keepStatCache?: boolean } = {},
): CurrentState {
  const current = scanCurrent(root, excludes);
  if (current !== null) return current;
  // No journal vouches for the stat cache (no daemon, or one just started): a walk through the
  // cache, whose text makes a tree in memory; the scan is decoded only if a caller needs it.
  // Once the tree is made the scan goes but for its stat cache when asked (`walked`, ~15 MB at
  // 100k files), against which a return's verify walks by stat instead of scanning again.
  let scan: ReturnType<typeof scanThroughCache> | undefined = scanThroughCache(root, excludes);
  const skipped = scan.skipped;
  const walked = options.keepStatCache === true ? scan.statCache : undefined;
  const tree = memo(() => {
    const made = treeOfText(
      (scan as ReturnType<typeof scanThroughCache>).manifestText(),
      "the workspace",
    );
    scan = undefined;
    return made;
  });
  return {
    source: {
      tree,
      manifest: memo(() => scan?.manifest ?? treeManifest(tree, "the workspace")()),
      skipped,
    },
    skipped,
    ...(walked === undefined ? {} : { walked }),
  };
}

/**
 * `diffManifests` of two sources: by their trees (only differing leaves read) unless a name is
 * not plain UTF-8.
 */
export function diffSources(
  a: ManifestSource,
  b: ManifestSource,
  skipped: readonly SkippedPath[],
): ManifestDiff {
  const byTree = diffManifestTrees(a.tree(), b.tree(), { skipped });
  return byTree ?? diffManifests(a.manifest(), b.manifest(), { skipped });
}

/**
 * The workspace now, decoded, and what the scan could not read; nothing is written (the
 * delta scan's text when the watch daemon vouches for it, else a scan through the stat cache).
 */
export function scanNow(
  root: string,
  excludes: readonly string[],
): { manifest: Manifest; skipped: SkippedPath[] } {
  const current = scanCurrent(root, excludes);
  if (current !== null) return { manifest: current.source.manifest(), skipped: current.skipped };
  const scan = scanThroughCache(root, excludes);
  return { manifest: scan.manifest, skipped: scan.skipped };
}

/** A walk of the workspace through the stat cache (what a snapshot without the daemon does). */
function scanThroughCache(root: string, excludes: readonly string[]) {
  const paths = workspacePaths(root);
  return scanWorkspace(paths.root, {
    excludes,
    maxFileBytes: readConfigOf(root).max_file_bytes,
    statCache: readStatCache(paths.statCache),
    useWatcher: true,
    clockDir: paths.tmp,
  });
}

/**
 * Restore `target` into the workspace by difference; a restore that could not apply every
 * entry throws. Compares trees (only differing leaves decoded) when both sides have one.
 * What `target` did not capture, what `alsoSkipped` lists (a travel: what its backup did not
 * capture) and what the workspace's scan cannot read are left alone (`result.left_alone` says
 * which target entries that kept from being applied).
 */
export function restoreExactly(
  root: string,
  target: ManifestSource,
  excludes: readonly string[],
  options: {
    /** The workspace as scanned a moment ago under the lock (travel's backup): skips a re-scan. */
    current?: CurrentState | undefined;
    /** Travel: the objects of present files about to be overwritten must be in the store too. */
    requireReplacedObjects?: boolean;
    /** More paths to leave alone (a travel: what the backup of the present did not capture). */
    alsoSkipped?: readonly SkippedPath[];
    /** Entries applied of all (deletes, directories, writes). */
    onProgress?: ((progress: { done: number; total: number }) => void) | undefined;
  } = {},
): RestoreResult {
  const { requireReplacedObjects = false } = options;
  const skipped = [...target.skipped, ...(options.alsoSkipped ?? [])];
  const paths = workspacePaths(root);
  const store = createObjectStore(paths.objects);
  const current = options.current ?? scanSource(paths.root, excludes);
  const byTree = restoreManifestTree(
    paths.root,
    target.tree(),
    { tree: current.source.tree(), skipped: current.skipped },
    { store, excludes, requireReplacedObjects, skipped, onProgress: options.onProgress },
  );
  const result =
    byTree ??
    restoreManifest(paths.root, target.manifest(), {
      store,
      excludes,
      current: { manifest: current.source.manifest(), skipped: current.skipped },
      requireReplacedObjects,
      skipped,
      onProgress: options.onProgress,
    });
  const late = result.blocked.filter((b) => b.reason === CHANGED_SINCE_SCAN).map((b) => b.path);
  if (late.length > 0) {
    throw new TimewarpError(
      ErrorCode.CHANGED_SINCE_SCAN,
      `${late.length} path(s) changed since the scan this restore was planned from (written by ` +
        `something other than timewarp meanwhile) and were left as they are, not overwritten: ${late
          .slice(0, 10)
          .join(", ")}${late.length > 10 ? ", …" : ""}`,
      { data: { paths: late, blocked: result.blocked } },
    );
  }
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

/**
 * A position in the watch daemon's journal, taken before a scan: what changes after it, the
 * daemon reports to `changedSince`. Undefined when no daemon answers for these excludes.
 */
export function watchMark(root: string, excludes: readonly string[]): string | undefined {
  if (process.env.TIMEWARP_WATCH === "0") return undefined;
  return watchedChanges(root, undefined, scanScope(excludes)).token;
}

/** The paths the watch daemon saw change since `mark`; undefined when it cannot say. */
function changedSince(
  root: string,
  excludes: readonly string[],
  mark: string,
): string[] | undefined {
  return watchedChanges(root, mark, scanScope(excludes)).changed;
}

/**
 * A restore planned from a scan taken after `mark` (`watchMark`), or from a walk whose stat
 * cache is `walked`, and the scan's skipped paths.
 */
export interface RestoredSince {
  mark: string | undefined;
  walked: StatCache | undefined;
  restored: RestoreResult;
  scanSkipped: SkippedPath[];
}

/**
 * Every difference between the workspace and `expected` (exact: the scan re-reads what its
 * stat data cannot vouch for), by tree unless a name is not plain UTF-8. After a restore by tree
 * (`since`), only the paths that differed then and the paths changed since are read: the rest is
 * as that scan found it, equal to `expected`. The paths changed since are what the daemon saw
 * after the scan's mark, else what a walk by stat finds different from the scan's own stat
 * cache (`changedSinceScan`: no file read, a racy one re-read).
 */
export function verifyAgainst(
  root: string,
  expected: ManifestSource,
  excludes: readonly string[],
  since?: RestoredSince,
): { ok: boolean; differences: WorkspaceDifference[]; checked: number } {
  const paths = workspacePaths(root);
  const byPaths = since === undefined ? null : verifySince(paths.root, expected, excludes, since);
  if (byPaths !== null) return byPaths;
  const current = scanSource(paths.root, excludes);
  const byTree = verifyWorkspaceTree(
    expected.tree(),
    { tree: current.source.tree(), skipped: current.skipped },
    { excludes, skipped: expected.skipped },
  );
  return (
    byTree ??
    verifyWorkspace(paths.root, expected.manifest(), {
      excludes,
      skipped: expected.skipped,
      // a name that is not plain UTF-8: the decoded comparison, which scans again
      statCache: readStatCache(paths.statCache),
      useWatcher: true,
    })
  );
}

/** `verifyWorkspacePaths` after a restore by tree; null when only a whole verify can say. */
function verifySince(
  root: string,
  expected: ManifestSource,
  excludes: readonly string[],
  since: RestoredSince,
): ReturnType<typeof verifyAgainst> | null {
  // Needed only here: a whole verify that scans again after this must not hold it too.
  const walked = since.walked;
  since.walked = undefined;
  const compared = since.restored.compared;
  if (compared === undefined) return null;
  const changed =
    (since.mark === undefined ? undefined : changedSince(root, excludes, since.mark)) ??
    (walked === undefined ? undefined : changedSinceScan(root, walked, excludes));
  if (changed === undefined) return null;
  return verifyWorkspacePaths(root, expected.tree(), {
    planned: compared.differing,
    changed,
    same: compared.same,
    excludes,
    skipped: expected.skipped,
    scanSkipped: since.scanSkipped,
    maxFileBytes: readConfigOf(root).max_file_bytes,
  });
}

export function readBackup(
  root: string,
  backupId: string,
): { record: SnapshotRecord; source: ManifestSource } {
  const record = readSnapshot(root, backupId, { kind: "present_backup" });
  return { record, source: recordSource(root, record) };
}

export function backupIdOf(backupPath: string): string {
  return basename(backupPath);
}

/** The backups' ids, by folder name (none is read). */
export function listBackupIds(root: string): string[] {
  return listSnapshotIds(root, { kind: "present_backup" });
}
