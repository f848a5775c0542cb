import { z } from "zod";
import { ErrorCode, TimewarpError } from "../../core/index.ts";
import type { LedgerContext } from "../../ledger/index.ts";
import { defineTool, type ToolContext, type ToolDefinition } from "../define-tool.ts";

/**
 * The v2 ledger tools, under the seed's names and with its parameter and return schemas
 * (`snapshot-system-v2.zh.md`): every edit tool takes `dryRun` and returns `snapshotId` /
 * `previewDiff`; ReverseOp reports conflicts as `success: false` with `conflicts`, as the seed's
 * return schema says, rather than as a tool error.
 */
const dryRun = z
  .boolean()
  .optional()
  .describe("If true, only return previewDiff; write and record nothing");
const description = z.string().optional().describe("What this edit does (kept in the history)");
const force = z
  .boolean()
  .optional()
  .describe(
    "Write inside a version-control folder (.git, .hg, .svn, .jj, .bzr) anyway; refused with PROTECTED_PATH otherwise",
  );

const CommonReturns = z.object({
  success: z.boolean(),
  message: z.string().optional(),
  snapshotId: z
    .string()
    .optional()
    .describe("The recorded operation id (absent on dryRun or when nothing changed)"),
  previewDiff: z.string().optional().describe("The git-format diff of the change"),
  affectedFiles: z.array(z.string()).optional(),
  dryRun: z.boolean().optional(),
  timeline: z
    .literal("past")
    .optional()
    .describe("Made during a travel: recorded as such; `return` keeps it as a patch"),
});

const SummarySchema = z.object({
  totalOperations: z.number(),
  affectedFiles: z.array(z.string()),
  linesAdded: z.number(),
  linesRemoved: z.number(),
});

const ledger = () => import("../../ledger/index.ts");
const lctx = (ctx: ToolContext) => ({ root: ctx.root, clock: ctx.clock, random: ctx.random });
/**
 * The context of the edit tools: the ledger's, plus the drift guards, so an edit an agent makes
 * through these tools meets the workspace's goal as its own edit tools do through PreToolUse.
 */
async function guardedCtx(ctx: ToolContext): Promise<LedgerContext> {
  const { guardEdit } = await import("../../memory/index.ts");
  return {
    ...lctx(ctx),
    guard: (edit) =>
      guardEdit({
        root: ctx.root,
        edit: { tool: edit.tool, paths: edit.paths, diff: edit.diff },
        clock: ctx.clock,
        record: !edit.dryRun,
      }),
  };
}
const opt = <K extends string, V>(key: K, value: V | undefined) =>
  (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };

