import { existsSync, readdirSync, readFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import type { Clock } from "../core/index.ts";
import {
  ErrorCode,
  isProcessAlive,
  JOB_ID_PATTERN,
  systemClock,
  TimewarpError,
} from "../core/index.ts";
import { writeDebugBundle } from "./debug-bundle.ts";
import { endProcessGroup, processGroupAlive } from "./process-group.ts";
import {
  type Manifest,
  ManifestSchema,
  SCHEMA_VERSION,
  type Summary,
  SummarySchema,
} from "./protocol.ts";
import { sweepTempFiles } from "./request-files.ts";
import {
  createTimeline,
  defaultProtocolIo,
  type ProtocolIo,
  runPathsFor,
  runsRootFor,
} from "./run-dir.ts";
import { formatSummaryMarkdown } from "./summary.ts";

/** One line of `skill runs`. */
export interface JobListing {
  job_id: string;
  status: "RUNNING" | "PASS" | "FAIL" | "UNKNOWN";
  error_type: string | null;
  skill: string | null;
  design: string | null;
  created_at: string | null;
  run_dir: string;
}

function readManifest(runDir: string): Manifest | undefined {
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

/**
 * Close every RUNNING job of this CWD whose runner is gone (killed -9, machine rebooted): it
 * becomes FAIL / INTERNAL_ERROR / RUNNER_GONE with the reason, its session group is ended, and it
 * gets a summary and a debug bundle like any FAIL. Jobs of other hosts are left alone.
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
    const m = readManifest(runDir);
    if (m?.status !== "RUNNING") continue;
    if (m.runtime.host !== undefined && m.runtime.host !== hostname()) continue;
    if (m.runtime.pid !== undefined && isProcessAlive(m.runtime.pid)) continue;
    const paths = runPathsFor(runDir);
    const pgid = m.runtime.session?.pgid;
    if (pgid !== undefined && processGroupAlive(pgid)) await endProcessGroup(pgid);
    if (pgid === undefined || !processGroupAlive(pgid)) sweepTempFiles(paths);
    const reason = `runner pid ${m.runtime.pid ?? "?"} is gone; the job was closed by a later timewarp run`;
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
    closed.push(id);
  }
  return closed;
}

/** Every job of this CWD, oldest first (stale RUNNING jobs are closed first). */
export async function listJobs(options: { cwd: string; clock?: Clock }): Promise<JobListing[]> {
  await closeStaleJobs(options);
  return jobIds(options.cwd).map((id) => {
    const runDir = join(runsRootFor(options.cwd), id);
    const m = readManifest(runDir);
    return {
      job_id: id,
      status: m?.status ?? "UNKNOWN",
      error_type: m?.error_type ?? null,
      skill: m?.skill.name ?? null,
      design: m?.design.enc_path || m?.design.locator.query || null,
      created_at: m?.created_at ?? null,
      run_dir: runDir,
    };
  });
}

/** One job: its manifest and summary. JOB_NOT_FOUND for an unknown id. */
export async function showJob(options: { cwd: string; jobId: string; clock?: Clock }): Promise<{
  job_id: string;
  run_dir: string;
  manifest: Manifest;
  summary: Summary | null;
}> {
  if (!JOB_ID_PATTERN.test(options.jobId)) {
    throw new TimewarpError(
      ErrorCode.JOB_NOT_FOUND,
      `invalid job id ${JSON.stringify(options.jobId)}: expected YYYYMMDD_HHMMSS_<pid>_<rand4>`,
    );
  }
  await closeStaleJobs(options);
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
  let summary: Summary | null = null;
  try {
    summary = SummarySchema.parse(JSON.parse(readFileSync(join(runDir, "summary.json"), "utf8")));
  } catch {
    summary = null;
  }
  return { job_id: options.jobId, run_dir: runDir, manifest, summary };
}
