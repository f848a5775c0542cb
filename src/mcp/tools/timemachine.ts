import { z } from "zod";
import { defineTool, type ToolDefinition } from "../define-tool.ts";

const lazy = () => import("../../timemachine/index.ts");

const TransitionSchema = z.object({
  kind: z.enum(["travel", "return"]),
  phase: z.enum(["backup", "restore"]),
  snapshot_id: z.string(),
  backup_id: z.string().nullable(),
  started_at: z.string(),
  rolling_back: z.boolean().optional(),
  pid: z.number().optional(),
});

const Fingerprint = z.object({ files: z.number(), bytes: z.number(), manifest_hash: z.string() });

const IssueSummarySchema = z.object({
  issue_id: z.string(),
  status: z.enum(["open", "fixed"]),
  created_at: z.string(),
  snapshot_id: z.string(),
  symptom: z.string(),
  success_criteria: z.string(),
});

/** An issue the listing could not read: one damaged issue.json hides none of the others. */
const CorruptSchema = z.object({
  issue_id: z.string(),
  code: z.string(),
  message: z.string(),
  file: z.string(),
});

/**
 * The time machine's agent tools under the original plugin's names (seed §6, §10):
 * `timewarp_travel`, `timewarp_return`, `timewarp_recover`, `issue_report`,
 * `timewarp_issue_list`, `timewarp_issue_get`.
 */
