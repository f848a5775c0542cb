/**
 * store: the content-addressed workspace store — objects keyed by git blob id, workspace scans
 * with excludes and a stat cache, versioned manifests, snapshot records, restore and verify by
 * difference, garbage collection and fsck. See README.md for the invariants.
 */

export type { ManifestChange, ManifestDiff } from "./diff-manifests.ts";
export { diffManifests, isEmptyDiff } from "./diff-manifests.ts";
export { entryPathBytes, fsPathOf } from "./entry-path.ts";
export { createExcludeMatcher } from "./excludes.ts";
export type { ExportResult } from "./export-snapshot.ts";
export { exportSnapshot } from "./export-snapshot.ts";
export type { DroppedGcOptions, FsckProblem, FsckResult, GcOptions, GcResult } from "./gc.ts";
export {
  collectDroppedObjects,
  collectGarbage,
  collectReferencedOids,
  fsck,
  lastGarbageCollection,
} from "./gc.ts";
export type { InitResult } from "./init-workspace.ts";
export { initWorkspace } from "./init-workspace.ts";
export type { Manifest, ManifestEntry } from "./manifest.ts";
export {
  diffManifestTexts,
  hashManifest,
  ManifestEntrySchema,
  ManifestSchema,
  parseManifestText,
} from "./manifest.ts";
export type { ObjectStore } from "./object-store.ts";
export { createObjectStore } from "./object-store.ts";
export { filterExcluded, notCaptured } from "./plan-restore.ts";
export type {
  BlockedPath,
  MissingObject,
  RestoreOptions,
  RestoreResult,
} from "./restore-manifest.ts";
export { restoreManifest, restoreManifestText } from "./restore-manifest.ts";
export type { ScanOptions, ScanResult, SkippedPath, SkipReason } from "./scan-workspace.ts";
export { scanScope, scanWorkspace } from "./scan-workspace.ts";
export { scanWorkspaceText } from "./snapshot-delta.ts";
export type { RecordKind, SnapshotRecord } from "./snapshot-record.ts";
export { recordId, SnapshotRecordSchema } from "./snapshot-record.ts";
export type {
  CorruptRecord,
  CreateSnapshotOptions,
  CreateSnapshotResult,
  RecordQuery,
  ScanHow,
} from "./snapshots.ts";
export {
  createSnapshot,
  deleteSnapshot,
  listSnapshots,
  listSnapshotsChecked,
  readManifest,
  readManifestText,
  readSnapshot,
} from "./snapshots.ts";
export type { StatCache } from "./stat-cache.ts";
export { peekStatCache, readStatCache } from "./stat-cache.ts";
export type {
  DifferenceKind,
  VerifyOptions,
  VerifyResult,
  WorkspaceDifference,
} from "./verify-workspace.ts";
export { verifyWorkspace, verifyWorkspaceText } from "./verify-workspace.ts";
export type {
  StartWatchOptions,
  StartWatchResult,
  WatchDaemonInfo,
  WatchPaths,
} from "./watch.ts";
export {
  ensureWatchDaemon,
  runningWatchDaemon,
  startWatchDaemon,
  stopWatchDaemon,
  watchedChanges,
  watchPaths,
} from "./watch.ts";
export type { WatchDaemonOptions } from "./watch-daemon.ts";
export { runWatchDaemon } from "./watch-daemon.ts";
export type { FileChange, KeptScan } from "./workspace-scan.ts";
export { scanKept } from "./workspace-scan.ts";
