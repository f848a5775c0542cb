/**
 * store: the content-addressed workspace store — objects keyed by git blob id, workspace scans
 * with excludes and a stat cache, versioned manifests, snapshot records, restore and verify by
 * difference, garbage collection and fsck. See README.md for the invariants.
 */

export { changedSinceScan } from "./changed-since-scan.ts";
export type { ManifestDiff } from "./diff-manifests.ts";
export { diffManifests, diffManifestTrees } from "./diff-manifests.ts";
export type { ManifestTree } from "./diff-trees.ts";
export { entriesAt, treeLeavesRead, treeOfManifest, treeOfText, treeText } from "./diff-trees.ts";
export { entryPathBytes, fsPathOf } from "./entry-path.ts";
export { createExcludeMatcher } from "./excludes.ts";
export { exportSnapshot } from "./export-snapshot.ts";
export type { FsckProblem, FsckResult } from "./gc.ts";
export {
  collectDroppedObjects,
  collectGarbage,
  collectReferencedOids,
  fsck,
  lastGarbageCollection,
} from "./gc.ts";
export { initWorkspace } from "./init-workspace.ts";
export type { Manifest, ManifestEntry } from "./manifest.ts";
export { forgetManifestTexts, ManifestSchema, parseManifestText } from "./manifest.ts";
export { forgetPackBases } from "./object-packs.ts";
export type { ObjectStore } from "./object-store.ts";
export { createObjectStore } from "./object-store.ts";
export { filterExcluded, notCaptured } from "./plan-restore.ts";
export type { RestoreResult } from "./restore-manifest.ts";
export {
  CHANGED_SINCE_SCAN,
  pathsChangedSince,
  restoreManifest,
  restoreManifestText,
  restoreManifestTree,
} from "./restore-manifest.ts";
export type { SkippedPath } from "./scan-workspace.ts";
export { scanScope, scanWorkspace } from "./scan-workspace.ts";
export { scanWorkspaceText } from "./snapshot-delta.ts";
export type { SnapshotRecord } from "./snapshot-record.ts";
export { recordId } from "./snapshot-record.ts";
export type { CreateSnapshotOptions, CreateSnapshotResult, ScanHow } from "./snapshots.ts";
export {
  createSnapshot,
  deleteSnapshot,
  listSnapshotIds,
  listSnapshots,
  listSnapshotsChecked,
  readManifest,
  readManifestText,
  readManifestTree,
  readSnapshot,
} from "./snapshots.ts";
export type { StatCache } from "./stat-cache.ts";
export { peekStatCache, readStatCache } from "./stat-cache.ts";
export type { WorkspaceDifference } from "./verify-workspace.ts";
export {
  verifyWorkspace,
  verifyWorkspacePaths,
  verifyWorkspaceTree,
} from "./verify-workspace.ts";
export {
  ensureWatchDaemon,
  runningWatchDaemon,
  startWatchDaemon,
  stopWatchDaemon,
  watchedChanges,
  watchPaths,
} from "./watch.ts";
export { runWatchDaemon } from "./watch-daemon.ts";
export type { PrimeResult } from "./watch-prime.ts";
export { primeWatchedCache } from "./watch-prime.ts";
export type { FileChange } from "./workspace-scan.ts";
export { primeKept, scanKept } from "./workspace-scan.ts";
export { scanWorkspaceTree } from "./workspace-tree.ts";
