import { z } from "zod";

/** `.timewarp/state.json` — the seed's §6 fields. The time-machine work extends it with its journal. */
export const StateSchema = z
  .object({
    workspace_root: z.string(),
    session_id: z.string().nullable(),
    session_snapshot_id: z.string().nullable(),
    mode: z.enum(["present", "past"]),
    current_snapshot_id: z.string().nullable(),
    backup_path: z.string().nullable(),
    entered_at: z.string().nullable(),
    guard_token: z.string().nullable(),
  })
  .passthrough();

export type State = z.infer<typeof StateSchema>;

export function initialState(workspaceRoot: string): State {
  return {
    workspace_root: workspaceRoot,
    session_id: null,
    session_snapshot_id: null,
    mode: "present",
    current_snapshot_id: null,
    backup_path: null,
    entered_at: null,
    guard_token: null,
  };
}
