import type { Clock } from "../core/index.ts";
import { ErrorCode, TimewarpError } from "../core/index.ts";
import { showJob } from "./jobs.ts";

/** How one metric moved from the first job to the second. */
export type MetricChange = "same" | "changed" | "added" | "removed";

/** One metric (dotted key) across two jobs. `a`/`b` are null when the job lacks it. */
export interface MetricDiff {
  key: string;
  a: unknown;
  b: unknown;
  change: MetricChange;
  /** b − a, when both are numbers. */
  delta?: number;
  /** (b − a) / |a| when both are numbers; null when a is 0 and b is not. */
  relative?: number | null;
}

/** What `skill compare` says about each job. */
export interface ComparedJob {
  job_id: string;
  status: string;
  error_type: string | null;
  detail_code: string | null;
  skill: string;
  version: string;
  run_dir: string;
  /** False while the job has no summary.json yet (still running): its metrics count as none. */
  has_summary: boolean;
}

export interface CompareResult {
  skill: string;
  /** True when the skills differ and --force compared them anyway. */
  forced: boolean;
  jobs: [ComparedJob, ComparedJob];
  metrics: MetricDiff[];
  counts: Record<MetricChange, number>;
}

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * Metrics flattened with dotted keys (pure): `{timing: {wns_ns: 1}}` → `timing.wns_ns`. Arrays
 * and empty objects are values of their own, compared whole.
 */
export function flattenMetrics(
  metrics: Record<string, unknown>,
  prefix = "",
  out: Map<string, unknown> = new Map(),
): Map<string, unknown> {
  for (const [k, v] of Object.entries(metrics)) {
    const key = prefix === "" ? k : `${prefix}.${k}`;
    if (isPlainObject(v) && Object.keys(v).length > 0) flattenMetrics(v, key, out);
    else out.set(key, v);
  }
  return out;
}

/** Round away binary noise (0.1 + 0.2): 12 significant digits. */
const tidy = (n: number) => Number(n.toPrecision(12));

function diffOne(key: string, a: unknown, b: unknown): MetricDiff {
  if (a === undefined) return { key, a: null, b, change: "added" };
  if (b === undefined) return { key, a, b: null, change: "removed" };
  if (typeof a === "number" && typeof b === "number") {
    const delta = tidy(b - a);
    const relative = a !== 0 ? tidy(delta / Math.abs(a)) : delta === 0 ? 0 : null;
    return { key, a, b, change: a === b ? "same" : "changed", delta, relative };
  }
  return { key, a, b, change: JSON.stringify(a) === JSON.stringify(b) ? "same" : "changed" };
}

/** The metric differences of two jobs, sorted by key (pure). */
export function diffMetrics(a: Record<string, unknown>, b: Record<string, unknown>): MetricDiff[] {
  const fa = flattenMetrics(a);
  const fb = flattenMetrics(b);
  const keys = [...new Set([...fa.keys(), ...fb.keys()])].sort();
  return keys.map((k) => diffOne(k, fa.get(k), fb.get(k)));
}

async function loadSide(cwd: string, jobId: string, clock?: Clock) {
  const job = await showJob({ cwd, jobId, ...(clock ? { clock } : {}) });
  const m = job.manifest;
  const side: ComparedJob = {
    job_id: job.job_id,
    status: m.status,
    error_type: m.error_type ?? null,
    detail_code: m.detail_code ?? null,
    skill: m.skill.name,
    version: m.skill.version,
    run_dir: job.run_dir,
    has_summary: job.summary !== null,
  };
  return { side, metrics: job.summary?.metrics ?? {} };
}

/**
 * `skill compare JOB1 JOB2`: each job's status and error_type, and every metric of their
 * summary.json (flattened, dotted keys) — both values, the delta and relative change for numbers,
 * changed/same for others, added/removed. JOB_NOT_FOUND for an unknown id; SKILL_MISMATCH for
 * jobs of different skills unless `force`.
 */
export async function compareJobs(options: {
  cwd: string;
  jobA: string;
  jobB: string;
  force?: boolean;
  clock?: Clock;
}): Promise<CompareResult> {
  const a = await loadSide(options.cwd, options.jobA, options.clock);
  const b = await loadSide(options.cwd, options.jobB, options.clock);
  const mismatch = a.side.skill !== b.side.skill;
  if (mismatch && options.force !== true) {
    throw new TimewarpError(
      ErrorCode.SKILL_MISMATCH,
      `job ${a.side.job_id} ran ${a.side.skill} and job ${b.side.job_id} ran ${b.side.skill}: metrics compare within one skill (--force compares them anyway)`,
      { data: { skills: [a.side.skill, b.side.skill], jobs: [a.side.job_id, b.side.job_id] } },
    );
  }
  const metrics = diffMetrics(a.metrics, b.metrics);
  const counts: Record<MetricChange, number> = { same: 0, changed: 0, added: 0, removed: 0 };
  for (const m of metrics) counts[m.change]++;
  return {
    skill: mismatch ? `${a.side.skill} | ${b.side.skill}` : a.side.skill,
    forced: mismatch,
    jobs: [a.side, b.side],
    metrics,
    counts,
  };
}

const show = (v: unknown): string =>
  v === null || v === undefined ? "-" : typeof v === "string" ? v : JSON.stringify(v);

const signed = (n: number, text: string) => (n > 0 ? `+${text}` : text);

function deltaText(m: MetricDiff): [string, string] {
  if (m.delta === undefined) return [m.change === "same" ? "" : m.change, ""];
  const rel =
    m.relative === undefined || m.relative === null
      ? m.delta === 0
        ? ""
        : "from 0"
      : signed(m.relative, `${(m.relative * 100).toFixed(1)}%`);
  return [m.delta === 0 ? "0" : signed(m.delta, String(m.delta)), m.delta === 0 ? "" : rel];
}

/** Columns padded to their widest cell (pure). */
function alignRows(rows: string[][]): string[] {
  const widths: number[] = [];
  for (const r of rows) {
    r.forEach((c, i) => {
      widths[i] = Math.max(widths[i] ?? 0, c.length);
    });
  }
  return rows.map((r) =>
    r
      .map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
      .join("  ")
      .trimEnd(),
  );
}

/** The text of `skill compare`: the two jobs, then one aligned row per metric (pure). */
export function formatCompare(result: CompareResult): string {
  const [a, b] = result.jobs;
  const head = alignRows(
    [a, b].map((j, i) => [
      `JOB${i + 1}`,
      j.job_id,
      j.status,
      `${j.error_type ?? "-"}${j.detail_code ? ` (${j.detail_code})` : ""}`,
      `${j.skill} ${j.version}${j.has_summary ? "" : "  (no summary yet)"}`,
    ]),
  );
  const lines = [
    `skill ${result.skill}${result.forced ? "  (forced: different skills)" : ""}`,
    ...head,
    "",
  ];
  if (result.metrics.length === 0) {
    lines.push("no metrics in either summary.json");
    return lines.join("\n");
  }
  const rows = [
    ["metric", "JOB1", "JOB2", "delta", "relative"],
    ...result.metrics.map((m) => [m.key, show(m.a), show(m.b), ...deltaText(m)]),
  ];
  lines.push(...alignRows(rows));
  const c = result.counts;
  lines.push("", `${c.changed} changed, ${c.same} same, ${c.added} added, ${c.removed} removed`);
  return lines.join("\n");
}
