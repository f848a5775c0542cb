/**
 * `skill resume JOB`: take over a RUNNING job whose runner was killed (-9) while its tool session
 * still waits (`orphan_grace_ms`), and finish it from where it stopped, on the same session: no
 * second launch, no second restore. A job whose session is gone is closed (RUNNER_GONE) instead.
 * The job's resume lock (session/resume.lock) is held throughout, so two resumes, or a resume
 * and a close, never both act on one job.
 */
import { existsSync, readFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import type { Clock } from "../core/index.ts";
import {
  ErrorCode,
  JOB_ID_PATTERN,
  readConfig,
  systemClock,
  TimewarpError,
  workspacePaths,
} from "../core/index.ts";
import { staleMsFromSettings } from "./heartbeat.ts";
import { continueJob, type SkillPilotSettings, timingsFrom } from "./job.ts";
import { closeJob, readManifest, tryResumeLock } from "./jobs.ts";
import { observeOrphan } from "./orphan.ts";
import { type Manifest, type Summary, SummarySchema } from "./protocol.ts";
import { type ResumePoint, readTimeline, resumePointOf } from "./resume-point.ts";
import {
  createTimeline,
  defaultProtocolIo,
  type ProtocolIo,
  type RunPaths,
  runPathsFor,
  runsRootFor,
} from "./run-dir.ts";
import { writeRunnerFile } from "./runner-file.ts";
import type { SchedulerEventName, SchedulerFacts } from "./scheduler.ts";
import { planSlurm } from "./scheduler-slurm.ts";
import { attachToolSession, type SessionTimings } from "./session.ts";

export interface ResumeJobOptions {
  cwd: string;
  jobId: string;
  /** Settings; default: the `skillpilot` section of `<cwd>/.timewarp/config.json`. */
  settings?: SkillPilotSettings;
  timings?: Partial<SessionTimings>;
  clock?: Clock;
  io?: ProtocolIo;
  /** Abort (SIGINT/SIGTERM): the resumed job ends FAIL (INTERNAL_ERROR / INTERRUPTED). */
  signal?: AbortSignal;
  onProgress?: (message: string) => void;
}

export interface ResumeJobResult {
  /** `resumed`: the job was taken over and finished; `closed`: its session was gone. */
  outcome: "resumed" | "closed";
  summary: Summary;
  manifest: Manifest;
  runDir: string;
}

function notResumable(jobId: string, reason: string, message: string): TimewarpError {
  return new TimewarpError(ErrorCode.JOB_NOT_RESUMABLE, `job ${jobId}: ${message}`, {
    data: { job_id: jobId, reason },
  });
}

function readSummary(paths: RunPaths): Summary {
  return SummarySchema.parse(JSON.parse(readFileSync(paths.summaryJson, "utf8")));
}

/**
 * Resume a job (see the file's header). JOB_NOT_FOUND for an unknown id; JOB_NOT_RESUMABLE when
 * the job is not RUNNING, its runner still lives, another resume holds it, or its runner was on
 * another host. A job whose session is gone (or that stopped before its session was ready) is
 * closed FAIL / INTERNAL_ERROR / RUNNER_GONE, and the result says `closed`.
 *
 * @example
 * const { outcome, summary } = await resumeJob({ cwd, jobId: "20261127_001500_4242_ab12" });
 */
export async function resumeJob(o: ResumeJobOptions): Promise<ResumeJobResult> {
  const clock = o.clock ?? systemClock;
  const io = o.io ?? defaultProtocolIo;
  const runDir = join(runsRootFor(o.cwd), o.jobId);
  if (!JOB_ID_PATTERN.test(o.jobId) || !readManifest(runDir)) {
    throw new TimewarpError(ErrorCode.JOB_NOT_FOUND, `no job ${o.jobId} in ${runsRootFor(o.cwd)}`, {
      data: { job_id: o.jobId },
    });
  }
  assertRunning(o.jobId, readManifest(runDir));
  const lock = tryResumeLock(runDir, `timewarp skill resume ${o.jobId}`);
  if (!lock) {
    throw notResumable(o.jobId, "locked", "another process is resuming or closing it right now");
  }
  try {
    return await resumeLocked({ ...o, clock, io, runDir });
  } finally {
    lock.release();
  }
}

function assertRunning(jobId: string, m: Manifest | undefined): asserts m is Manifest {
  if (m?.status !== "RUNNING") {
    const when = m?.finished_at ? `, finished at ${m.finished_at}` : "";
    throw notResumable(
      jobId,
      "not_running",
      `status is ${m?.status ?? "unknown"}${m?.error_type ? ` ${m.error_type}` : ""}${when}; only a RUNNING job whose runner is gone can be resumed`,
    );
  }
}

async function resumeLocked(
  o: ResumeJobOptions & { clock: Clock; io: ProtocolIo; runDir: string },
): Promise<ResumeJobResult> {
  const { clock, io, runDir } = o;
  const paths = runPathsFor(runDir);
  const m = readManifest(runDir);
  assertRunning(o.jobId, m);
  const settings = o.settings ?? readConfig(workspacePaths(o.cwd).config).skillpilot;
  const { verdict } = observeOrphan(paths, m, {
    heartbeatStaleMs: staleMsFromSettings(settings),
    now: clock.now(),
  });
  if (verdict.kind === "foreign") {
    throw notResumable(o.jobId, "other_host", `its runner ran on ${m.runtime.host}, not here`);
  }
  if (verdict.kind === "owned") {
    throw notResumable(
      o.jobId,
      "runner_alive",
      `its runner pid ${verdict.pid ?? "?"} is alive: another runner owns it`,
    );
  }
  const close = async (why: string): Promise<ResumeJobResult> => {
    const manifest = await closeJob({
      runDir,
      manifest: m,
      why,
      by: "timewarp skill resume",
      clock,
      io,
    });
    return { outcome: "closed", summary: readSummary(paths), manifest, runDir };
  };
  if (verdict.kind === "gone") return close(verdict.why);
  const point = resumePointOf(readTimeline(paths.timeline), m.runtime.session !== undefined);
  if (!point.ok)
    return close(`it stopped in ${point.stoppedIn ?? "no state"}, before its session was ready`);
  const session = takeOver({ ...o, paths, manifest: m, settings, point });
  if (!(await sessionAcknowledged(paths, session.alive, timingsFrom(settings, o.timings)))) {
    await session.stop();
    return close("the session ended as it was being resumed");
  }
  const result = await continueJob({
    manifest: m,
    session,
    from: point.from,
    settings,
    clock,
    io,
    ...(o.timings ? { timings: o.timings } : {}),
    ...(o.signal ? { signal: o.signal } : {}),
    ...(o.onProgress ? { onProgress: o.onProgress } : {}),
  });
  return { outcome: "resumed", ...result };
}

/**
 * Make this process the job's runner: session/runner.json (which the tool reads), the manifest's
 * runtime, the RESUME event, the exit of the state the dead runner left open; then attach a
 * supervisor to the live session. Each write is whole (temp + rename, or one appended line), so a
 * kill -9 at any point leaves the job RUNNING with a dead runner: resumable again, or closed.
 */
function takeOver(o: {
  paths: RunPaths;
  manifest: Manifest;
  settings: SkillPilotSettings;
  point: Extract<ResumePoint, { ok: true }>;
  clock: Clock;
  io: ProtocolIo;
  timings?: Partial<SessionTimings>;
}) {
  const { paths, manifest: m, clock, io } = o;
  const grace = m.runtime.orphan_grace_ms;
  const orphanGraceMs = typeof grace === "number" ? grace : o.settings.orphan_grace_ms;
  const previous = m.runtime.pid;
  const orphan = existsSync(paths.orphan);
  const runner = writeRunnerFile(paths, io, { clock, orphanGraceMs });
  const resumes = Array.isArray(m.runtime.resumes) ? m.runtime.resumes : [];
  m.runtime = {
    ...m.runtime,
    pid: runner.pid,
    host: runner.host,
    orphan_grace_ms: orphanGraceMs,
    resumes: [...resumes, { at: runner.since, pid: runner.pid, previous_pid: previous ?? null }],
  };
  const timeline = createTimeline({ path: paths.timeline, jobId: m.job_id, clock, io });
  timeline.append({
    level: "INFO",
    event: "RESUME",
    message: `runner pid ${previous ?? "?"} was gone; pid ${runner.pid} on ${hostname()} took the session over`,
    data: {
      previous_runner_pid: previous ?? null,
      runner_pid: runner.pid,
      from: o.point.from,
      tool_pid: m.runtime.session?.tool_pid ?? null,
      pgid: m.runtime.session?.pgid ?? null,
      orphaned: orphan,
    },
  });
  if (o.point.open) {
    timeline.append({
      level: "WARN",
      event: "STATE_EXIT",
      state: o.point.open,
      data: { left_by: "runner_gone" },
    });
  }
  m.updated_at = clock.now().toISOString();
  io.writeFile(paths.manifest, `${JSON.stringify(m, null, 2)}\n`);
  return attachToolSession({
    runDir: paths.runDir,
    jobId: m.job_id,
    adapter: m.runtime.adapter,
    command: m.runtime.session?.command ?? [],
    pgid: m.runtime.session?.pgid ?? 0,
    timings: timingsFrom(o.settings, o.timings),
    clock,
    io,
    ...(m.runtime.adapter === "slurm"
      ? {
          // the dead runner's Slurm job, found again by its name: followed, and cancelled at the end
          scheduler: planSlurm({
            settings: o.settings.slurm,
            jobId: m.job_id,
            queueWaitTimeoutMs: o.settings.queue_wait_timeout_ms,
          }),
          onSchedulerEvent: (event: SchedulerEventName, facts: SchedulerFacts) => {
            m.runtime.scheduler = facts;
            try {
              timeline.append({ level: "INFO", event, data: { ...facts } });
            } catch {
              // diagnostics: the terminal writes record the end anyway
            }
          },
        }
      : {}),
  });
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * Wait until the tool has seen its new runner: it removes session/orphan.json when it does (a
 * tool that never wrote one was busy, and sees it at its next check). False when the tool ended
 * first — its grace ran out just as the resume came.
 */
async function sessionAcknowledged(
  paths: RunPaths,
  alive: () => boolean,
  timings: SessionTimings,
): Promise<boolean> {
  const until = performance.now() + 3 * timings.heartbeatIntervalMs + 2_000;
  while (existsSync(paths.orphan) && alive() && performance.now() < until) await sleep(10);
  return alive();
}