export function defineTimemachineTools(): ToolDefinition[] {
  return [
    defineTool({
      name: "issue_report",
      title: "Report a friction issue",
      description:
        "Record a friction point (incoherence, repeated retries, a failure) without interrupting the user's task. " +
        "Links the current session's snapshot, exports the conversation to chat.md (secrets redacted) and creates " +
        "an experiment.md template. success_criteria must be verifiable: trigger, expected behaviour, observable evidence. " +
        "Returns ok with the issue_id.",
      inputSchema: z.object({
        task_context: z.string().describe("What the user asked the agent to do"),
        symptom: z.string().describe("The friction observed"),
        success_criteria: z.string().describe("Verifiable acceptance criteria (required)"),
        suspected_cause: z.string().optional().describe("What may cause it"),
        chat_summary: z.string().optional().describe("1-3 sentences on the conversation"),
        session_id: z
          .string()
          .optional()
          .describe("Your session id (default: the most recent session)"),
      }),
      outputSchema: z.object({
        ok: z.literal(true),
        issue_id: z.string(),
        snapshot_id: z.string(),
        session_id: z.string().nullable(),
        path: z.string(),
        chat_path: z.string(),
        experiment_path: z.string(),
      }),
      handler: async (input, ctx) => {
        const { reportIssue } = await lazy();
        const { session_id, ...fields } = input;
        const r = await reportIssue({
          root: ctx.root,
          clock: ctx.clock,
          random: ctx.random,
          ...fields,
          sessionId: session_id,
        });
        return {
          ok: true as const,
          issue_id: r.issue_id,
          snapshot_id: r.snapshot_id,
          session_id: r.session_id,
          path: r.path,
          chat_path: r.chat_path,
          experiment_path: r.experiment_path,
        };
      },
    }),
    defineTool({
      name: "timewarp_issue_list",
      title: "List friction issues",
      description:
        "Step 1 of the optimization protocol: list issues, open ones by default (status 'all' for every one), newest first. " +
        "Issues whose issue.json does not read are named in corrupt.",
      inputSchema: z.object({
        status: z.enum(["open", "fixed", "all"]).optional().describe("Default open"),
      }),
      outputSchema: z.object({
        issues: z.array(IssueSummarySchema),
        corrupt: z
          .array(CorruptSchema)
          .describe("Issues whose issue.json does not read: the file is named, the others listed"),
      }),
      annotations: { readOnlyHint: true },
      handler: async (input, ctx) => {
        const { listIssuesChecked } = await lazy();
        return listIssuesChecked({ root: ctx.root, status: input.status ?? "open" });
      },
    }),
    defineTool({
      name: "timewarp_issue_get",
      title: "Get a friction issue",
      description:
        "An issue's details (success_criteria, snapshot_id, chat_summary, …) and the paths of its issue.json, chat.md and experiment.md.",
      inputSchema: z.object({ issue_id: z.string() }),
      outputSchema: z.object({
        issue_id: z.string(),
        status: z.enum(["open", "fixed"]),
        created_at: z.string(),
        snapshot_id: z.string(),
        task_context: z.string(),
        symptom: z.string(),
        success_criteria: z.string(),
        suspected_cause: z.string().nullable().optional(),
        chat_summary: z.string().nullable().optional(),
        session_id: z.string().nullable().optional(),
        fixed_at: z.string().nullable().optional(),
        path: z.string(),
        issue_path: z.string(),
        chat_path: z.string(),
        experiment_path: z.string(),
      }),
      annotations: { readOnlyHint: true },
      handler: async (input, ctx) => {
        const { getIssue } = await lazy();
        return getIssue({ root: ctx.root, issueId: input.issue_id });
      },
    }),
    defineTool({
      name: "timewarp_travel",
      title: "Travel to a snapshot",
      description:
        "Go to the past: back up the present workspace, then restore the snapshot (e.g. an issue's snapshot_id) to reproduce " +
        "and experiment. Only from the present (NESTED_TRAVEL otherwise). Write what you learn into the issue's experiment.md; " +
        "timewarp_return brings the present back and keeps the experiment's changes as a patch. Paths the snapshot did not " +
        "capture (too large, unreadable, special files) are left as they are: `untouched`, and the snapshot entries below them `left_alone`.",
      inputSchema: z.object({ snapshot_id: z.string() }),
      outputSchema: z.object({
        mode: z.literal("past"),
        snapshot_id: z.string(),
        backup_id: z.string(),
        backup_path: z.string(),
        entered_at: z.string(),
        backup_fingerprint: Fingerprint,
        written: z.number(),
        deleted: z.number(),
        unchanged: z.number(),
        untouched: z.array(z.string()),
        left_alone: z.array(z.string()),
        duration_ms: z.number(),
      }),
      annotations: { destructiveHint: true },
      handler: async (input, ctx) => {
        const { travel } = await lazy();
        return travel({
          root: ctx.root,
          snapshotId: input.snapshot_id,
          clock: ctx.clock,
          random: ctx.random,
        });
      },
    }),
    defineTool({
      name: "timewarp_return",
      title: "Return to the present",
      description:
        "Back to the present: restore the backup taken by timewarp_travel and verify the whole workspace against it. " +
        "The experiment's workspace changes are not brought back but kept as a patch (past_work_path): in " +
        ".timewarp/past-work/, or with save_patch=<issue_id> in that issue's folder (memory only, never applied). " +
        "Only while in the past (NOT_IN_PAST otherwise).",
      inputSchema: z.object({ save_patch: z.string().optional().describe("An issue_id") }),
      outputSchema: z.object({
        mode: z.literal("present"),
        snapshot_id: z.string(),
        backup_id: z.string(),
        verified: Fingerprint.extend({ checked: z.number() }),
        written: z.number(),
        deleted: z.number(),
        patch_path: z.string().nullable(),
        patch_files: z.number(),
        past_work_path: z.string().nullable(),
        past_work_files: z.number(),
        duration_ms: z.number(),
      }),
      annotations: { destructiveHint: true },
      handler: async (input, ctx) => {
        const { returnToPresent } = await lazy();
        return returnToPresent({
          root: ctx.root,
          clock: ctx.clock,
          savePatch: input.save_patch,
        });
      },
    }),
    defineTool({
      name: "timewarp_recover",
      title: "Recover an interrupted travel/return",
      description:
        "After TRANSITION_INTERRUPTED or RETURN_VERIFY_FAILED, or an edit killed mid-way: finish or undo the travel/return a crash interrupted (ending fully present or fully past), and the ledger operation it left pending (recorded, or rolled back). " +
        "What the workspace held and no record did (a file written during the return) is first kept as a patch (kept_path, in .timewarp/recover-kept/; git apply in the present brings it back).",
      inputSchema: z.object({}),
      outputSchema: z.object({
        outcome: z.string(),
        mode: z.enum(["present", "past"]),
        transition: TransitionSchema.nullable(),
        ledger: z.object({
          outcome: z.string(),
          operationId: z.string().optional(),
          tool: z.string().optional(),
          restored: z.array(z.string()).optional(),
          kept: z.array(z.string()).optional(),
        }),
        snapshot_id: z.string().nullable(),
        backup_path: z.string().nullable(),
        kept_path: z.string().nullable(),
        kept_files: z.number(),
      }),
      handler: async (_input, ctx) => {
        const { recover } = await lazy();
        return recover({ root: ctx.root, clock: ctx.clock });
      },
    }),
  ];
}
