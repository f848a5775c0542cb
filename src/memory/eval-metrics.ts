import { createSeededRandom, type Random } from "../core/index.ts";

/**
 * The seed's metric set over a set of runs, each with a bootstrap 95 % interval (pure). Every
 * metric is a statistic over runs: the bootstrap draws the runs with replacement (`resamples`
 * times, from core's seeded Random, so the same runs give the same interval) and takes the 2.5th
 * and 97.5th percentiles of the statistic over the draws where it is defined. Each metric starts
 * its own Random from the same seed: every metric sees the same resamples, and adding a metric
 * changes no other's interval.
 */

/** What `memory eval` knows about one run, from facts (labels.json, the events, the trajectory). */
export interface RunFacts {
  run_id: string;
  /** Scored events of a labelled run: y = labelled drift, p = the guard fired (warn or rollback). */
  pairs: { y: boolean; p: boolean }[];
  /** Per labelled drift event: was it put back, and how many steps (and seconds, when events carry times) later. */
  recoveries: { recovered: boolean; steps: number | null; seconds: number | null }[];
  /** Retrieval had cards to offer (an earlier run made one). */
  eligible: boolean;
  /** Retrieval offered at least one card for this run's objective. */
  with_card: boolean;
  /** labels.related_runs was given: whether the top card came from a related run (or none, when none was expected). */
  right_card: boolean | null;
  /** The first test run after the first edit passed (true), failed (false), or there is none / its result is unknown (null). */
  first_try: boolean | null;
  /** Agent actions: tool calls in raw/trajectory.jsonl, else events. */
  turns: number;
  /** First to last timestamp of the trajectory (or events), when they carry times. */
  seconds: number | null;
  /** The view routed from the profile (without its `pref`) against the one the user wants; null when no profile says. */
  view: { routed: string; expected: string } | null;
}

export interface Estimate {
  value: number | null;
  /** Bootstrap 95 % percentile interval; null when the value is. */
  ci95: [number, number] | null;
  /** How many units the value rests on (events, drift events, runs). */
  n: number;
}

export interface EvalMetrics {
  q1: {
    /** Recall: labelled drift events the guards flagged (warn or rollback). */
    drift_detection_rate: Estimate;
    /** Runs with labelled drift in which the guards flagged at least one drift event, over such runs. */
    run_detection_rate: Estimate;
    /** Clean events the guards flagged, over all clean events. */
    false_positive_rate: Estimate;
    /** Steps from a labelled drift event to its revert, over the drift that was put back in a known step. */
    recovery_steps: Estimate;
    /** The same in seconds, when the events carry times. */
    recovery_seconds: Estimate;
    /** Labelled drift events never put back (no revert, still in the final patch). */
    unrecovered: number;
  };
  q2: {
    /** Runs for which retrieval offered a card, over the runs that had a library to search. */
    reuse_rate: Estimate;
    /** Runs labelled with related_runs whose top card came from a related run (or none, when none was expected). */
    right_card_rate: Estimate;
    first_try_success: { all: Estimate; with_card: Estimate; without_card: Estimate };
    turns: { with_card: Estimate; without_card: Estimate };
    seconds: { with_card: Estimate; without_card: Estimate };
  };
  q3: {
    /** The routed view equals the profile's expected/pref view. */
    view_match: Estimate;
  };
}

export interface BootstrapOptions {
  resamples: number;
  /** The seed of core's `createSeededRandom`, started afresh for each metric. */
  seed: number;
}

const r3 = (x: number) => Math.round(x * 1000) / 1000;

/** A uniform integer in [0, n) from the injected random source. */
function draw(random: Random, n: number): number {
  const b = random.bytes(4);
  const u = (((b[0] ?? 0) << 24) | ((b[1] ?? 0) << 16) | ((b[2] ?? 0) << 8) | (b[3] ?? 0)) >>> 0;
  return Math.floor((u / 2 ** 32) * n);
}

function percentile(sorted: readonly number[], p: number): number {
  const at = (sorted.length - 1) * p;
  const lo = Math.floor(at);
  const hi = Math.ceil(at);
  const a = sorted[lo] ?? 0;
  const b = sorted[hi] ?? a;
  return a + (b - a) * (at - lo);
}

/**
 * Bootstrap a statistic over runs. `stat` returns the value and its unit count for a sample
 * (null value when undefined on it, e.g. no positives drawn). Same runs, same options, same
 * interval.
 */
