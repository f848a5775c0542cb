import { existsSync } from "node:fs";
import { basename } from "node:path";
import { z } from "zod";
import { ErrorCode, TimewarpError } from "./errors.ts";
import type { WorkspacePaths } from "./paths.ts";
import { readJsonFile } from "./schema.ts";

/*
 * The time machine's state (`.timewarp/state.json`) lives in core because every capability that
 * writes the workspace must respect it, not only the time machine that writes it: the ledger
 * refuses edits while a transition awaits recover and records edits made in the past as such
 * (issue 16, class 4). The time machine alone writes it (`timemachine/state-file.ts`).
 */

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

/** The fields of a state in the present: no travel, no backup, no transition under way. */
const PRESENT = {
  mode: "present",
  current_snapshot_id: null,
  backup_path: null,
  entered_at: null,
  guard_token: null,
  transition: null,
} as const;

export function initialState(workspaceRoot: string): State {
  return {
    schema_version: 1,
    workspace_root: workspaceRoot,
    session_id: null,
    session_snapshot_id: null,
    ...PRESENT,
  };
}

/** `state` back in the present (after a return or an undone travel); its session is kept. */
export function inPresent(state: State): State {
  return { ...state, ...PRESENT };
}

/** Read state.json; the initial state when absent; CORRUPT_FILE (naming file and field) when wrong. */
export function readState(paths: WorkspacePaths): State {
  if (!existsSync(paths.state)) return initialState(paths.root);
  return readJsonFile(paths.state, StateSchema);
}

/**
 * Every command that writes (travel, return, edits, reverts, snapshots, session starts, issues)
 * refuses while a travel/return journal is open: `recover` would rewrite the workspace under it.
 * Read-only commands (`status`, lists, history, diffs) still work.
 */
export function assertNoTransition(state: State, paths: WorkspacePaths): void {
  const t = state.transition;
  if (t) {
    throw new TimewarpError(
      ErrorCode.TRANSITION_INTERRUPTED,
      `a ${t.kind} to ${t.kind === "travel" ? t.snapshot_id : "the present"} was interrupted in phase ${t.phase} ` +
        `(started ${t.started_at}, journal in ${paths.state}); run \`timewarp recover\` first`,
      { data: { transition: t } },
    );
  }
}

/** Where an edit made now lands: the present, or the past of a travel (its snapshot and backup). */
export type Timeline =
  | { timeline: "present" }
  | { timeline: "past"; snapshot_id: string; backup_id: string | null; entered_at: string | null };

/**
 * The timeline of a workspace write, after `assertNoTransition`: edits in the past are allowed
 * (the seed's optimization protocol experiments there) but say so, and `return` keeps them.
 */
export function timelineOf(state: State): Timeline {
  if (state.mode !== "past") return { timeline: "present" };
  return {
    timeline: "past",
    snapshot_id: state.current_snapshot_id ?? "",
    backup_id: state.backup_path === null ? null : basename(state.backup_path),
    entered_at: state.entered_at,
  };
}
