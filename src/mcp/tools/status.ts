import { z } from "zod";
import { defineTool, type ToolDefinition } from "../define-tool.ts";

const LockSchema = z.object({
  pid: z.number(),
  host: z.string(),
  started_at: z.string(),
  command: z.string().optional(),
});

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
      outputSchema: z.object({
        workspace_root: z.string(),
        initialized: z.boolean(),
        mode: z.enum(["present", "past"]),
        session_id: z.string().nullable(),
        session_snapshot_id: z.string().nullable(),
        current_snapshot_id: z.string().nullable(),
        backup_path: z.string().nullable(),
        entered_at: z.string().nullable(),
        lock: LockSchema.nullable(),
        transition: z
          .object({
            kind: z.enum(["travel", "return"]),
            phase: z.enum(["backup", "restore"]),
            snapshot_id: z.string(),
            backup_id: z.string().nullable(),
            /** A travel that failed in `restore` and is being undone. */
            rolling_back: z.boolean().optional(),
            started_at: z.string(),
            /** The process that wrote the journal (the lock says whether it is alive). */
            pid: z.number().int().optional(),
          })
          .nullable()
          .optional(),
        watcher: z
          .object({ pid: z.number().int(), started_at: z.string(), directories: z.number().int() })
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
      }),
      annotations: { readOnlyHint: true },
      handler: async (_input, ctx) => {
        const { readStatus } = await import("../../timemachine/index.ts");
        return readStatus(ctx.root);
      },
    }),
  ];
}
