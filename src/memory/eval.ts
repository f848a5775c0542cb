import { existsSync, mkdirSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { z } from "zod";
import {
  type Clock,
  ErrorCode,
  fromSystemError,
  readJsonFile,
  TimewarpError,
} from "../core/index.ts";
import { withRunBaseline } from "./baseline.ts";
import { cardSimilarity, distillCard, mergeCards, NEAR_DUPLICATE } from "./card.ts";
import { extractRunEvents } from "./extract-events.ts";
import { compileGoal, readGoal } from "./goal.ts";
import { pathOfWhere, runGuards, summarizeGuards } from "./guards.ts";
import { createCardIndex } from "./retrieve.ts";
import { labRunPaths, rawSources, writeJsonl } from "./run-dir.ts";
import type { PatternCard } from "./schemas.ts";

/** `labels.json` of a labelled run: which of its events are drift, and which runs it resembles. */
export const RunLabelsSchema = z.object({
  /** Edits of these paths are drift (positives). */
  drift_files: z.array(z.string()).default([]),
  /** Test commands containing one of these strings are drift (e.g. `|| true`). */
  drift_cmds: z.array(z.string()).default([]),
  /** Earlier runs whose card should be reused here; `[]` says none should. */
  related_runs: z.array(z.string()).optional(),
  note: z.string().optional(),
  /**
   * The run's real outcome from an external verdict (SWE-bench's report.json `resolved`), never
   * from the guard or the card: `unknown` when no verdict came with the run. Added for the
   * real-run bench (`bench/memory-real.ts`); runs labelled by hand may leave it out.
   */
  outcome: z.enum(["resolved", "unresolved", "unknown"]).optional(),
  /** The files the run's final patch changes (the facts `drift_files` was read from). */
  patch_files: z.array(z.string()).optional(),
});
export type RunLabels = z.infer<typeof RunLabelsSchema>;

export interface BinaryMetrics {
  tp: number;
  fp: number;
  fn: number;
  tn: number;
  precision: number | null;
  recall: number | null;
  f1: number | null;
}

export interface EvalReport {
  runs_dir: string;
  runs: {
    run_id: string;
    labelled: boolean;
    events: number;
    warn: number;
    rollback: number;
    successful: boolean;
    positives: number;
    card: string | null;
    retrieved: string[];
  }[];
  /** Drift detection over scored events: predicted drift = action ≠ ok. */
  detection: BinaryMetrics;
  /** The same with predicted drift = action = rollback. */
  detection_rollback: BinaryMetrics;
  /** ROC-AUC of drift_score against the labels (Mann–Whitney; null without both classes). */
  roc_auc: number | null;
  reuse: {
    /** Runs (after the first card exists) for which retrieval returned a card from an earlier run. */
    rate: number | null;
    reused: number;
    eligible: number;
    /** Of the runs labelled with related_runs: those whose top card came from a related run, or none when none was expected. */
    correct: number;
    judged: number;
  };
  predictions: { path: string | null; count: number };
  warnings: string[];
}

function metrics(pairs: { y: boolean; p: boolean }[]): BinaryMetrics {
  let tp = 0;
  let fp = 0;
  let fn = 0;
  let tn = 0;
  for (const { y, p } of pairs) {
    if (y && p) tp++;
    else if (!y && p) fp++;
    else if (y && !p) fn++;
    else tn++;
  }
  const r3 = (x: number) => Math.round(x * 1000) / 1000;
  const precision = tp + fp === 0 ? null : r3(tp / (tp + fp));
  const recall = tp + fn === 0 ? null : r3(tp / (tp + fn));
  const f1 =
    precision === null || recall === null || precision + recall === 0
      ? null
      : r3((2 * precision * recall) / (precision + recall));
  return { tp, fp, fn, tn, precision, recall, f1 };
}

/** ROC-AUC as the probability a random positive scores above a random negative (ties count half). */
export function rocAuc(scored: { y: boolean; score: number }[]): number | null {
  const pos = scored.filter((s) => s.y).map((s) => s.score);
  const neg = scored.filter((s) => !s.y).map((s) => s.score);
  if (pos.length === 0 || neg.length === 0) return null;
  let sum = 0;
  for (const p of pos) for (const n of neg) sum += p > n ? 1 : p === n ? 0.5 : 0;
  return Math.round((sum / (pos.length * neg.length)) * 1000) / 1000;
}

/**
 * `memory eval`: over every run directory in `runsDir` (sorted by name) — extract events (without
 * writing into the runs), score guards, compare with `labels.json`; replay the runs in order
 * against an in-memory card library to measure reuse; export SWE-bench predictions
 * (`instance_id`, `model_name_or_path`, `model_patch`) from runs with `raw/patch.diff`.
 */
export async function evaluateRuns(options: {
  runsDir: string;
  clock: Clock;
  /** Where predictions.jsonl goes; null: do not write. */
  predictionsPath: string | null;
  model?: string;
}): Promise<EvalReport> {
  const { runsDir, clock } = options;
  let names: string[];
  try {
    names = readdirSync(runsDir)
      .filter(
        (n) =>
          statSync(join(runsDir, n)).isDirectory() && existsSync(join(runsDir, n, "goal.json")),
      )
      .sort();
  } catch (error) {
    throw fromSystemError(error, `listing runs in ${runsDir}`);
  }
  if (names.length === 0) {
    throw new TimewarpError(
      ErrorCode.RUN_INVALID,
      `${runsDir}: no run directories (a folder with goal.json) found`,
      { data: { runs_dir: runsDir } },
    );
  }
  const warnings: string[] = [];
  const pairs: { y: boolean; p: boolean; rb: boolean; score: number }[] = [];
  const library: PatternCard[] = [];
  const runs: EvalReport["runs"] = [];
  const predictions: { instance_id: string; model_name_or_path: string; model_patch: string }[] =
    [];
  let reused = 0;
  let eligible = 0;
  let correct = 0;
  let judged = 0;
  for (const name of names) {
    const dir = join(runsDir, name);
    const paths = labRunPaths(dir);
    let labels: RunLabels | undefined;
    if (existsSync(join(dir, "labels.json")))
      labels = readJsonFile(join(dir, "labels.json"), RunLabelsSchema);
    let goal: ReturnType<typeof readGoal>;
    let extracted: Awaited<ReturnType<typeof extractRunEvents>>;
    try {
      const read = readGoal(paths.goal);
      goal = { ...read, goal: withRunBaseline(dir, read.goal).goal };
      extracted = await extractRunEvents(dir, { write: false });
    } catch (error) {
      warnings.push(`${name}: ${error instanceof Error ? error.message : String(error)} (skipped)`);
      continue;
    }
    warnings.push(
      ...goal.warnings.map((w) => `${name}: ${w}`),
      ...extracted.warnings.map((w) => `${name}: ${w}`),
    );
    const events = extracted.events;
    const records = runGuards(compileGoal(goal.goal), events, { gitWorkTree: true });
    const summary = summarizeGuards(goal.goal, events, records);
    let positives = 0;
    if (labels !== undefined) {
      const driftFiles = new Set(labels.drift_files);
      for (const r of records) {
        if (r.tool === "plan") continue;
        const e = events[r.step];
        const y =
          r.tool === "edit"
            ? driftFiles.has(pathOfWhere(e?.where) ?? "")
            : labels.drift_cmds.some((c) => (r.cmd ?? "").includes(c));
        if (y) positives++;
        pairs.push({ y, p: r.action !== "ok", rb: r.action === "rollback", score: r.drift_score });
      }
    }
    // reuse: what would retrieval have offered this run from the earlier runs' cards?
    const hits =
      library.length > 0 ? createCardIndex(library).search(goal.goal.objective, { limit: 3 }) : [];
    if (library.length > 0) {
      eligible++;
      if (hits.length > 0) reused++;
      if (labels?.related_runs !== undefined) {
        judged++;
        const top = hits[0];
        const related = labels.related_runs;
        if (
          related.length === 0
            ? top === undefined
            : top?.card.provenance.source_runs.some((r) => related.includes(r))
        )
          correct++;
      }
    }
    let cardId: string | null = null;
    if (summary.successful) {
      const card = distillCard({
        run_id: paths.run_id,
        goal: goal.goal,
        events,
        guards: records,
        clock,
      });
      const twin = library.findIndex(
        (c) => c.pattern_id === card.pattern_id || cardSimilarity(c, card) >= NEAR_DUPLICATE,
      );
      const existing = twin >= 0 ? library[twin] : undefined;
      if (existing !== undefined) library[twin] = mergeCards(existing, card, clock.now());
      else library.push(card);
      cardId = existing?.pattern_id ?? card.pattern_id;
    }
    const patch = rawSources(paths).patch;
    if (patch !== undefined) {
      predictions.push({
        instance_id: goal.goal.instance_id ?? paths.run_id,
        model_name_or_path: options.model ?? "timewarp-memory",
        model_patch: readFileSync(patch, "utf8"),
      });
    }
    runs.push({
      run_id: paths.run_id,
      labelled: labels !== undefined,
      events: events.length,
      warn: summary.warn,
      rollback: summary.rollback,
      successful: summary.successful,
      positives,
      card: cardId,
      retrieved: hits.map((h) => h.card.pattern_id),
    });
  }
  if (options.predictionsPath !== null && predictions.length > 0) {
    mkdirSync(dirname(options.predictionsPath), { recursive: true });
    writeJsonl(options.predictionsPath, predictions);
  }
  return {
    runs_dir: runsDir,
    runs,
    detection: metrics(pairs),
    detection_rollback: metrics(pairs.map((x) => ({ y: x.y, p: x.rb }))),
    roc_auc: rocAuc(pairs.map((x) => ({ y: x.y, score: x.score }))),
    reuse: {
      rate: eligible === 0 ? null : Math.round((reused / eligible) * 1000) / 1000,
      reused,
      eligible,
      correct,
      judged,
    },
    predictions: {
      path:
        options.predictionsPath !== null && predictions.length > 0 ? options.predictionsPath : null,
      count: predictions.length,
    },
    warnings,
  };
}
