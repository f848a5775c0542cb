/**
 * timemachine: sessions, snapshots, the present/past state machine, travel/return/recover,
 * friction issues and cleanup (seed: timewarp-protocol). Invariant: `.timewarp/` is never
 * snapshotted and never touched by a restore; the present is never lost (it lives in
 * `present_backup/` until a return has verified it back).
 */

export type { IssueFiles, IssuePatch } from "./issue-files.ts";
/** An issue with its chat (parsed), experiment log and saved patches, for the dashboard. */
export { readIssueFiles } from "./issue-files.ts";
export type { Issue } from "./issues.ts";
export { fixIssue, getIssue, listIssues, listIssuesChecked, reportIssue } from "./issues.ts";
export {
  createManualSnapshot,
  deleteUserSnapshot,
  isManualSnapshot,
  readPinnedIds,
  setSnapshotPinned,
} from "./manual-snapshots.ts";
export type { PathChange } from "./plan-rewind.ts";
export { recover } from "./recover.ts";
export { REDACTED, redactSecrets } from "./redact.ts";
export { returnToPresent } from "./return.ts";
export { rewind, undoRewind } from "./rewind.ts";
export type { CleanupReport, StartSessionOptions, StartSessionResult } from "./session-start.ts";
export { beginSession, startSession, warmEnvFingerprint } from "./session-start.ts";
export type { SessionListing } from "./sessions.ts";
export { endSession, listSessionStatus, listSessions, rememberSession } from "./sessions.ts";
export { diffSnapshotFile, diffSnapshots } from "./snapshot-diff.ts";
export { listSnapshotSummaries } from "./snapshot-list.ts";
export type { State, Transition } from "./state.ts";
export { initialState, StateSchema } from "./state.ts";
export { readStatus } from "./status.ts";
export { geminiText, parseTranscript, readGeminiRecording } from "./transcript.ts";
export { travel } from "./travel.ts";
export { listTurns, turnsAtSnapshot } from "./turn-list.ts";
export { checkpointTurn } from "./turns.ts";
