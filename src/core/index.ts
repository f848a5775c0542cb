/**
 * core: the shared floor every capability stands on — errors with stable codes, atomic writes,
 * the inter-process lock, ids, the injectable clock and random source, config, schema helpers
 * and the event bus. Nothing here imports anything above it.
 */

export type { AtomicWriteOptions, SyncSet } from "./atomic-write.ts";
export {
  fsyncAll,
  fsyncDirectory,
  fsyncFile,
  isTempName,
  tempPathFor,
  writeFileAtomic,
  writeJsonAtomic,
} from "./atomic-write.ts";
export type { Clock, Random } from "./clock.ts";
export { createFixedClock, createSeededRandom, systemClock, systemRandom } from "./clock.ts";
export type { Config } from "./config.ts";
export {
  ConfigSchema,
  DEFAULT_EXCLUDES,
  effectiveExcludes,
  parseConfig,
  readConfig,
} from "./config.ts";
export type { TimewarpErrorOptions } from "./errors.ts";
export {
  ErrorCode,
  errnoCode,
  fromSystemError,
  isTimewarpError,
  TimewarpError,
  toTimewarpError,
} from "./errors.ts";
export type { BusEvent, EventName, ReadEventsResult } from "./events.ts";
export { appendEvent, EventRegistry, parseEventLine, readEvents } from "./events.ts";
export { faultPoint } from "./fault-points.ts";
export type { GitFileMode } from "./hash.ts";
export { EMPTY_BLOB_ID, gitBlobId, gitFileMode } from "./hash.ts";
export {
  assertIssueId,
  BACKUP_ID_PATTERN,
  createBackupId,
  createIssueId,
  createJobId,
  createShortId,
  createSnapshotId,
  createTurnId,
  ISSUE_ID_PATTERN,
  JOB_ID_PATTERN,
  SNAPSHOT_ID_PATTERN,
  TURN_ID_PATTERN,
  timeStamp,
} from "./ids.ts";
export type { InputPathOptions } from "./input-file.ts";
export { assertInputDirectory, inputPathError, readInputFile } from "./input-file.ts";
export type { AcquireLockOptions, LockHandle, LockHolder, WaitForLockOptions } from "./lock.ts";
export {
  acquireLock,
  acquireLockQueued,
  acquireLockWaiting,
  clearLockOfThread,
  LockHolderSchema,
  readLockHolder,
  withLock,
} from "./lock.ts";
export type { WorkspacePaths } from "./paths.ts";
export { DATA_DIR, workspacePaths } from "./paths.ts";
export { isProcessAlive, isSameProcess, parentPidOf, processStartOf } from "./process-alive.ts";
export type {
  OnProgress,
  ProgressChannel,
  ProgressChannelOptions,
  ProgressRecord,
  ProgressUpdate,
} from "./progress-channel.ts";
export {
  createProgressChannel,
  createProgressTick,
  formatProgress,
  ProgressRecordSchema,
  progressDir,
  readProgress,
} from "./progress-channel.ts";
export type { FileSink, SafeWriteOptions, WorkspaceRelPath } from "./safe-path.ts";
export {
  assertSafeRelPath,
  assertSafeToRead,
  pathBytesOf,
  pathTextOf,
  safeChmod,
  safeLink,
  safeMkdir,
  safeRmdir,
  safeSymlink,
  safeUnlink,
  safeWriteFile,
  safeWriteFileWith,
  toFsPath,
  unsafeRelPathReason,
} from "./safe-path.ts";
export type { Result } from "./schema.ts";
export {
  formatZodIssues,
  parseJsonText,
  readEachFlagged,
  readJsonFile,
  readJsonValue,
  validate,
} from "./schema.ts";
export { TIMEWARP_VERSION } from "./version.ts";
export {
  ensureDataDir,
  ensureStoreIgnored,
  findWorkspaceRoot,
  resolveWorkspaceRoot,
} from "./workspace-root.ts";
export type { State, Timeline, Transition } from "./workspace-state.ts";
export {
  assertNoTransition,
  initialState,
  inPresent,
  readState,
  StateSchema,
  TransitionSchema,
  timelineOf,
} from "./workspace-state.ts";
