import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { Clock, LockHandle } from "../core/index.ts";
import {
  acquireLock,
  ErrorCode,
  isTimewarpError,
  JOB_ID_PATTERN,
  parseConfig,
  readConfig,
  systemClock,
  TimewarpError,
  workspacePaths,
} from "../core/index.ts";
import { writeDebugBundle } from "./debug-bundle.ts";
import { staleMsFromSettings } from "./heartbeat.ts";
import { readSummary } from "./job-files.ts";
import { type OrphanVerdict, observeOrphan } from "./orphan.ts";
import { endProcessGroup, processGroupAlive } from "./process-group.ts";
import { type Manifest, ManifestSchema, SCHEMA_VERSION, type Summary } from "./protocol.ts";
import { unansweredRequests } from "./queued-request.ts";
import { publishSupervisorAck, sweepTempFiles } from "./request-files.ts";
import { openStateOf, readTimeline } from "./resume-point.ts";
import {
  createTimeline,
  defaultProtocolIo,
  type ProtocolIo,
  runPathsFor,
  runsRootFor,
} from "./run-dir.ts";
import { readRunnerFile } from "./runner-file.ts";
import { runSchedulerCommand } from "./scheduler-watch.ts";
import { formatSummaryMarkdown } from "./summary.ts";

/** One line of `skill runs`. */
export interface JobListing {
  job_id: string;
  status: "RUNNING" | "PASS" | "FAIL" | "UNKNOWN";
  /** RUNNING only: its runner is gone but its session waits for `timewarp skill resume`. */
  resumable: boolean;
  /** When the waiting session ends itself (null: not resumable, or the tool has not said yet). */
  resumable_until: string | null;
  error_type: string | null;
  detail_code: string | null;
  skill: string | null;
  design: string | null;
  created_at: string | null;
  finished_at: string | null;
  run_dir: string;
}

export function readManifest(runDir: string): Manifest | undefined {
  try {
    return ManifestSchema.parse(
      JSON.parse(readFileSync(join(runDir, "job_manifest.json"), "utf8")),
    );
  } catch {
    return undefined;
  }
}

function jobIds(cwd: string): string[] {
  try {
    return readdirSync(runsRootFor(cwd))
      .filter((n) => JOB_ID_PATTERN.test(n))
      .sort();
  } catch {
    return [];
  }
}

function heartbeatStaleMsFor(cwd: string): number {
  try {
    return staleMsFromSettings(readConfig(workspacePaths(cwd).config).skillpilot);
  } catch {
    return staleMsFromSettings(parseConfig({}, "defaults").skillpilot);
  }
}

/** A RUNNING job as `skill runs`/`show` see it: whose it is, and whether it can be resumed. */
function judge(runDir: string, m: Manifest, o: { cwd: string; clock: Clock }): OrphanVerdict {
  return observeOrphan(runPathsFor(runDir), m, {
    heartbeatStaleMs: heartbeatStaleMsFor(o.cwd),
    now: o.clock.now(),
  }).verdict;
}

/** `scancel` a closed job's Slurm job unless it is known to have ended; a failure is left to the scheduler. */
async function releaseSchedulerJob(m: Manifest): Promise<void> {
  const s = m.runtime.scheduler;
  if (s?.kind !== "slurm" || !s.job_id || s.ending) return;
  let scancel = "scancel";
  try {
    scancel = readConfig(workspacePaths(m.runtime.cwd).config).skillpilot.slurm.scancel;
  } catch {
    // the default command
  }
  await runSchedulerCommand([scancel, s.job_id], process.env);
}

/**
 * Close a RUNNING job whose runner is gone: FAIL / INTERNAL_ERROR / RUNNER_GONE with the reason,
 * its session group ended, a summary and a debug bundle like any FAIL. The caller holds the
 * job's resume lock.
 */
