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
import { computeMetrics, type EvalMetrics, formatEstimate, type RunFacts } from "./eval-metrics.ts";
import { extractRunEvents } from "./extract-events.ts";
import { compileGoal, readGoal } from "./goal.ts";
import { pathOfWhere, runGuards, summarizeGuards } from "./guards.ts";
import { createCardIndex } from "./retrieve.ts";
import { labRunPaths, rawSources, readJsonl, writeJsonl } from "./run-dir.ts";
import {
  type Goal,
  type GuardRecord,
  type MemoryEvent,
  type PatternCard,
  type Profile,
  ProfileSchema,
} from "./schemas.ts";
import { TrajectoryStepSchema } from "./trajectory.ts";
import { cardEligible, findDriftFix, isTestRun, type Outcome, testStatus } from "./verdict.ts";
import { readRunVerdict } from "./verdict-file.ts";
import { routeView } from "./views.ts";

/**
 * `labels.json` of a labelled run — facts about it, never the guard's own output: which of its
 * events are drift (for real runs: the final patch's files against the task's rules), which
 * runs it resembles, how it really ended, and which view its user wants.
 */
export const RunLabelsSchema = z.object({
  /** Edits of these paths are drift (positives). */
  drift_files: z.array(z.string()).default([]),
  /** Test commands containing one of these strings are drift (e.g. `|| true`). */
  drift_cmds: z.array(z.string()).default([]),
  /** Earlier runs whose card should be reused here; `[]` says none should. */
  related_runs: z.array(z.string()).optional(),
  /** The profile (`profiles/<user>.json`) of the user the run was for (Q3). */
  user: z.string().optional(),
  /** The view that user wants for this run; else the profile's `pref` (Q3). */
  expected_view: z.enum(["terse", "guided"]).optional(),
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
    /** The run's verdict from evidence (verdict.ts) and whether it is high-value. */
    outcome: Outcome;
    high_value: boolean;
    positives: number;
    card: string | null;
    retrieved: string[];
  }[];
  /** The seed's metric set (Q1, Q2, Q3), each with its bootstrap 95 % interval over runs. */
  metrics: EvalMetrics;
  bootstrap: { resamples: number; seed: number };
  /** The verdict against the labelled real outcome: `table[verdict][label]` counts runs ("unlabelled" without labels.outcome). */
  outcomes: Record<Outcome, Record<"resolved" | "unresolved" | "unknown" | "unlabelled", number>>;
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

/** Agent actions and elapsed seconds of a run: its trajectory's tool calls and times when it has one, else its events. */
function turnsAndTime(
  dir: string,
  events: readonly MemoryEvent[],
): { turns: number; seconds: number | null } {
  const file = join(dir, "raw/trajectory.jsonl");
  let times: string[];
  let turns: number;
  if (existsSync(file)) {
    const steps = readJsonl(file, TrajectoryStepSchema).items;
    turns = steps.filter((x) => x.kind === "tool").length;
    times = steps.flatMap((x) => (x.ts !== undefined ? [x.ts] : []));
  } else {
    turns = events.length;
    times = events.flatMap((e) => (e.ts !== undefined ? [e.ts] : []));
  }
  const ms = times.map((t) => Date.parse(t)).filter((t) => Number.isFinite(t));
  const seconds = ms.length >= 2 ? (Math.max(...ms) - Math.min(...ms)) / 1000 : null;
  return { turns, seconds };
}

/** The first test run after the first edit: passed, failed, or null (none, or its result unknown). */
function firstTry(events: readonly MemoryEvent[]): boolean | null {
  const firstEdit = events.findIndex((e) => e.tool === "edit");
  if (firstEdit < 0) return null;
  const test = events.slice(firstEdit + 1).find(isTestRun);
  if (test === undefined) return null;
  const s = testStatus(test);
  return s === "unknown" ? null : s === "pass";
}

/** Labelled drift events and how long until each was put back (findDriftFix, from facts only). */
function recoveries(
  events: readonly MemoryEvent[],
  labels: RunLabels,
  finalFiles: readonly string[] | undefined,
): RunFacts["recoveries"] {
  const drifted = (e: MemoryEvent) =>
    e.tool === "edit"
      ? labels.drift_files.includes(pathOfWhere(e.where) ?? "")
      : e.tool === "shell" && labels.drift_cmds.some((c) => (e.cmd ?? "").includes(c));
  const out: RunFacts["recoveries"] = [];
  const fixSteps = new Set<number>();
  events.forEach((e, i) => {
    if (!drifted(e) || fixSteps.has(e.step)) return;
    const file = pathOfWhere(e.where);
    const fix = findDriftFix(
      events,
      i,
      { tool: e.tool === "edit" ? "edit" : "shell", ...(file !== undefined ? { file } : {}) },
      {
        ...(finalFiles !== undefined ? { finalFiles: new Set(finalFiles) } : {}),
        unmasked: (x) => !labels.drift_cmds.some((c) => (x.cmd ?? "").includes(c)),
      },
    );
    if (fix?.step !== undefined) fixSteps.add(fix.step);
    const to = fix?.step !== undefined ? events.find((x) => x.step === fix.step) : undefined;
    const t0 = e.ts !== undefined ? Date.parse(e.ts) : Number.NaN;
    const t1 = to?.ts !== undefined ? Date.parse(to.ts) : Number.NaN;
    out.push({
      recovered: fix !== null,
      steps: to !== undefined ? to.step - e.step : null,
      seconds: Number.isFinite(t0) && Number.isFinite(t1) ? (t1 - t0) / 1000 : null,
    });
  });
  return out;
}

/** The view the router picks from the profile without its `pref`, against the one the user wants. */
function viewMatch(
  labels: RunLabels | undefined,
  profilesDir: string | undefined,
  goal: Goal,
  warnings: string[],
): RunFacts["view"] {
  if (labels?.user === undefined || profilesDir === undefined) return null;
  const file = join(profilesDir, `${labels.user}.json`);
  let profile: Profile | undefined;
  if (existsSync(file)) {
    try {
      profile = readJsonFile(file, ProfileSchema);
    } catch (error) {
      warnings.push(`${file}: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  const expected = labels.expected_view ?? profile?.pref ?? undefined;
  if (expected === undefined || expected === null) return null;
  const { pref: _, ...rest } = profile ?? { user_id: labels.user };
  const routed = routeView({ profile: rest, difficulty: goal.difficulty }).view;
  return { routed, expected };
}

/** Bootstrap resamples and seed of `memory eval` unless given. */
export const EVAL_RESAMPLES = 1000;
export const EVAL_SEED = 18;

/**
 * `memory eval`: over every run directory in `runsDir` (sorted by name) — extract events (without
 * writing into the runs), score guards, judge each run (verdict.ts), compare with `labels.json`;
 * replay the runs in order against an in-memory card library (cards from successful and
 * high-value runs) to measure reuse; compute the seed's metric set with bootstrap intervals
 * (eval-metrics.ts); export SWE-bench predictions (`instance_id`, `model_name_or_path`,
 * `model_patch`) from runs with `raw/patch.diff`.
 */
export async function evaluateRuns(options: EvalOptions): Promise<EvalReport> {
  const tally = emptyTally();
  const names = listRuns(options.runsDir);
  for (const [i, name] of names.entries()) {
    options.onProgress?.({ done: i, total: names.length, run: name });
    await evaluateRun(join(options.runsDir, name), name, tally, options);
  }
  const written = writePredictions(options.predictionsPath, tally.predictions);
  return evalReport(options, tally, written);
}

interface EvalOptions {
  runsDir: string;
  clock: Clock;
  /** Where predictions.jsonl goes; null: do not write. */
  predictionsPath: string | null;
  model?: string;
  /** Where `labels.user`'s profile is read for Q3 (`profiles/<user>.json`); without it Q3 has no runs. */
  profilesDir?: string;
  /** Bootstrap resamples (default 1000) and the seed of its random source (default 18). */
  resamples?: number;
  seed?: number;
  /** Called before each run is evaluated (a CLI progress line; hundreds of runs take minutes). */
  onProgress?: (p: { done: number; total: number; run: string }) => void;
}

/** One guard decision against its label: drifted (`y`), flagged (`p`), rolled back, and its score. */
interface DetectionPair {
  y: boolean;
  p: boolean;
  rb: boolean;
  score: number;
}

interface Prediction {
  instance_id: string;
  model_name_or_path: string;
  model_patch: string;
}

/** What `evaluateRuns` gathers run by run, in name order. */
interface EvalTally {
  warnings: string[];
  pairs: DetectionPair[];
  /** The in-memory card library, grown from the runs read so far. */
  library: PatternCard[];
  runs: EvalReport["runs"];
  facts: RunFacts[];
  outcomes: EvalReport["outcomes"];
  predictions: Prediction[];
  reuse: { reused: number; eligible: number; correct: number; judged: number };
}

function emptyTally(): EvalTally {
  const none = () => ({ resolved: 0, unresolved: 0, unknown: 0, unlabelled: 0 });
  return {
    warnings: [],
    pairs: [],
    library: [],
    runs: [],
    facts: [],
    outcomes: { success: none(), failure: none(), unknown: none() },
    predictions: [],
    reuse: { reused: 0, eligible: 0, correct: 0, judged: 0 },
  };
}

/** The run directories (a folder with goal.json) in `runsDir`, sorted; RUN_INVALID when none. */
function listRuns(runsDir: string): string[] {
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
  return names;
}

/** A run's labels, goal and events; undefined (with a warning) when one cannot be read. */
async function readEvalRun(
  dir: string,
  name: string,
  goalPath: string,
  warnings: string[],
): Promise<
  | {
      labels: RunLabels | undefined;
      goal: ReturnType<typeof readGoal>;
      events: MemoryEvent[];
    }
  | undefined
> {
  let labels: RunLabels | undefined;
  let goal: ReturnType<typeof readGoal>;
  let extracted: Awaited<ReturnType<typeof extractRunEvents>>;
  try {
    if (existsSync(join(dir, "labels.json")))
      labels = readJsonFile(join(dir, "labels.json"), RunLabelsSchema);
    const read = readGoal(goalPath);
    goal = { ...read, goal: withRunBaseline(dir, read.goal).goal };
    extracted = await extractRunEvents(dir, { write: false });
  } catch (error) {
    warnings.push(`${name}: ${error instanceof Error ? error.message : String(error)} (skipped)`);
    return undefined;
  }
  warnings.push(
    ...goal.warnings.map((w) => `${name}: ${w}`),
    ...extracted.warnings.map((w) => `${name}: ${w}`),
  );
  return { labels, goal, events: extracted.events };
}

/** One run: guards, verdict, detection against its labels, card reuse, its card, its prediction. */
async function evaluateRun(
  dir: string,
  name: string,
  tally: EvalTally,
  options: EvalOptions,
): Promise<void> {
  const paths = labRunPaths(dir);
  const input = await readEvalRun(dir, name, paths.goal, tally.warnings);
  if (input === undefined) return;
  const { labels, goal, events } = input;
  const records = runGuards(compileGoal(goal.goal), events, { gitWorkTree: true });
  const summary = summarizeGuards(goal.goal, events, records);
  const read = readRunVerdict({
    dir,
    runId: paths.run_id,
    goal: goal.goal,
    events,
    guards: records,
  });
  tally.warnings.push(...read.warnings.map((w) => `${name}: ${w}`));
  const { verdict, finalFiles } = read;
  tally.outcomes[verdict.outcome][labels?.outcome ?? "unlabelled"]++;
  const detection = detectionPairs(records, events, labels);
  tally.pairs.push(...detection.pairs);
  const offer = offerCards(tally.library, goal.goal.objective, labels, tally.reuse);
  const cardId = cardEligible(verdict)
    ? addCard(
        tally.library,
        distillCard({
          run_id: paths.run_id,
          goal: goal.goal,
          events,
          guards: records,
          clock: options.clock,
          verdict,
        }),
        options.clock,
      )
    : null;
  const patch = rawSources(paths).patch;
  if (patch !== undefined) {
    tally.predictions.push({
      instance_id: goal.goal.instance_id ?? paths.run_id,
      model_name_or_path: options.model ?? "timewarp-memory",
      model_patch: readFileSync(patch, "utf8"),
    });
  }
  const time = turnsAndTime(dir, events);
  tally.facts.push({
    run_id: paths.run_id,
    pairs: detection.runPairs,
    recoveries: labels !== undefined ? recoveries(events, labels, finalFiles) : [],
    eligible: offer.hadLibrary,
    with_card: offer.hits.length > 0,
    right_card: offer.rightCard,
    first_try: firstTry(events),
    turns: time.turns,
    seconds: time.seconds,
    view: viewMatch(labels, options.profilesDir, goal.goal, tally.warnings),
  });
  tally.runs.push({
    run_id: paths.run_id,
    labelled: labels !== undefined,
    events: events.length,
    warn: summary.warn,
    rollback: summary.rollback,
    successful: summary.successful,
    outcome: verdict.outcome,
    high_value: verdict.high_value,
    positives: detection.positives,
    card: cardId,
    retrieved: offer.hits.map((h) => h.card.pattern_id),
  });
}

/** Each guard decision (plans aside) against the labels' drift files and commands; none unlabelled. */
function detectionPairs(
  records: readonly GuardRecord[],
  events: readonly MemoryEvent[],
  labels: RunLabels | undefined,
): { pairs: DetectionPair[]; runPairs: RunFacts["pairs"]; positives: number } {
  const pairs: DetectionPair[] = [];
  const runPairs: RunFacts["pairs"] = [];
  let positives = 0;
  if (labels === undefined) return { pairs, runPairs, positives };
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
    runPairs.push({ y, p: r.action !== "ok" });
  }
  return { pairs, runPairs, positives };
}

/**
 * Reuse: what retrieval would have offered this run from the earlier runs' cards, and whether
 * its top card came from a run the labels call related. Counts into `reuse`.
 */
function offerCards(
  library: PatternCard[],
  objective: string,
  labels: RunLabels | undefined,
  reuse: EvalTally["reuse"],
): {
  hits: ReturnType<ReturnType<typeof createCardIndex>["search"]>;
  rightCard: boolean | null;
  hadLibrary: boolean;
} {
  const hadLibrary = library.length > 0;
  const hits = hadLibrary ? createCardIndex(library).search(objective, { limit: 3 }) : [];
  let rightCard: boolean | null = null;
  if (hadLibrary) {
    reuse.eligible++;
    if (hits.length > 0) reuse.reused++;
    if (labels?.related_runs !== undefined) {
      reuse.judged++;
      const top = hits[0];
      const related = labels.related_runs;
      rightCard =
        related.length === 0
          ? top === undefined
          : top?.card.provenance.source_runs.some((r) => related.includes(r)) === true;
      if (rightCard) reuse.correct++;
    }
  }
  return { hits, rightCard, hadLibrary };
}

/** A run's card into the library, merged into its near-duplicate when there is one; the card's id. */
function addCard(library: PatternCard[], card: PatternCard, clock: Clock): string {
  const twin = library.findIndex(
    (c) => c.pattern_id === card.pattern_id || cardSimilarity(c, card) >= NEAR_DUPLICATE,
  );
  const existing = twin >= 0 ? library[twin] : undefined;
  if (existing !== undefined) library[twin] = mergeCards(existing, card, clock.now());
  else library.push(card);
  return existing?.pattern_id ?? card.pattern_id;
}

/** predictions.jsonl written when asked and there are any; where it went, else null. */
function writePredictions(path: string | null, predictions: Prediction[]): string | null {
  if (path === null || predictions.length === 0) return null;
  mkdirSync(dirname(path), { recursive: true });
  writeJsonl(path, predictions);
  return path;
}

function evalReport(options: EvalOptions, tally: EvalTally, written: string | null): EvalReport {
  const { pairs, reuse } = tally;
  const resamples = options.resamples ?? EVAL_RESAMPLES;
  const seed = options.seed ?? EVAL_SEED;
  return {
    runs_dir: options.runsDir,
    runs: tally.runs,
    metrics: computeMetrics(tally.facts, { resamples, seed }),
    bootstrap: { resamples, seed },
    outcomes: tally.outcomes,
    detection: metrics(pairs),
    detection_rollback: metrics(pairs.map((x) => ({ y: x.y, p: x.rb }))),
    roc_auc: rocAuc(pairs.map((x) => ({ y: x.y, score: x.score }))),
    reuse: {
      rate: reuse.eligible === 0 ? null : Math.round((reuse.reused / reuse.eligible) * 1000) / 1000,
      ...reuse,
    },
    predictions: { path: written, count: tally.predictions.length },
    warnings: tally.warnings,
  };
}

/** `memory eval`'s text: each metric with its bootstrap interval, then the classic counts (one line each). */
export function formatEvalReport(r: EvalReport): string[] {
  const m = r.metrics;
  const d = r.detection;
  const o = r.outcomes;
  const row = (k: Outcome) =>
    `${k} ${o[k].resolved}/${o[k].unresolved}/${o[k].unknown}/${o[k].unlabelled}`;
  return [
    `${r.runs.length} runs · bootstrap 95% intervals over runs (${r.bootstrap.resamples} resamples, seed ${r.bootstrap.seed}); value [low, high] (n)`,
    "Q1 drift guards",
    `  drift detection rate   ${formatEstimate(m.q1.drift_detection_rate)}`,
    `  runs with drift caught ${formatEstimate(m.q1.run_detection_rate)}`,
    `  false-positive rate    ${formatEstimate(m.q1.false_positive_rate)}`,
    `  recovery time (steps)  ${formatEstimate(m.q1.recovery_steps)}`,
    `  recovery time (s)      ${formatEstimate(m.q1.recovery_seconds)}`,
    `  drift never put back   ${m.q1.unrecovered}`,
    "Q2 pattern cards",
    `  reuse rate             ${formatEstimate(m.q2.reuse_rate)}`,
    `  right card             ${formatEstimate(m.q2.right_card_rate)}`,
    `  first-try success      ${formatEstimate(m.q2.first_try_success.all)} · with a card ${formatEstimate(m.q2.first_try_success.with_card)} · without ${formatEstimate(m.q2.first_try_success.without_card)}`,
    `  turns                  with a card ${formatEstimate(m.q2.turns.with_card)} · without ${formatEstimate(m.q2.turns.without_card)}`,
    `  time (s)               with a card ${formatEstimate(m.q2.seconds.with_card)} · without ${formatEstimate(m.q2.seconds.without_card)}`,
    "Q3 views",
    `  view match             ${formatEstimate(m.q3.view_match)}`,
    `guards: precision ${d.precision ?? "-"}, recall ${d.recall ?? "-"}, F1 ${d.f1 ?? "-"} (tp ${d.tp} fp ${d.fp} fn ${d.fn} tn ${d.tn}) · ROC-AUC ${r.roc_auc ?? "-"} · rollback only: precision ${r.detection_rollback.precision ?? "-"}, recall ${r.detection_rollback.recall ?? "-"}`,
    `card reuse: ${r.reuse.reused}/${r.reuse.eligible} runs, right card ${r.reuse.correct}/${r.reuse.judged}`,
    `verdict vs labelled outcome (resolved/unresolved/unknown/unlabelled): ${row("success")} · ${row("failure")} · ${row("unknown")}`,
    `predictions: ${r.predictions.count}${r.predictions.path ? ` → ${r.predictions.path}` : ""}`,
  ];
}
