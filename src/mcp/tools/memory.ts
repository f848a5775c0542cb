import { resolve } from "node:path";
import { z } from "zod";
import { defineTool, type ToolDefinition } from "../define-tool.ts";

const Action = z.enum(["ok", "warn", "rollback"]);

const CardExplanationSchema = z.object({
  pattern_id: z.string(),
  title: z.string(),
  score: z.number(),
  coverage: z.number(),
  min_coverage: z.number(),
  min_tokens: z.number(),
  matched: z.array(z.object({ token: z.string(), idf: z.number(), bm25: z.number() })),
  rejected: z.string().nullable(),
});

/** `memory_retrieve`'s `explain` (memory's `Explanation`). */
const ExplanationSchema = z.object({
  query: z.array(z.string()),
  returned: z.array(CardExplanationSchema),
  rejected: z.array(CardExplanationSchema),
});

/** `memory_retrieve`, `guard_check` and `memory_import`: the memory lab for agents. */
export function defineMemoryTools(): ToolDefinition[] {
  return [
    // memory_card: a run's verdict from evidence and its pattern card (verdict.ts, run-steps.ts)
    defineTool({
      name: "memory_card",
      title: "Judge a run and distill its pattern card",
      description:
        "Judge a memory run (a directory with goal.json and events.jsonl, or its id under .timewarp/memory/runs/) " +
        "from evidence — an external verdict file (SWE-bench report.json), the required tests' last known results, " +
        "or the last test after the last edit — and distill a pattern card when it succeeded (high-value when drift " +
        "was caught and fixed). Says the verdict, its reasons, and why a card was or was not made; force distills anyway.",
      inputSchema: z.object({
        run: z.string().min(1).describe("a run directory or id"),
        force: z
          .boolean()
          .optional()
          .describe("distill even when the verdict is failure or unknown"),
      }),
      outputSchema: z.object({
        run_id: z.string(),
        verdict: z.object({
          outcome: z.enum(["success", "failure", "unknown"]),
          high_value: z.boolean(),
          reasons: z.array(z.string()),
        }),
        card: z.object({ pattern_id: z.string(), title: z.string() }).nullable(),
        made_because: z.enum(["success", "high-value", "forced"]).nullable(),
        skipped: z.string().nullable(),
        warnings: z.array(z.string()),
      }),
      handler: async (input, ctx) => {
        const { distillRun } = await import("../../memory/index.ts");
        const r = distillRun({ root: ctx.root, clock: ctx.clock }, input.run, {
          force: input.force === true,
        });
        return {
          run_id: r.run_id,
          verdict: {
            outcome: r.verdict.outcome,
            high_value: r.verdict.high_value,
            reasons: r.verdict.reasons,
          },
          card: r.card !== null ? { pattern_id: r.card.pattern_id, title: r.card.title } : null,
          made_because: r.made_because,
          skipped: r.skipped,
          warnings: r.warnings,
        };
      },
    }),
    defineTool({
      name: "memory_retrieve",
      title: "Pattern cards for a task",
      description:
        "Find pattern cards distilled from earlier successful runs that fit this task (BM25 over objectives and triggers, " +
        "thresholded: an empty list means nothing relevant, not an error), rendered terse or guided for the user " +
        "(profile .timewarp/memory/profiles/<user>.json; difficulty=high or a novice gets the guided view). " +
        "Call it at the start of a task and follow the steps and invariants.",
      inputSchema: z.object({
        objective: z.string().min(1).describe("the task, in the user's words"),
        user: z.string().optional().describe("profile id (default: default)"),
        difficulty: z.enum(["low", "high"]).optional(),
        limit: z
          .number()
          .int()
          .min(1)
          .max(20)
          .optional()
          .describe("at most this many cards (default 3)"),
        explain: z
          .boolean()
          .optional()
          .describe(
            "also say why each card matched (query tokens, IDF, BM25 share, coverage against the threshold) and why the nearest others were rejected",
          ),
      }),
      outputSchema: z.object({
        objective: z.string(),
        view: z.enum(["terse", "guided"]),
        reason: z.string(),
        cards: z.array(
          z.object({
            pattern_id: z.string(),
            title: z.string(),
            score: z.number(),
            coverage: z.number(),
            uses: z.number(),
            text: z.string(),
          }),
        ),
        library_size: z.number(),
        warnings: z.array(z.string()),
        explain: ExplanationSchema.optional(),
      }),
      handler: async (input, ctx) => {
        const { readProfile, retrieveForTask, renderView, routeView } = await import(
          "../../memory/index.ts"
        );
        const r = retrieveForTask({ root: ctx.root, clock: ctx.clock }, input.objective, {
          limit: input.limit ?? 3,
          explain: input.explain === true,
        });
        const { profile } = readProfile(ctx.root, input.user ?? "default");
        const route = routeView({ profile, difficulty: input.difficulty });
        return {
          objective: r.objective,
          view: route.view,
          reason: route.reason,
          cards: r.cards.map((c) => ({
            pattern_id: c.card.pattern_id,
            title: c.card.title,
            score: c.score,
            coverage: c.coverage,
            uses: c.card.uses,
            text: renderView(c.card, route.view),
          })),
          library_size: r.library_size,
          warnings: r.warnings,
          explain: r.explain,
        };
      },
    }),
    defineTool({
      name: "guard_check",
      title: "Check a proposed edit against the goal",
      description:
        "Score a proposed edit against the active goal (.timewarp/memory/goal.json, or a run's goal.json) before making it: " +
        "Scope (whitelist/blacklist/protected tests, tamper markers such as skip or exit(0)) and Plan guards give a drift_score " +
        "and an action: ok, warn (re-check against the goal) or rollback (do not make this edit; fix_cmd undoes one already made).",
      inputSchema: z.object({
        paths: z
          .array(z.string().min(1))
          .min(1)
          .describe("files the edit touches (workspace-relative or absolute)"),
        tool: z.string().optional().describe("the edit tool, e.g. Edit, Write, apply_patch"),
        diff: z.string().optional().describe("unified diff of the edit, if known"),
        content: z.string().optional().describe("the new text (new_string / content), if no diff"),
        plans: z.array(z.string()).optional().describe("plans stated so far in the session"),
        run: z.string().optional().describe("a run directory or id whose goal.json to use"),
      }),
      outputSchema: z.object({
        action: Action,
        drift_score: z.number(),
        scores: z.object({
          scope: z.number(),
          plan: z.number(),
          test: z.number(),
          evidence: z.number(),
        }),
        reasons: z.array(z.string()),
        auto_fixable: z.boolean(),
        fix_cmd: z.string().optional(),
        files: z.array(
          z.object({
            path: z.string(),
            drift_score: z.number(),
            action: Action,
            reasons: z.array(z.string()),
            fix_cmd: z.string().optional(),
          }),
        ),
        goal_file: z.string(),
      }),
      annotations: { readOnlyHint: true },
      handler: async (input, ctx) => {
        const { checkProposedEdit } = await import("../../memory/index.ts");
        const { run, ...edit } = input;
        return checkProposedEdit(
          { root: ctx.root, clock: ctx.clock },
          edit,
          run !== undefined ? { run } : {},
        );
      },
    }),
    defineTool({
      name: "memory_import",
      title: "Import an agent's run record",
      description:
        "Turn an agent's own record of a run into memory run directories (raw/trajectory.jsonl: messages and tool calls " +
        "with their commands, files, outputs, exit codes): a Claude Code session JSONL (~/.claude/projects/…), a Codex " +
        "rollout (~/.codex/sessions/…), a Gemini CLI chat recording (~/.gemini/tmp/…/chats/), an `opencode export` JSON, " +
        "a Cursor markdown export, or the original lab's layout (one run per question). The format is told from the " +
        "content unless given. An existing run directory is refused (RUN_EXISTS) unless force is set.",
      inputSchema: z.object({
        file: z
          .string()
          .min(1)
          .describe("the file (or the lab's directory), workspace-relative or absolute"),
        format: z
          .string()
          .optional()
          .describe(
            "auto (default) or claude-code, codex, gemini-cli, opencode, cursor, lab, swe-agent, mini-swe-agent",
          ),
        out: z
          .string()
          .optional()
          .describe("where the run directories go (default .timewarp/memory/runs)"),
        force: z.boolean().optional().describe("replace a run directory that exists already"),
      }),
      outputSchema: z.object({
        runs: z.array(
          z.object({
            run_dir: z.string(),
            run_id: z.string(),
            format: z.string(),
            steps: z.number(),
            edits: z.number(),
            shell: z.number(),
            errors: z.number(),
          }),
        ),
        warnings: z.array(z.string()),
      }),
      handler: async (input, ctx) => {
        const { importTrajectory, parseImportFormat } = await import("../../memory/index.ts");
        return importTrajectory(resolve(ctx.root, input.file), {
          root: ctx.root,
          clock: ctx.clock,
          format: parseImportFormat(input.format ?? "auto"),
          ...(input.out !== undefined ? { out: resolve(ctx.root, input.out) } : {}),
          force: input.force === true,
        });
      },
    }),
  ];
}