export function defineLedgerTools(): ToolDefinition[] {
  return [
    defineTool({
      name: "ApplyEditBlock",
      title: "Apply an edit block",
      description:
        "Replace the one exact occurrence of searchBlock in a workspace file by replaceBlock, and record the edit. " +
        "searchBlock must match exactly once (whitespace included): EDIT_BLOCK_NOT_FOUND, or EDIT_BLOCK_AMBIGUOUS with the " +
        "candidate line numbers (add surrounding lines). dryRun previews without writing.",
      inputSchema: z.object({
        path: z.string().describe("Workspace-relative file path"),
        searchBlock: z.string().describe("Exact text to find (must occur once)"),
        replaceBlock: z.string().describe("Replacement text"),
        description,
        dryRun,
        force,
      }),
      outputSchema: CommonReturns,
      handler: async (input, ctx) => (await ledger()).applyEditBlock(await guardedCtx(ctx), input),
    }),
    defineTool({
      name: "ApplyWholeFileEdit",
      title: "Write a whole file",
      description:
        "Set the whole content of a workspace file (created if absent; mode kept), and record the edit. Give content " +
        "(UTF-8 text) or contentBase64 (any bytes). dryRun previews without writing.",
      inputSchema: z.object({
        path: z.string().describe("Workspace-relative file path"),
        content: z.string().optional().describe("The new content as text"),
        contentBase64: z.string().optional().describe("The new content as base64 (binary files)"),
        description,
        dryRun,
        force,
      }),
      outputSchema: CommonReturns,
      handler: async (input, ctx) => {
        const { applyWholeFileEdit } = await ledger();
        if ((input.content === undefined) === (input.contentBase64 === undefined)) {
          throw new TimewarpError(
            ErrorCode.INVALID_INPUT,
            "give exactly one of content or contentBase64",
          );
        }
        return applyWholeFileEdit(await guardedCtx(ctx), {
          path: input.path,
          content: input.content ?? Buffer.from(input.contentBase64 ?? "", "base64"),
          ...opt("description", input.description),
          ...opt("dryRun", input.dryRun),
          ...opt("force", input.force),
        });
      },
    }),
    defineTool({
      name: "ApplyRangedEdit",
      title: "Replace a line range",
      description:
        "Replace lines startLine..endLine (1-based, inclusive) of a workspace file by content, and record the edit. " +
        "endLine = startLine - 1 inserts before startLine; startLine = lines + 1 appends. RANGE_INVALID outside the file.",
      inputSchema: z.object({
        path: z.string().describe("Workspace-relative file path"),
        startLine: z.number().int().describe("First line to replace (1-based)"),
        endLine: z.number().int().describe("Last line to replace (inclusive)"),
        content: z.string().describe("Replacement lines"),
        description,
        dryRun,
        force,
      }),
      outputSchema: CommonReturns,
      handler: async (input, ctx) => (await ledger()).applyRangedEdit(await guardedCtx(ctx), input),
    }),
    defineTool({
      name: "ApplyUnifiedDiff",
      title: "Apply a unified diff",
      description:
        "Apply a unified or git-format diff (several files, creates, deletes, renames, mode changes) to the workspace " +
        "as one recorded operation, all or nothing: DIFF_APPLY_CONFLICT names the file and hunk that does not apply.",
      inputSchema: z.object({
        diff: z.string().describe("The diff text"),
        description,
        dryRun,
        force,
      }),
      outputSchema: CommonReturns,
      handler: async (input, ctx) =>
        (await ledger()).applyUnifiedDiff(await guardedCtx(ctx), input),
    }),
    defineTool({
      name: "Delete",
      title: "Delete a file or directory",
      description:
        "Delete a workspace file, or a directory with its contents; recorded, so ReverseOp brings it back.",
      inputSchema: z.object({
        path: z.string().describe("Workspace-relative path"),
        dryRun,
        force,
      }),
      outputSchema: CommonReturns,
      annotations: { destructiveHint: true },
      handler: async (input, ctx) => (await ledger()).deletePath(await guardedCtx(ctx), input),
    }),
    defineTool({
      name: "CreateDirectory",
      title: "Create a directory",
      description: "Create a directory and any missing parents; recorded.",
      inputSchema: z.object({
        path: z.string().describe("Workspace-relative path"),
        dryRun,
        force,
      }),
      outputSchema: CommonReturns,
      handler: async (input, ctx) => (await ledger()).createDirectory(await guardedCtx(ctx), input),
    }),
    defineTool({
      name: "ReadSnapshotDiff",
      title: "Read an operation's diff",
      description:
        "The diff one recorded operation made, as unified (default), context or git format.",
      inputSchema: z.object({
        snapshotId: z.string().describe("Operation id"),
        format: z
          .enum(["unified", "context", "git"])
          .optional()
          .describe("Diff format, default unified"),
      }),
      outputSchema: z.object({
        success: z.boolean(),
        diff: z.string().optional(),
        snapshot: z
          .object({
            id: z.string(),
            timestamp: z.string(),
            description: z.string(),
            tool: z.string(),
            affectedFiles: z.array(z.string()),
          })
          .optional(),
      }),
      annotations: { readOnlyHint: true },
      handler: async (input, ctx) =>
        (await ledger()).readSnapshotDiff(lctx(ctx), {
          snapshotId: input.snapshotId,
          ...opt("format", input.format),
        }),
    }),
    defineTool({
      name: "GetEditHistory",
      title: "Edit history",
      description:
        "Recorded operations, newest first, filtered by time (ISO), tool names and a file glob; paginated: pass " +
        "pagination.nextCursor as cursor for the next page.",
      inputSchema: z.object({
        limit: z.number().int().min(1).max(100).optional().describe("Page size, default 20"),
        includeDiffs: z.boolean().optional().describe("Include each diff, default false"),
        since: z.string().optional().describe("From this ISO time"),
        until: z.string().optional().describe("Up to this ISO time"),
        toolFilter: z.array(z.string()).optional().describe("Only these tools"),
        fileFilter: z
          .string()
          .optional()
          .describe("Only operations touching a path matching this glob"),
        cursor: z.string().optional().describe("nextCursor of the previous page"),
      }),
      outputSchema: z.object({
        success: z.boolean(),
        history: z.array(
          z.object({
            id: z.string(),
            timestamp: z.string(),
            description: z.string(),
            tool: z.string(),
            affectedFiles: z.array(z.string()),
            diff: z.string().optional(),
            metadata: z.object({ linesChanged: z.number(), executionTimeMs: z.number() }),
            recordPresent: z.boolean().optional(),
          }),
        ),
        pagination: z.object({
          total: z.number(),
          hasMore: z.boolean(),
          nextCursor: z.string().optional(),
        }),
      }),
      annotations: { readOnlyHint: true },
      handler: async (input, ctx) => (await ledger()).getEditHistory(lctx(ctx), input),
    }),
    defineTool({
      name: "ReverseOp",
      title: "Revert operations",
      description:
        "Undo an operation (or a milestone id): exact pre-image if the file is unchanged since, else the reverse diff " +
        "applied strictly; if any hunk conflicts nothing changes and success is false with conflicts. targetSnapshot " +
        "reverts every operation after it (newest first, all or nothing). force overwrites later changes. The revert " +
        "is recorded as an operation of its own (newSnapshotId).",
      inputSchema: z.object({
        snapshotId: z.string().describe("Operation (or milestone) id to revert"),
        dryRun: z.boolean().optional().describe("Preview only, default false"),
        targetSnapshot: z
          .string()
          .optional()
          .describe("Revert every operation recorded after this one"),
        force: z
          .boolean()
          .optional()
          .describe("Ignore conflicts by restoring stored pre-images, default false"),
      }),
      outputSchema: z.object({
        success: z.boolean(),
        message: z.string().optional(),
        reversedDiff: z.string().optional(),
        affectedFiles: z.array(z.string()).optional(),
        conflicts: z.array(z.string()).optional(),
        conflictDetails: z
          .array(
            z.object({
              operationId: z.string(),
              path: z.string(),
              hunk: z.number(),
              header: z.string(),
              reason: z.string(),
              expectedAt: z.number(),
            }),
          )
          .optional(),
        newSnapshotId: z.string().optional(),
        revertedIds: z.array(z.string()).optional(),
      }),
      annotations: { destructiveHint: true },
      handler: async (input, ctx) => (await ledger()).reverseOp(lctx(ctx), input),
    }),
    defineTool({
      name: "CreateMilestone",
      title: "Create a milestone",
      description:
        "Group recorded operations under a title; the summary counts operations, files and the net lines added/removed.",
      inputSchema: z.object({
        title: z.string(),
        description: z.string(),
        snapshotIds: z.array(z.string()).describe("Operation ids"),
        tags: z.array(z.string()).optional(),
      }),
      outputSchema: z.object({
        success: z.boolean(),
        milestoneId: z.string().optional(),
        summary: SummarySchema.optional(),
      }),
      handler: async (input, ctx) => (await ledger()).createMilestone(lctx(ctx), input),
    }),
    defineTool({
      name: "GetMilestones",
      title: "List milestones",
      description:
        "Milestones, oldest first, optionally with their combined (net) diff and filtered by tags (any of). " +
        "Milestone files that do not read are named in corrupt.",
      inputSchema: z.object({
        includeDiffs: z.boolean().optional().describe("Include combinedDiff, default false"),
        tags: z.array(z.string()).optional(),
      }),
      outputSchema: z.object({
        success: z.boolean(),
        milestones: z.array(
          z.object({
            id: z.string(),
            title: z.string(),
            description: z.string(),
            timestamp: z.string(),
            snapshotIds: z.array(z.string()).optional(),
            summary: SummarySchema,
            combinedDiff: z.string().optional(),
            tags: z.array(z.string()),
          }),
        ),
        corrupt: z
          .array(
            z.object({ id: z.string(), code: z.string(), message: z.string(), file: z.string() }),
          )
          .describe("Milestone files that do not read (run `timewarp fsck`)"),
      }),
      annotations: { readOnlyHint: true },
      handler: async (input, ctx) => (await ledger()).getMilestones(lctx(ctx), input),
    }),
    defineTool({
      name: "timewarp_milestone_proposals",
      title: "Proposed milestones",
      description:
        "Milestones the ledger suggests over operations not yet in one: a group ends when tests passed or the user " +
        "said a stage is done (signals), after a long pause, or when the work moves to other modules. Accept one with " +
        "timewarp_milestone_accept.",
      inputSchema: z.object({
        pauseMinutes: z
          .number()
          .positive()
          .optional()
          .describe("A gap this long ends a group (default 30)"),
      }),
      outputSchema: z.object({
        success: z.boolean(),
        proposals: z.array(
          z.object({
            id: z.string(),
            snapshotIds: z.array(z.string()),
            reason: z.enum(["tests_passed", "explicit", "pause", "module_switch", "end"]),
            suggestedTitle: z.string(),
            affectedFiles: z.array(z.string()),
            startedAt: z.string(),
            endedAt: z.string(),
          }),
        ),
      }),
      annotations: { readOnlyHint: true },
      handler: async (input, ctx) => {
        const { listMilestoneProposals } = await ledger();
        const proposals = listMilestoneProposals(
          lctx(ctx),
          input.pauseMinutes === undefined ? {} : { pauseMs: input.pauseMinutes * 60_000 },
        );
        return { success: true, proposals };
      },
    }),
    defineTool({
      name: "timewarp_milestone_accept",
      title: "Accept a proposed milestone",
      description: "Create the milestone a proposal (from timewarp_milestone_proposals) suggests.",
      inputSchema: z.object({
        proposalId: z.string(),
        title: z.string().optional(),
        description: z.string().optional(),
        tags: z.array(z.string()).optional(),
      }),
      outputSchema: z.object({
        success: z.boolean(),
        milestoneId: z.string().optional(),
        summary: SummarySchema.optional(),
      }),
      handler: async (input, ctx) => (await ledger()).acceptMilestoneProposal(lctx(ctx), input),
    }),
  ];
}
