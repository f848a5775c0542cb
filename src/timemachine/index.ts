/**
 * timemachine: sessions, snapshots, the present/past state machine, travel/return/recover,
 * friction issues and cleanup (seed: timewarp-protocol). Invariant: `.timewarp/` is never
 * snapshotted and never touched by a restore.
 */

export type { State } from "./state.ts";
export { initialState, StateSchema } from "./state.ts";
export type { WorkspaceStatus } from "./status.ts";
export { readStatus } from "./status.ts";