export async function closeJob(o: {
  runDir: string;
  manifest: Manifest;
  why: string;
  by: string;
  clock: Clock;
  io: ProtocolIo;
}): Promise<Manifest> {
  const { runDir, manifest: m, clock, io } = o;
  const id = m.job_id;
  const paths = runPathsFor(runDir);
  const pgid = m.runtime.session?.pgid;
  // the dead runner's scheduler job (--adapter slurm) holds an allocation until it is cancelled
  await releaseSchedulerJob(m);
  if (pgid !== undefined && processGroupAlive(pgid)) await endProcessGroup(pgid);
  if (pgid === undefined || !processGroupAlive(pgid)) sweepTempFiles(paths);
  const runnerPid = readRunnerFile(paths)?.pid ?? m.runtime.pid;
  const reason = `runner pid ${runnerPid ?? "?"} is gone (${o.why}); the job was closed by ${o.by}`;
  // every request in queue/ keeps exactly one ack: the ones nobody answered get the supervisor's
  for (const requestId of unansweredRequests(paths)) {
    publishSupervisorAck(
      paths,
      io,
      clock,
      { requestId, jobId: id, startedAt: clock.now().toISOString() },
      { error_type: "INTERNAL_ERROR", detail_code: "RUNNER_GONE", message: reason },
    );
  }
  const failure = {
    error_type: "INTERNAL_ERROR" as const,
    detail_code: "RUNNER_GONE",
    message: reason,
  };
  const timeline = createTimeline({ path: paths.timeline, jobId: id, clock, io });
  const summary: Summary = {
    schema_version: SCHEMA_VERSION,
    job_id: id,
    status: "FAIL",
    error_type: failure.error_type,
    detail_code: failure.detail_code,
    message: reason,
    design: { enc_path: m.design.enc_path, enc_dat_path: m.design.enc_dat_path },
    skill: { name: m.skill.name, version: m.skill.version },
    metrics: {},
    risks: [reason],
    evidence: {
      run_dir: runDir,
      summary_md: paths.summaryMd,
      reports_dir: paths.reports,
      debug_bundle_dir: paths.debugBundle,
    },
  };
  io.writeFile(paths.summaryJson, `${JSON.stringify(summary, null, 2)}\n`);
  io.writeFile(paths.summaryMd, formatSummaryMarkdown(summary));
  // the state its runner left open is left here, so that every state entered has its exit
  const openState = openStateOf(readTimeline(paths.timeline));
  if (openState) {
    timeline.append({
      level: "WARN",
      event: "STATE_EXIT",
      state: openState,
      data: { left_by: "runner_gone" },
    });
  }
  timeline.append({
    level: "ERROR",
    event: "FAIL",
    message: reason,
    data: { error_type: failure.error_type, detail_code: failure.detail_code },
  });
  const closedManifest: Manifest = {
    ...m,
    status: "FAIL",
    error_type: failure.error_type,
    detail_code: failure.detail_code,
    message: reason,
    closed_reason: reason,
    finished_at: clock.now().toISOString(),
    artifacts: { ...m.artifacts, debug_bundle_dir: "debug_bundle" },
  };
  io.writeFile(paths.manifest, `${JSON.stringify(closedManifest, null, 2)}\n`);
  if (!existsSync(paths.debugBundle)) {
    try {
      writeDebugBundle({ paths, jobId: id, failure, io, notes: [reason] });
    } catch {
      // the manifest already says FAIL
    }
  }
  return closedManifest;
}

/** Take a job's resume lock, or undefined when a live process holds it (it owns the job now). */
export function tryResumeLock(runDir: string, command: string): LockHandle | undefined {
  try {
    return acquireLock(runPathsFor(runDir).resumeLock, { command });
  } catch (error) {
    if (isTimewarpError(error, ErrorCode.LOCKED)) return undefined;
    throw error;
  }
}

/**
 * Close every RUNNING job of this CWD whose runner is gone (killed -9, machine rebooted) and
 * whose session cannot be resumed (it ended, its grace passed, or `orphan_grace_ms` is 0): see
 * `closeJob`. A job whose session is alive and waiting is left RUNNING for `skill resume`; jobs
 * of other hosts are left alone.
 */
