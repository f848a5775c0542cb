import { z } from "zod";

/**
 * The journal of a travel or return in flight. Written atomically into state.json before each
 * phase, so a process killed at any instant leaves a record `recover` can finish or undo.
 *
 * travel: `backup` (the present is being copied into present_backup; the workspace is untouched)
 *   → `restore` (the backup is complete; the workspace is being rewritten to the snapshot).
 * return: `restore` (the workspace is being rewritten to the backup, then verified against it).
 * `rolling_back` marks a travel that failed in `restore` and is being undone: recover then
 * finishes the undo instead of retrying the travel.
 */
export const TransitionSchema = z.object({
  kind: z.enum(["travel", "return"]),
  phase: z.enum(["backup", "restore"]),
  snapshot_id: z.string(),
  /** null while the backup is being written (its id is chosen by the store as it publishes it). */
  backup_id: z.string().nullable(),
  rolling_back: z.boolean().optional(),
  started_at: z.string(),
  /** pid of the process that wrote the journal (informative: the lock says who is alive). */
  pid: z.number().int().optional(),
});

export type Transition = z.infer<typeof TransitionSchema>;

/**
 * `.timewarp/state.json` — the seed's §6 fields, plus `schema_version` and the `transition`
 * journal. A file written by the original plugin (no schema_version, no transition) reads fine.
 */
export const StateSchema = z
  .object({
    schema_version: z.literal(1).optional(),
    workspace_root: z.string(),
    session_id: z.string().nullable(),
    session_snapshot_id: z.string().nullable(),
    mode: z.enum(["present", "past"]),
    current_snapshot_id: z.string().nullable(),
    backup_path: z.string().nullable(),
    entered_at: z.string().nullable(),
    guard_token: z.string().nullable(),
    transition: TransitionSchema.nullable().optional(),
  })
  .passthrough();

export type State = z.infer<typeof StateSchema>;

export function initialState(workspaceRoot: string): State {
  return {
    schema_version: 1,
    workspace_root: workspaceRoot,
    session_id: null,
    session_snapshot_id: null,
    mode: "present",
    current_snapshot_id: null,
    backup_path: null,
    entered_at: null,
    guard_token: null,
    transition: null,
  };
}
