import { z } from "zod";
import { LockHolderSchema, StateSchema, TransitionSchema } from "../../core/index.ts";
import { defineTool, type ToolDefinition } from "../define-tool.ts";

export function defineStatusTools(): ToolDefinition[] {
  return [
    defineTool({
      name: "timewarp_status",
      title: "Timewarp status",
      description:
        "Where the workspace stands: mode (present, or past while travelling), the session and its snapshot, " +
        "the snapshot travelled to, who holds the workspace lock, and whether the watch daemon runs (scans then look only at what changed). " +
        "Call it before travel/return to know which one applies.",
      inputSchema: z.object({}),
      outputSchema: StateSchema.pick({
        workspace_root: true,
        mode: true,
        session_id: true,
        session_snapshot_id: true,
        current_snapshot_id: true,
        backup_path: true,
        entered_at: true,
      })
        .extend({
          initialized: z.boolean(),
          lock: LockHolderSchema.nullable(),
          /** A travel/return interrupted mid-way (`recover` finishes or undoes it). */
          transition: TransitionSchema.nullable(),
          watcher: z
            .object({
              pid: z.number().int(),
              started_at: z.string(),
              directories: z.number().int(),
            })
            .nullable(),
          past_work: z
            .array(
              z.object({
                backup_id: z.string(),
                snapshot_id: z.string(),
                saved_at: z.string(),
                files: z.number().int(),
                patch_path: z.string(),
              }),
            )
            .describe("Work done in past travels, kept as patches by return (newest first)"),
        })
        // the state file keeps unknown keys (passthrough); the status names each of its fields
        .strip(),
      annotations: { readOnlyHint: true },
      handler: async (_input, ctx) => {
        const { readStatus } = await import("../../timemachine/index.ts");
        return readStatus(ctx.root);
      },
    }),
  ];
}
