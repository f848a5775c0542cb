/**
 * timemachine: sessions, snapshots, the present/past state machine, travel/return/recover,
 * friction issues and cleanup (seed: timewarp-protocol). Invariant: `.timewarp/` is never
 * snapshotted and never touched by a restore; the present is never lost (it lives in
 * `present_backup/` until a return has verified it back).
 */

export type { EnvFingerprint } from "./env-fingerprint.ts";
export { probeEnvFingerprint } from "./env-fingerprint.ts";
export type {
  CorruptIssue,
  Issue,
  IssueDetail,
  IssueReportInput,
  IssueSummary,
  ReportIssueOptions,
  ReportIssueResult,
} from "./issues.ts";
export {
  fixIssue,
  getIssue,
  IssueReportInputSchema,
  IssueSchema,
  listIssues,
  listIssuesChecked,
  reportIssue,
} from "./issues.ts";
export type {
  DeleteSnapshotResult,
  ManualSnapshotOptions,
  PinResult,
} from "./manual-snapshots.ts";
export {
  createManualSnapshot,
  deleteUserSnapshot,
  isManualSnapshot,
  readPinnedIds,
  setSnapshotPinned,
} from "./manual-snapshots.ts";
export type { PathChange } from "./plan-rewind.ts";
export type { RecoverOutcome, RecoverResult } from "./recover.ts";
export { recover } from "./recover.ts";
export { REDACTED, redactSecrets } from "./redact.ts";
export type { ReturnOptions, ReturnResult } from "./return.ts";
export { returnToPresent } from "./return.ts";
export type {
  RewindOptions,
  RewindResult,
  UndoRewindOptions,
  UndoRewindResult,
} from "./rewind.ts";
export { rewind, undoRewind } from "./rewind.ts";
export type {
  BegunSession,
  CleanupReport,
  StartSessionOptions,
  StartSessionResult,
} from "./session-start.ts";
export { beginSession, startSession } from "./session-start.ts";
export type {
  EndSessionOptions,
  RememberSessionOptions,
  SessionListing,
  SessionRecord,
} from "./sessions.ts";
export { endSession, listSessionStatus, listSessions, rememberSession } from "./sessions.ts";
export type { State, Transition } from "./state.ts";
export { initialState, StateSchema } from "./state.ts";
export type { WorkspaceStatus } from "./status.ts";
export { readStatus } from "./status.ts";
export type { ChatEntry, ChatSelection } from "./transcript.ts";
export { parseTranscript, readGeminiRecording } from "./transcript.ts";
export type { TravelOptions, TravelResult } from "./travel.ts";
export { travel } from "./travel.ts";
export type { TurnListing, TurnView } from "./turn-list.ts";
export { listTurns } from "./turn-list.ts";
export type { CheckpointTurnOptions, CheckpointTurnResult, TurnRecord } from "./turns.ts";
export { checkpointTurn } from "./turns.ts";
