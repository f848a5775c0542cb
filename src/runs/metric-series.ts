import type { Clock } from "../core/index.ts";
import { flattenMetrics } from "./compare.ts";
import { readSummary } from "./job-files.ts";
import { listJobs } from "./jobs.ts";

/** One job of a skill with its flattened metrics (dotted keys, as `skill compare` names them). */
export interface SeriesJob {
  job_id: string;
  created_at: string | null;
  status: string;
  error_type: string | null;
  metrics: Record<string, unknown>;
}

export interface MetricSeries {
  skill: string;
  /** Oldest first. */
  jobs: SeriesJob[];
  /** The numeric metrics every job with metrics has: one series each. */
  shared: string[];
}

/** The keys whose value is a number in every metrics map given (pure), sorted. */
export function sharedNumericKeys(maps: readonly Record<string, unknown>[]): string[] {
  const [first, ...rest] = maps;
  if (first === undefined) return [];
  return Object.keys(first)
    .filter((k) => rest.every((m) => typeof m[k] === "number") && typeof first[k] === "number")
    .sort();
}

/**
 * The metrics of every job of one skill in this CWD, oldest first (summary.json `metrics`,
 * flattened as `skill compare` does), and the numeric ones they all share. A job without a
 * summary (still running, closed before it wrote one) has no metrics. Read-only: stale jobs are left as they are.
 */
export async function skillMetricSeries(options: {
  cwd: string;
  skill: string;
  clock?: Clock;
}): Promise<MetricSeries> {
  // by start time: ids sort by second, and two jobs of one second by their random suffix
  const jobs = (await listJobs({ ...options, close: false }))
    .filter((j) => j.skill === options.skill)
    .sort((a, b) => (a.created_at ?? "").localeCompare(b.created_at ?? ""));
  const series = jobs.map((j) => ({
    job_id: j.job_id,
    created_at: j.created_at,
    status: j.status,
    error_type: j.error_type,
    metrics: Object.fromEntries(flattenMetrics(readSummary(j.run_dir)?.metrics ?? {})),
  }));
  const withMetrics = series.map((s) => s.metrics).filter((m) => Object.keys(m).length > 0);
  return { skill: options.skill, jobs: series, shared: sharedNumericKeys(withMetrics) };
}
