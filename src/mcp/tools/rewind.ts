import { z } from "zod";
import { ErrorCode, TimewarpError } from "../../core/index.ts";
import { defineTool, type ToolDefinition } from "../define-tool.ts";

const lazy = () => import("../../timemachine/index.ts");

const PathChangeSchema = z.object({
  path: z.string(),
  change: z.enum(["added", "deleted", "modified", "mode", "type"]),
});

const TurnSchema = z.object({
  turn: z.number(),
  turn_id: z.string(),
  created_at: z.string(),
  agent: z.string().nullable(),
  prompt: z.string().describe("The prompt's first line, secrets redacted"),
  snapshot_id: z.string(),
  stored: z.boolean(),
  files_changed: z.array(PathChangeSchema),
  files_changed_count: z.number(),
  until: z.enum(["next_turn", "now"]),
  missing: z.string().optional(),
});

/**
 * Turns and rewinds as agent tools: `timewarp_turn_list` (each user prompt's checkpoint and what
 * changed after it) and `timewarp_rewind` (the code back to before a turn, or `undo`).
 */
export function defineRewindTools(): ToolDefinition[] {
  return [
    defineTool({
      name: "timewarp_turn_list",
      title: "List the turns",
      description:
        "The turns of a session (one checkpoint per user prompt, taken as the prompt arrived), oldest first: time, the " +
        "prompt's first line (redacted), and the files that changed until the next prompt (the last turn: until now), " +
        "whoever changed them: edit tools, shell commands, the user. Default session: the one that prompted last.",
      inputSchema: z.object({
        session_id: z.string().optional().describe("Default: the session that prompted last"),
      }),
      outputSchema: z.object({
        session_id: z.string().nullable(),
        turns: z.array(TurnSchema),
        sessions: z.array(
          z.object({ session_id: z.string(), turns: z.number(), last_at: z.string() }),
        ),
        corrupt: z.array(z.object({ file: z.string(), code: z.string(), message: z.string() })),
      }),
      annotations: { readOnlyHint: true },
      handler: async (input, ctx) => {
        const { listTurns } = await lazy();
        return listTurns({
          root: ctx.root,
          sessionId: input.session_id,
        });
      },
    }),
    defineTool({
      name: "timewarp_rewind",
      title: "Rewind the code to before a turn",
      description:
        "Put the code back to how it was when a turn's prompt arrived (shell edits included), as one ledger operation, " +
        "verified against the checkpoint. Paths the checkpoint did not capture, excluded paths and version-control folders " +
        "are left alone. dry_run shows the plan. undo: true takes the last rewind back instead (REVERT_CONFLICT when files " +
        "changed since, unless force). Refused while a travel is active (REWIND_IN_PAST).",
      inputSchema: z.object({
        turn: z
          .union([z.number().int().positive(), z.string()])
          .optional()
          .describe("A turn number of the session (1, 2, …) or a turn id (t_…); not with undo"),
        session_id: z.string().optional().describe("Default: the session that prompted last"),
        dry_run: z.boolean().optional(),
        undo: z.boolean().optional().describe("Take the last rewind back"),
        force: z
          .boolean()
          .optional()
          .describe("With undo: overwrite changes made since the rewind"),
      }),
      outputSchema: z.object({
        dry_run: z.boolean(),
        operation_id: z.string().nullable(),
        session_id: z.string().optional(),
        turn: z.number().optional(),
        turn_id: z.string().optional(),
        snapshot_id: z.string().optional(),
        prompt: z.string().optional(),
        changes: z.array(PathChangeSchema).optional(),
        untouched: z.array(z.string()).optional(),
        left_alone: z.array(z.object({ path: z.string(), reason: z.string() })).optional(),
        verified: z
          .object({ ok: z.literal(true), checked: z.number() })
          .nullable()
          .optional(),
        undo: z.string().nullable().optional(),
        rewind_operation_id: z.string().optional().describe("undo: the rewind taken back"),
        affected_files: z.array(z.string()).optional(),
        message: z.string().optional(),
      }),
      annotations: { destructiveHint: true },
      handler: async (input, ctx) => {
        const tm = await lazy();
        if (input.undo === true) {
          if (input.turn !== undefined) {
            throw new TimewarpError(
              ErrorCode.INVALID_INPUT,
              "undo takes no turn: it takes the last rewind back",
            );
          }
          return tm.undoRewind({
            root: ctx.root,
            dryRun: input.dry_run === true,
            force: input.force === true,
            clock: ctx.clock,
            random: ctx.random,
          });
        }
        if (input.turn === undefined) {
          throw new TimewarpError(
            ErrorCode.INVALID_INPUT,
            "turn is required (a number from timewarp_turn_list, or a turn id), or undo: true",
          );
        }
        return tm.rewind({
          root: ctx.root,
          turn: String(input.turn),
          sessionId: input.session_id,
          dryRun: input.dry_run === true,
          clock: ctx.clock,
          random: ctx.random,
        });
      },
    }),
  ];
}