export async function closeStaleJobs(options: {
  cwd: string;
  clock?: Clock;
  io?: ProtocolIo;
}): Promise<string[]> {
  const clock = options.clock ?? systemClock;
  const io = options.io ?? defaultProtocolIo;
  const closed: string[] = [];
  for (const id of jobIds(options.cwd)) {
    const runDir = join(runsRootFor(options.cwd), id);
    const seen = readManifest(runDir);
    // judged first without the lock: a job its runner owns is not touched at all
    if (seen?.status !== "RUNNING") continue;
    if (judge(runDir, seen, { cwd: options.cwd, clock }).kind !== "gone") continue;
    const lock = tryResumeLock(runDir, "closing a stale job");
    if (!lock) continue;
    try {
      // read and judged again under the lock: a resume may have just taken it over
      const m = readManifest(runDir);
      if (m?.status !== "RUNNING") continue;
      const verdict = judge(runDir, m, { cwd: options.cwd, clock });
      if (verdict.kind !== "gone") continue;
      await closeJob({
        runDir,
        manifest: m,
        why: verdict.why,
        by: "a later timewarp run",
        clock,
        io,
      });
      closed.push(id);
    } finally {
      lock.release();
    }
  }
  return closed;
}

/**
 * Every job of this CWD, oldest first. Stale RUNNING jobs are closed first unless `close` is false
 * (the read-only dashboard: it shows them as they are, with the resume verdict).
 */
export async function listJobs(options: {
  cwd: string;
  clock?: Clock;
  close?: boolean;
}): Promise<JobListing[]> {
  const clock = options.clock ?? systemClock;
  if (options.close !== false) await closeStaleJobs(options);
  return jobIds(options.cwd).map((id) => {
    const runDir = join(runsRootFor(options.cwd), id);
    const m = readManifest(runDir);
    const verdict = m?.status === "RUNNING" ? judge(runDir, m, { ...options, clock }) : undefined;
    return {
      job_id: id,
      status: m?.status ?? "UNKNOWN",
      resumable: verdict?.kind === "resumable",
      resumable_until: verdict?.kind === "resumable" ? verdict.until : null,
      error_type: m?.error_type ?? null,
      detail_code: m?.detail_code ?? null,
      skill: m?.skill.name ?? null,
      design: m?.design.enc_path || m?.design.locator.query || null,
      created_at: m?.created_at ?? null,
      finished_at: m?.finished_at ?? null,
      run_dir: runDir,
    };
  });
}

/** One job: its manifest and summary. JOB_NOT_FOUND for an unknown id. */
export async function showJob(options: {
  cwd: string;
  jobId: string;
  clock?: Clock;
  /** false: leave a stale RUNNING job as it is (the read-only dashboard). */
  close?: boolean;
}): Promise<{
  job_id: string;
  run_dir: string;
  manifest: Manifest;
  summary: Summary | null;
  /** RUNNING with its runner gone and its session waiting: until when (null: not said yet). */
  resumable: { until: string | null } | null;
}> {
  if (!JOB_ID_PATTERN.test(options.jobId)) {
    throw new TimewarpError(
      ErrorCode.JOB_NOT_FOUND,
      `invalid job id ${JSON.stringify(options.jobId)}: expected YYYYMMDD_HHMMSS_<pid>_<rand4>`,
    );
  }
  if (options.close !== false) await closeStaleJobs(options);
  const runDir = join(runsRootFor(options.cwd), options.jobId);
  const manifest = readManifest(runDir);
  if (!manifest) {
    const have = jobIds(options.cwd);
    throw new TimewarpError(
      ErrorCode.JOB_NOT_FOUND,
      `no job ${options.jobId} in ${runsRootFor(options.cwd)} (have ${have.length}${have.length ? `: ${have.slice(-5).join(", ")}` : ""})`,
      { data: { job_id: options.jobId } },
    );
  }
  const summary = readSummary(runDir);
  const verdict =
    manifest.status === "RUNNING"
      ? judge(runDir, manifest, { cwd: options.cwd, clock: options.clock ?? systemClock })
      : undefined;
  const resumable = verdict?.kind === "resumable" ? { until: verdict.until } : null;
  return { job_id: options.jobId, run_dir: runDir, manifest, summary, resumable };
}
