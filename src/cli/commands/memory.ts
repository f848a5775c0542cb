import { resolve } from "node:path";
import { type Command, InvalidArgumentError } from "commander";
import { assertInputDirectory, ErrorCode, TimewarpError } from "../../core/index.ts";
import type { CommandContext } from "../context.ts";
import { helpExamples } from "../help-examples.ts";
import { style } from "../output.ts";
import { action } from "../run.ts";

/**
 * The memory lab: `memory import|events|guards|card|retrieve|view|e2e|eval`. JSON output uses the seed's
 * field names (events.jsonl / guards.jsonl / pattern card fields).
 */
export function registerMemoryCommands(program: Command): void {
  const memory = () => import("../../memory/index.ts");
  const lab = (ctx: CommandContext) => ({ root: ctx.root, clock: ctx.clock });
  const oneOf =
    <T extends string>(name: string, values: readonly T[]) =>
    (value: string): T => {
      const hit = values.find((v) => v === value);
      if (hit === undefined) {
        throw new InvalidArgumentError(
          `${name} must be one of ${values.join(", ")}, got ${JSON.stringify(value)}`,
        );
      }
      return hit;
    };
  const positiveInt = (value: string) => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < 1)
      throw new InvalidArgumentError(
        `--limit must be a positive integer, got ${JSON.stringify(value)}`,
      );
    return n;
  };
  const warn = (warnings: string[]) => warnings.map((w) => style.yellow(`warning: ${w}`));

  const group = program
    .command("memory")
    .addHelpText(
      "after",
      helpExamples(
        [
          "import a Codex session, then run the whole chain on it",
          "timewarp memory import ~/.codex/sessions/2026/11/26/rollout-1.jsonl --json",
        ],
        [
          "events, guards, card and view of one run",
          "timewarp memory e2e .timewarp/memory/runs/r1 --user alice",
        ],
      ),
    )
    .description("agent memory lab: events, drift guards, pattern cards, views");

  group
    .command("events <run>")
    .addHelpText(
      "after",
      helpExamples(
        [
          "extract a run's events from every raw source it has",
          "timewarp memory events .timewarp/memory/runs/r1",
        ],
        [
          "only what its imported steps show",
          "timewarp memory events .timewarp/memory/runs/r1 --from trajectory",
        ],
      ),
    )
    .description(
      "extract <run>/events.jsonl from raw/ (every source combined, each event with its provenance)",
    )
    .option("--from <source>", "one source only: chat|transcript|trajectory|patch|term|ledger|bus")
    .action(
      action(async (ctx, run: string, o: { from?: string }) => {
        // The list of sources lives in memory, which loads only here (start-up time).
        const { extractRun, EXTRACT_SOURCES } = await memory();
        const from = o.from === undefined ? undefined : EXTRACT_SOURCES.find((s) => s === o.from);
        if (o.from !== undefined && from === undefined) {
          throw new TimewarpError(
            ErrorCode.INVALID_INPUT,
            `--from must be one of ${EXTRACT_SOURCES.join(", ")}, got ${JSON.stringify(o.from)}`,
          );
        }
        const r = await extractRun(lab(ctx), run, from !== undefined ? { from } : {});
        const counts = ["edit", "plan", "shell"]
          .map((t) => `${r.events.filter((e) => e.tool === t).length} ${t}`)
          .join(", ");
        return {
          json: r,
          human: [
            `${style.bold(r.run_id)}: ${r.events.length} events (${counts}) from ${r.sources.join(" + ") || "nothing"}${r.fallback ? style.dim(" (fallback used)") : ""}`,
            ...warn(r.warnings),
            style.dim(r.path),
          ].join("\n"),
        };
      }),
    );

  group
    .command("import <file>")
    .addHelpText(
      "after",
      helpExamples(
        [
          "a Claude Code session, format told from its content",
          "timewarp memory import ~/.claude/projects/app/5ff3b38c.jsonl",
        ],
        [
          "the original lab: one run per question, into a folder of your choice",
          "timewarp memory import lab/data --out runs --json",
        ],
      ),
    )
    .description(
      "an agent's own record of a run → run directories (raw/trajectory.jsonl): Claude Code session JSONL, Codex rollout, Gemini CLI chat, `opencode export` JSON, Cursor export, the original lab (one run per question)",
    )
    .option("--format <format>", "auto (by content, the default) or one format by name")
    .option("--out <dir>", "where the run directories go (default .timewarp/memory/runs)")
    .option("--force", "replace a run directory that exists already")
    .action(
      action(async (ctx, file: string, o: { format?: string; out?: string; force?: boolean }) => {
        const { importTrajectory, parseImportFormat } = await memory();
        const r = importTrajectory(resolve(ctx.cwd, file), {
          root: ctx.root,
          clock: ctx.clock,
          format: parseImportFormat(o.format ?? "auto"),
          ...(o.out !== undefined ? { out: resolve(ctx.cwd, o.out) } : {}),
          force: o.force === true,
        });
        return {
          json: r,
          human: [
            ...r.runs.map(
              (run) =>
                `${style.bold(run.run_id)} (${run.format}): ${run.steps} steps, ${run.edits} edit, ${run.shell} shell, ${run.errors} failed\n  ${style.dim(run.run_dir)}`,
            ),
            ...warn(r.warnings),
          ].join("\n"),
        };
      }),
    );

  group
    .command("guards <run>")
    .addHelpText(
      "after",
      helpExamples([
        "score every event of a run against its goal.json",
        "timewarp memory guards .timewarp/memory/runs/r1",
      ]),
    )
    .description(
      "score events against goal.json: Scope/Plan/Test/Evidence → drift_score → ok|warn|rollback",
    )
    .action(
      action(async (ctx, run: string) => {
        const { guardRun } = await memory();
        const r = guardRun(lab(ctx), run);
        const fired = r.records.filter((g) => g.action !== "ok");
        const colour = (a: string) => (a === "rollback" ? style.red(a) : style.yellow(a));
        return {
          json: r,
          human: [
            `${style.bold(r.run_id)}: ${r.summary.ok} ok, ${r.summary.warn} warn, ${r.summary.rollback} rollback (max drift ${r.summary.max_drift})${r.summary.successful ? "" : style.dim(" — not successful")}`,
            ...fired.map(
              (g) =>
                `  step ${g.step} ${colour(g.action)} ${g.drift_score} ${g.file ?? g.cmd ?? ""}\n    ${g.reasons.join("\n    ")}${g.fix_cmd ? `\n    fix: ${g.fix_cmd}` : ""}`,
            ),
            ...warn(r.warnings),
          ].join("\n"),
        };
      }),
    );

  group
    .command("card <run>")
    .addHelpText(
      "after",
      helpExamples(
        [
          "distill a card when the run's verdict allows it",
          "timewarp memory card .timewarp/memory/runs/r1",
        ],
        [
          "distill one although the verdict is unknown",
          "timewarp memory card .timewarp/memory/runs/r1 --force",
        ],
      ),
    )
    .description(
      "judge a run by its evidence and distill a pattern card from a successful or high-value one (reflection + card, saved to the library)",
    )
    .option("--force", "distill even if the verdict is failure or unknown")
    .option("--no-reflect", "skip config.memory.reflect_command even when configured")
    .action(
      action(async (ctx, run: string, o: { force?: boolean; reflect?: boolean }) => {
        const { distillRun } = await memory();
        const r = distillRun(lab(ctx), run, {
          force: o.force === true,
          reflect: o.reflect !== false,
        });
        const verdict = `verdict: ${r.verdict.outcome}${r.verdict.high_value ? " (high-value)" : ""} — ${r.verdict.reasons.join("; ")}`;
        const human =
          r.card === null
            ? [
                verdict,
                style.yellow(
                  `no card: the verdict is ${r.verdict.outcome} (--force distills anyway)`,
                ),
                style.dim(r.reflection),
              ]
            : [
                verdict,
                `${style.bold(r.card.pattern_id)} ${r.card.title} ${style.dim(`(card made: ${r.made_because})`)}${r.saved[0]?.merged_into ? style.dim(` (merged into the existing card, similarity ${r.saved[0].similarity})`) : ""}`,
                r.card.views.terse,
                style.dim(r.artifact ?? ""),
              ];
        return { json: r, human: [...human, ...warn(r.warnings)].join("\n") };
      }),
    );

  group
    .command("retrieve <objective>")
    .addHelpText(
      "after",
      helpExamples(
        [
          "the three cards that fit a task best",
          'timewarp memory retrieve "slugify drops accented letters" --limit 3',
        ],
        [
          "why each card matched, and why the nearest others did not",
          'timewarp memory retrieve "slugify drops accented letters" --explain',
        ],
      ),
    )
    .description(
      "pattern cards for a task (BM25 with a relevance threshold: none rather than unrelated)",
    )
    .option("--limit <n>", "at most this many cards (default 5)", positiveInt)
    .option("--no-record", "do not count this retrieval as a use")
    .option(
      "--explain",
      "why each card matched (tokens, IDF, BM25 share, coverage) and why the nearest others did not",
    )
    .action(
      action(
        async (
          ctx,
          objective: string,
          o: { limit?: number; record?: boolean; explain?: boolean },
        ) => {
          const { retrieveForTask, formatExplanation } = await memory();
          const r = retrieveForTask(lab(ctx), objective, {
            limit: o.limit ?? 5,
            record: o.record !== false,
            explain: o.explain === true,
          });
          return {
            json: r,
            human: [
              r.cards.length === 0
                ? style.dim(`no card fits (library: ${r.library_size} cards)`)
                : r.cards
                    .map(
                      (c) =>
                        `${style.bold(c.card.pattern_id)} ${c.card.title} ${style.dim(`score ${c.score}, coverage ${c.coverage}, uses ${c.card.uses}`)}`,
                    )
                    .join("\n"),
              ...(r.explain === undefined ? [] : ["", formatExplanation(r.explain)]),
              ...warn(r.warnings),
            ].join("\n"),
          };
        },
      ),
    );

  group
    .command("view <card-id>")
    .addHelpText(
      "after",
      helpExamples([
        "a card as alice's profile routes it",
        "timewarp memory view pc_doc_only_change --user alice",
      ]),
    )
    .description("render a card terse or guided, routed by the user's profile and the difficulty")
    .requiredOption("--user <user>", "profile .timewarp/memory/profiles/<user>.json")
    .option("--difficulty <level>", "low|high", oneOf("--difficulty", ["low", "high"] as const))
    .action(
      action(async (ctx, id: string, o: { user: string; difficulty?: "low" | "high" }) => {
        const { viewCard } = await memory();
        const r = viewCard(lab(ctx), id, {
          user: o.user,
          ...(o.difficulty !== undefined ? { difficulty: o.difficulty } : {}),
        });
        return {
          json: r,
          human: `${style.dim(`view ${r.route.view}: ${r.route.reason}`)}\n${r.text}`,
        };
      }),
    );

  group
    .command("e2e <run>")
    .addHelpText(
      "after",
      helpExamples([
        "the whole chain on one run, the view for alice",
        "timewarp memory e2e .timewarp/memory/runs/r1 --user alice",
      ]),
    )
    .description("the whole chain: events → guards → reflection → card → view_preview.md")
    .option("--user <user>", "profile for the view (default: default)")
    .option(
      "--difficulty <level>",
      "low|high (default: goal.difficulty)",
      oneOf("--difficulty", ["low", "high"] as const),
    )
    .action(
      action(async (ctx, run: string, o: { user?: string; difficulty?: "low" | "high" }) => {
        const { runE2E } = await memory();
        const r = await runE2E(lab(ctx), run, {
          ...(o.user !== undefined ? { user: o.user } : {}),
          ...(o.difficulty !== undefined ? { difficulty: o.difficulty } : {}),
        });
        return {
          json: r,
          human: [
            `${style.bold(r.run_id)}: ${r.events} events from ${r.sources.join(" + ")}; ${r.guards.ok} ok, ${r.guards.warn} warn, ${r.guards.rollback} rollback`,
            ...r.fired.map(
              (g) =>
                `  step ${g.step} ${g.action} ${g.file ?? g.cmd ?? ""}${g.fix_cmd ? ` → ${g.fix_cmd}` : ""}`,
            ),
            `verdict: ${r.verdict.outcome}${r.verdict.high_value ? " (high-value)" : ""} — ${r.verdict.reasons.join("; ")}`,
            r.card
              ? `card ${style.bold(r.card.pattern_id)}${r.card.merged_into ? " (merged)" : ""}`
              : style.yellow(
                  `no card: the verdict is ${r.verdict.outcome} (\`memory card --force\` distills anyway)`,
                ),
            `view ${r.view.view} (${r.view.reason}) → ${r.artifacts.view_preview}`,
            ...warn(r.warnings),
          ].join("\n"),
        };
      }),
    );

  group
    .command("eval [runs-dir]")
    .addHelpText(
      "after",
      helpExamples(
        [
          "the seed's metrics with 95% intervals over a folder of runs",
          "timewarp memory eval runs",
        ],
        ["the whole report as one JSON document", "timewarp memory eval runs --json"],
      ),
    )
    .description(
      "the seed's metrics over labelled runs (Q1 drift detection, false positives, recovery; Q2 reuse, first-try success, turns, time; Q3 view match) with bootstrap 95% intervals, and SWE-bench predictions.jsonl",
    )
    .option(
      "--out <file>",
      "predictions.jsonl path (default .timewarp/memory/eval/predictions.jsonl)",
    )
    .option("--model <name>", "model_name_or_path in the predictions (default timewarp-memory)")
    .action(
      action(async (ctx, runsDir: string | undefined, o: { out?: string; model?: string }) => {
        const { evaluateRuns, formatEvalReport, memoryPaths } = await memory();
        const dir =
          runsDir !== undefined
            ? assertInputDirectory(runsDir, { what: "RUNS_DIR" })
            : memoryPaths(ctx.root).runs;
        let r: Awaited<ReturnType<typeof evaluateRuns>>;
        try {
          r = await evaluateRuns({
            runsDir: dir,
            clock: ctx.clock,
            predictionsPath:
              o.out !== undefined
                ? resolve(o.out)
                : `${memoryPaths(ctx.root).eval}/predictions.jsonl`,
            ...(o.model !== undefined ? { model: o.model } : {}),
            profilesDir: memoryPaths(ctx.root).profiles,
            onProgress: (p) =>
              ctx.progress({
                phase: "evaluate",
                done: p.done,
                total: p.total,
                message: `evaluated ${p.done}/${p.total} runs (${p.run})`,
              }),
          });
        } finally {
          ctx.progress("");
        }
        return {
          json: r,
          human: [...formatEvalReport(r), ...warn(r.warnings)].join("\n"),
        };
      }),
    );
}