export function bootstrap<T>(
  runs: readonly T[],
  stat: (sample: readonly T[]) => { value: number | null; n: number },
  options: BootstrapOptions,
): Estimate {
  const random: Random = createSeededRandom(options.seed);
  const full = stat(runs);
  if (full.value === null || runs.length === 0) return { value: null, ci95: null, n: full.n };
  const values: number[] = [];
  const sample: T[] = new Array(runs.length);
  for (let k = 0; k < options.resamples; k++) {
    for (let i = 0; i < runs.length; i++) sample[i] = runs[draw(random, runs.length)] as T;
    const v = stat(sample).value;
    if (v !== null) values.push(v);
  }
  values.sort((a, b) => a - b);
  const ci95: [number, number] | null =
    values.length === 0 ? null : [r3(percentile(values, 0.025)), r3(percentile(values, 0.975))];
  return { value: r3(full.value), ci95, n: full.n };
}

/** Σ num / Σ den over the sample (a pooled rate); null when the denominator is 0. */
function pooled<T>(num: (r: T) => number, den: (r: T) => number) {
  return (sample: readonly T[]) => {
    let a = 0;
    let b = 0;
    for (const r of sample) {
      a += num(r);
      b += den(r);
    }
    return { value: b === 0 ? null : a / b, n: b };
  };
}

/** The mean of the values each run contributes (several per run, or none). */
function mean<T>(values: (r: T) => readonly number[]) {
  return (sample: readonly T[]) => {
    let sum = 0;
    let n = 0;
    for (const r of sample)
      for (const v of values(r)) {
        sum += v;
        n++;
      }
    return { value: n === 0 ? null : sum / n, n };
  };
}

const one = <T>(x: T | null | undefined): T[] => (x === null || x === undefined ? [] : [x]);

/** The whole metric set over the runs (pure; deterministic for a given random source). */
export function computeMetrics(runs: readonly RunFacts[], options: BootstrapOptions): EvalMetrics {
  const b = (stat: (s: readonly RunFacts[]) => { value: number | null; n: number }) =>
    bootstrap(runs, stat, options);
  const firstTry = (filter: (r: RunFacts) => boolean) =>
    b(mean((r) => (filter(r) ? one(r.first_try).map((x) => (x ? 1 : 0)) : [])));
  return {
    q1: {
      drift_detection_rate: b(
        pooled(
          (r) => r.pairs.filter((p) => p.y && p.p).length,
          (r) => r.pairs.filter((p) => p.y).length,
        ),
      ),
      run_detection_rate: b(
        pooled(
          (r) => (r.pairs.some((p) => p.y && p.p) ? 1 : 0),
          (r) => (r.pairs.some((p) => p.y) ? 1 : 0),
        ),
      ),
      false_positive_rate: b(
        pooled(
          (r) => r.pairs.filter((p) => !p.y && p.p).length,
          (r) => r.pairs.filter((p) => !p.y).length,
        ),
      ),
      recovery_steps: b(
        mean((r) => r.recoveries.flatMap((x) => (x.recovered ? one(x.steps) : []))),
      ),
      recovery_seconds: b(
        mean((r) => r.recoveries.flatMap((x) => (x.recovered ? one(x.seconds) : []))),
      ),
      unrecovered: runs.reduce((n, r) => n + r.recoveries.filter((x) => !x.recovered).length, 0),
    },
    q2: {
      reuse_rate: b(
        pooled(
          (r) => (r.eligible && r.with_card ? 1 : 0),
          (r) => (r.eligible ? 1 : 0),
        ),
      ),
      right_card_rate: b(
        pooled(
          (r) => (r.right_card === true ? 1 : 0),
          (r) => (r.right_card !== null ? 1 : 0),
        ),
      ),
      first_try_success: {
        all: firstTry(() => true),
        with_card: firstTry((r) => r.with_card),
        without_card: firstTry((r) => !r.with_card),
      },
      turns: {
        with_card: b(mean((r) => (r.with_card ? [r.turns] : []))),
        without_card: b(mean((r) => (!r.with_card ? [r.turns] : []))),
      },
      seconds: {
        with_card: b(mean((r) => (r.with_card ? one(r.seconds) : []))),
        without_card: b(mean((r) => (!r.with_card ? one(r.seconds) : []))),
      },
    },
    q3: {
      view_match: b(
        pooled(
          (r) => (r.view !== null && r.view.routed === r.view.expected ? 1 : 0),
          (r) => (r.view !== null ? 1 : 0),
        ),
      ),
    },
  };
}

/** `0.75 [0.5, 1] (n 8)`, or `-` without a value: how the CLI prints an estimate. */
export function formatEstimate(e: Estimate, unit = ""): string {
  if (e.value === null) return `- (n ${e.n})`;
  const ci = e.ci95 === null ? "" : ` [${e.ci95[0]}, ${e.ci95[1]}]`;
  return `${e.value}${unit}${ci} (n ${e.n})`;
}
