import { existsSync, readFileSync } from "node:fs";
import { hostname, userInfo } from "node:os";
import { join, relative } from "node:path";
import type { Clock, Config, Random } from "../core/index.ts";
import {
  isTimewarpError,
  readConfig,
  systemClock,
  systemRandom,
  TIMEWARP_VERSION,
  workspacePaths,
  writeFileAtomic,
} from "../core/index.ts";
import { type AuditTrail, auditPath, createAuditTrail, requestPolicyFor } from "./audit.ts";
import {
  type CheckedContract,
  type Contract,
  checkContract,
  readCheckedEntry,
  readContract,
  scriptFileName,
} from "./contract.ts";
import { writeDebugBundle } from "./debug-bundle.ts";
import { staleMsFromSettings } from "./heartbeat.ts";
import { createJobRecord, type JobRecord } from "./job-record.ts";
import { closeStaleJobs } from "./jobs.ts";
import { tclQuote } from "./launch.ts";
import { locateDesign } from "./locator.ts";
import {
  type Ack,
  type AdapterName,
  type JobState,
  type Manifest,
  SCHEMA_VERSION,
  type Summary,
} from "./protocol.ts";
import { readQueuedRequest } from "./queued-request.ts";
import { readAck } from "./request-files.ts";
import { RESUMABLE_STATES, type ResumableState } from "./resume-point.ts";
import {
  createRunDir,
  createTimeline,
  defaultProtocolIo,
  type ProtocolIo,
  type RunPaths,
  runPathsFor,
  type Timeline,
} from "./run-dir.ts";
import { writeRunnerFile } from "./runner-file.ts";
import type { SchedulerEventName, SchedulerFacts } from "./scheduler.ts";
import { planSlurm } from "./scheduler-slurm.ts";
import { type SessionTimings, startToolSession, type ToolSession } from "./session.ts";
import { findSkill } from "./skills.ts";
import { formatSummaryMarkdown } from "./summary.ts";
import { failureOf, type JobFailure, jobFailed } from "./taxonomy.ts";
import { validateOutputs } from "./validate-outputs.ts";

export type SkillPilotSettings = Config["skillpilot"];

export interface RunSkillOptions {
  /** The user's working directory: the design is looked up here and `.skillpilot/runs/` lives here. */
  cwd: string;
  /** A subskill name (looked up in subskills/, .skillpilot/subskills/, the package examples) or a folder path. */
  skill: string;
  /** `AAA` (scan CWD) or an explicit `./AAA.enc`. */
  design: string;
  adapter?: AdapterName;
  /** `--adapter slurm` overrides of `skillpilot.slurm`: `--partition`, `--time`, `--slurm-arg` (added). */
  slurm?: { partition?: string; time?: string; args?: string[] };
  /** 1-based choice among several scan candidates. */
  select?: number;
  /** Settings; default: the `skillpilot` section of `<cwd>/.timewarp/config.json`. */
  settings?: SkillPilotSettings;
  /** Overrides of the settings' timings (tests and the benchmark use small ones). */
  timings?: Partial<SessionTimings>;
  clock?: Clock;
  random?: Random;
  io?: ProtocolIo;
  env?: NodeJS.ProcessEnv;
  /** Abort (SIGINT/SIGTERM): the job ends FAIL (INTERNAL_ERROR / INTERRUPTED), never RUNNING. */
  signal?: AbortSignal;
  onProgress?: (message: string) => void;
}

export interface RunSkillResult {
  summary: Summary;
  manifest: Manifest;
  runDir: string;
}

/** The session timings in force: settings, then explicit overrides. */
export function timingsFrom(
  settings: SkillPilotSettings,
  overrides: Partial<SessionTimings> = {},
): SessionTimings {
  return {
    readyTimeoutMs: settings.ready_timeout_ms,
    heartbeatStaleMs: staleMsFromSettings(settings),
    requestTimeoutMs: settings.request_timeout_ms,
    pollMs: settings.poll_ms,
    heartbeatIntervalMs: settings.heartbeat_interval_ms,
    ackPollMs: 50,
    watchAcks: true,
    queueWaitTimeoutMs: settings.queue_wait_timeout_ms,
    ...overrides,
  };
}

function toFailure(error: unknown): JobFailure {
  const failure = failureOf(error);
  if (failure) return failure;
  if (isTimewarpError(error)) {
    return { error_type: "INTERNAL_ERROR", detail_code: error.code, message: error.message };
  }
  return {
    error_type: "INTERNAL_ERROR",
    detail_code: "UNEXPECTED",
    message: error instanceof Error ? error.message : String(error),
  };
}

function ackFailure(ack: Ack): JobFailure {
  return {
    error_type: ack.error_type === "OK" ? "INTERNAL_ERROR" : ack.error_type,
    ...(ack.detail_code ? { detail_code: ack.detail_code } : {}),
    message: `${ack.request_id}: ${ack.message}`,
  };
}

function readMetrics(paths: RunPaths): Record<string, unknown> {
  const file = join(paths.reports, "metrics.json");
  if (!existsSync(file)) return {};
  try {
    const value: unknown = JSON.parse(readFileSync(file, "utf8"));
    return typeof value === "object" && value !== null && !Array.isArray(value) ? { ...value } : {};
  } catch {
    return {};
  }
}

/**
 * Run one skill as a SkillPilot job (seed §1.1): load the contract, locate the design, start a
 * session, restore through restore_wrapper.tcl, source the subskill's scripts, validate the
 * outputs, summarize. Every fact lands in `CWD/.skillpilot/runs/<job_id>/`; a FAIL has its
 * error_type in the manifest, the summary and the timeline alike, and a debug_bundle. The tool's
 * process group is always ended. Tool faults never throw: they are the job's FAIL. Only a skill
 * that cannot be found (SKILL_NOT_FOUND) or an unwritable CWD throws, before a run dir exists.
 *
 * @example
 * const { summary } = await runSkill({ cwd, skill: "summary_health", design: "AAA" });
 * summary.status; // "PASS" | "FAIL"
 */
export async function runSkill(options: RunSkillOptions): Promise<RunSkillResult> {
  const clock = options.clock ?? systemClock;
  const io = options.io ?? defaultProtocolIo;
  const settings = options.settings ?? readConfig(workspacePaths(options.cwd).config).skillpilot;
  const adapter = options.adapter ?? settings.adapter;
  const skillRef = findSkill(options.cwd, options.skill);
  const t0 = performance.now();
  // Stale jobs of this CWD are closed first; one whose session waits is left to `skill resume`.
  // A close that fails (a foreign run dir, a full disk) is no reason to refuse this job.
  await closeStaleJobs({ cwd: options.cwd, clock }).catch(() => []);

  const { jobId, paths } = createRunDir({
    cwd: options.cwd,
    clock,
    random: options.random ?? systemRandom,
  });
  const timeline = createTimeline({ path: paths.timeline, jobId, clock, io });
  const manifest = initialManifest({ options, jobId, paths, adapter, skillRef, clock });
  manifest.runtime.orphan_grace_ms = settings.orphan_grace_ms;
  const job = newJob({
    options,
    jobId,
    paths,
    adapter,
    settings,
    timeline,
    manifest,
    skillDir: skillRef.dir,
  });
  return driveJob(job, t0, async (phase) => {
    timeline.append({
      level: "INFO",
      event: "JOB_START",
      data: { skill: options.skill, design: options.design, adapter },
    });
    await phase("INIT", () => {
      job.record.save();
      return { value: undefined };
    });
    job.contract = await phase("LOAD_CONTRACT", () => loadContract(job));
    const design = await phase("LOCATE_DB", () => locate(job));
    await phase("START_SESSION", () => startSession(job));
    await runAfterSession(job, phase, design, "RESTORE");
  });
}

/** The phases that follow START_SESSION, from `from` on: a fresh job starts at RESTORE. */
async function runAfterSession(
  job: Job,
  phase: Phase,
  design: LocatedDesign,
  from: ResumableState,
): Promise<void> {
  const order = RESUMABLE_STATES.indexOf(from);
  const contract = job.contract as Contract;
  if (order <= 0) await phase("RESTORE", () => restoreDesign(job, design));
  if (order <= 1) await phase("RUN_SCRIPTS", () => runScripts(job, contract));
  await phase("VALIDATE_OUTPUTS", () => validate(job, contract));
}

type Phase = <T>(
  state: JobState,
  run: () => Promise<PhaseResult<T>> | PhaseResult<T>,
) => Promise<T>;

export interface ContinueJobOptions {
  manifest: Manifest;
  /** The live session, attached (`attachToolSession`): the job ends it like its own. */
  session: ToolSession;
  from: ResumableState;
  settings: SkillPilotSettings;
  timings?: Partial<SessionTimings>;
  clock?: Clock;
  io?: ProtocolIo;
  signal?: AbortSignal;
  onProgress?: (message: string) => void;
}

/**
 * Continue a RUNNING job whose runner is gone, on its live session (`skill resume`): the
 * contract read again (it must still be the job's name and version), then the phases from
 * `from` on. A request whose ack is on disk counts; one still in queue/ is waited for until its
 * own deadline; the rest are submitted. Then VALIDATE_OUTPUTS and SUMMARIZE as in `runSkill`.
 */
export async function continueJob(o: ContinueJobOptions): Promise<RunSkillResult> {
  const clock = o.clock ?? systemClock;
  const io = o.io ?? defaultProtocolIo;
  const m = o.manifest;
  const paths = runPathsFor(m.runtime.run_dir);
  // the job's duration counts from its creation, whoever runs it
  const t0 = performance.now() - Math.max(0, clock.now().getTime() - Date.parse(m.created_at));
  const options: RunSkillOptions = {
    cwd: m.runtime.cwd,
    skill: m.skill.subskill_path,
    design: m.design.locator.query,
    clock,
    io,
    ...(o.timings ? { timings: o.timings } : {}),
    ...(o.signal ? { signal: o.signal } : {}),
    ...(o.onProgress ? { onProgress: o.onProgress } : {}),
  };
  // the disk says which requests were made: an entry whose request never reached queue/ goes
  m.requests = (m.requests ?? []).filter(
    (r) =>
      existsSync(join(paths.ack, `${r.request_id}.json`)) || readQueuedRequest(paths, r.request_id),
  );
  const job = newJob({
    options,
    jobId: m.job_id,
    paths,
    adapter: m.runtime.adapter,
    settings: o.settings,
    timeline: createTimeline({ path: paths.timeline, jobId: m.job_id, clock, io }),
    manifest: m,
    skillDir: m.skill.subskill_path,
  });
  job.session = o.session;
  job.resumed = true;
  // requests are numbered in order: the restore is the first, the scripts follow
  job.requestCount = o.from === "RESTORE" ? 0 : 1;
  const design = { enc_path: m.design.enc_path, enc_dat_path: m.design.enc_dat_path };
  return driveJob(job, t0, async (phase) => {
    job.contract = rereadContract(job);
    await runAfterSession(job, phase, design, o.from);
  });
}

/** The contract of a resumed job: still valid, and still the name and version the job started with. */
function rereadContract(job: Job): Contract {
  const c = readContract(job.skillDir);
  const { skill } = job.record.manifest;
  if (!c.ok || c.value.name !== skill.name || c.value.version !== skill.version) {
    throw jobFailed({
      error_type: "CONTRACT_INVALID",
      message: c.ok
        ? `${join(job.skillDir, "contract.yaml")} is now ${c.value.name} ${c.value.version}; the job started with ${skill.name} ${skill.version}`
        : `${join(job.skillDir, "contract.yaml")}: ${c.issues.join("; ")}`,
    });
  }
  return c.value;
}

function newJob(o: {
  options: RunSkillOptions;
  jobId: string;
  paths: RunPaths;
  adapter: AdapterName;
  settings: SkillPilotSettings;
  timeline: Timeline;
  manifest: Manifest;
  skillDir: string;
}): Job {
  const clock = o.options.clock ?? systemClock;
  const io = o.options.io ?? defaultProtocolIo;
  const record = createJobRecord({
    manifest: o.manifest,
    timeline: o.timeline,
    io,
    paths: o.paths,
    clock,
    progress: o.options.onProgress ?? (() => {}),
  });
  return {
    options: o.options,
    jobId: o.jobId,
    paths: o.paths,
    io,
    adapter: o.adapter,
    settings: o.settings,
    timings: timingsFrom(o.settings, o.options.timings),
    clock,
    timeline: o.timeline,
    record,
    audit: createAuditTrail({
      path: auditPath(o.paths),
      append: (e) => o.timeline.append(e),
      // a resumed job: the first runner collected the records of every request it saw answered
      collected: new Set(
        (o.manifest.requests ?? []).filter((r) => r.status).map((r) => r.request_id),
      ),
    }),
    skillDir: o.skillDir,
    session: undefined,
    contract: undefined,
    resumed: false,
    requestCount: 0,
    interruptedBy: undefined,
    checkAbort: () => {},
    findings: [],
    risks: [],
    notes: [],
  };
}

/**
 * Run `body` as the job's phases: interrupts wired to the session, the first failure recorded,
 * the session always stopped, then SUMMARIZE and the terminal event.
 */
async function driveJob(
  job: Job,
  t0: number,
  body: (phase: Phase) => Promise<void>,
): Promise<RunSkillResult> {
  const { options, record } = job;
  const onAbort = () => {
    job.interruptedBy = String(options.signal?.reason ?? "aborted");
    job.session?.interrupt(job.interruptedBy);
  };
  options.signal?.addEventListener("abort", onAbort, { once: true });
  job.checkAbort = () => {
    if (options.signal?.aborted) onAbort();
    if (job.interruptedBy !== undefined) {
      throw jobFailed({
        error_type: "INTERNAL_ERROR",
        detail_code: "INTERRUPTED",
        message: `the job was interrupted (${job.interruptedBy})`,
      });
    }
  };
  /** Enter a state, run it, leave it with what it reports, then stop here if interrupted. */
  const phase: Phase = async (state, run) => {
    record.enter(state);
    const { value, exit } = await run();
    record.leave(exit);
    job.checkAbort();
    return value;
  };

  let failure: JobFailure | undefined;
  try {
    await body(phase);
  } catch (error) {
    // what the failing script did is in the timeline before the failure
    job.audit.collect();
    failure = toFailure(error);
    if (job.interruptedBy !== undefined) {
      if (failure.detail_code !== "INTERRUPTED")
        job.notes.push(`underlying: ${failure.error_type} ${failure.message}`);
      failure = {
        error_type: "INTERNAL_ERROR",
        detail_code: "INTERRUPTED",
        message: `the job was interrupted (${job.interruptedBy})`,
      };
    }
    record.fail(failure);
  } finally {
    options.signal?.removeEventListener("abort", onAbort);
    if (job.session) await job.session.stop();
  }

  return finishJob({
    paths: job.paths,
    jobId: job.jobId,
    manifest: record.manifest,
    failure,
    contract: job.contract,
    contractPath: join(job.skillDir, "contract.yaml"),
    findings: job.findings,
    risks: job.risks,
    notes: job.notes,
    io: job.io,
    clock: job.clock,
    timeline: (e) => job.timeline.append(e),
    t0,
  });
}

/** One job while it runs: its inputs, its record, and what its phases found. */
interface Job {
  options: RunSkillOptions;
  jobId: string;
  paths: RunPaths;
  io: ProtocolIo;
  adapter: AdapterName;
  settings: SkillPilotSettings;
  timings: SessionTimings;
  clock: Clock;
  timeline: Timeline;
  record: JobRecord;
  /** session/audit.jsonl → AUDIT events in the timeline. */
  audit: AuditTrail;
  skillDir: string;
  session: ToolSession | undefined;
  contract: Contract | undefined;
  /** Continued by `skill resume`: requests already on disk are adopted, not submitted again. */
  resumed: boolean;
  /** Requests made so far (submitted, or adopted on a resume): the next one's number is this + 1. */
  requestCount: number;
  interruptedBy: string | undefined;
  /** Throws INTERRUPTED once the job was interrupted (SIGINT/SIGTERM of the runner). */
  checkAbort: () => void;
  findings: string[];
  risks: string[];
  notes: string[];
}

/** What a phase hands back: its value, and the data its STATE_EXIT event carries. */
type PhaseResult<T> = { value: T; exit?: Record<string, unknown> };

/** The manifest as the job starts: RUNNING, with what is known before any phase ran. */
function initialManifest(o: {
  options: RunSkillOptions;
  jobId: string;
  paths: RunPaths;
  adapter: AdapterName;
  skillRef: { name: string; dir: string };
  clock: Clock;
}): Manifest {
  const { design } = o.options;
  return {
    schema_version: SCHEMA_VERSION,
    job_id: o.jobId,
    created_at: o.clock.now().toISOString(),
    status: "RUNNING",
    runtime: {
      cwd: o.options.cwd,
      run_dir: o.paths.runDir,
      adapter: o.adapter,
      user: safeUser(),
      host: hostname(),
      pid: process.pid,
      env_summary: { node: process.version, platform: process.platform },
    },
    design: {
      enc_path: "",
      enc_dat_path: "",
      locator: {
        mode: design.includes("/") || design.endsWith(".enc") ? "explicit_path" : "cwd_scan",
        query: design,
      },
    },
    skill: { name: o.skillRef.name, version: "unknown", subskill_path: o.skillRef.dir },
    requests: [],
    artifacts: {
      timeline: "job_timeline.jsonl",
      summary_json: "summary.json",
      summary_md: "summary.md",
      reports_dir: "reports",
      session_dir: "session",
      scripts_dir: "scripts",
    },
    versions: { runtime: TIMEWARP_VERSION, schema: SCHEMA_VERSION, node: process.version },
  };
}

function loadContract(job: Job): PhaseResult<Contract> {
  const { record, skillDir } = job;
  // the text and the files, before any session starts or any design is restored
  const c = checkContract(skillDir);
  if (!c.ok) {
    throw jobFailed({
      error_type: "CONTRACT_INVALID",
      message: `${join(skillDir, "contract.yaml")}: ${c.issues.join("; ")}`,
    });
  }
  const { contract } = c.value;
  record.manifest.skill = {
    name: contract.name,
    version: contract.version,
    subskill_path: skillDir,
  };
  if (record.manifest.versions) record.manifest.versions.subskill = contract.version;
  record.save();
  stageScripts(job, c.value);
  return { value: contract, exit: { name: contract.name, version: contract.version } };
}

/**
 * Copy every checked entry into scripts/ now, from the very file that was checked (its
 * descriptor, same device and inode): what runs later is this copy, whatever happens to the
 * subskill meanwhile.
 */
function stageScripts(job: Job, checked: CheckedContract): void {
  for (const s of checked.scripts) {
    const bytes = readCheckedEntry(checked, s);
    if (!bytes.ok) {
      throw jobFailed({
        error_type: "CONTRACT_INVALID",
        detail_code: "ENTRY_CHANGED",
        message: `${join(job.skillDir, "contract.yaml")}: ${bytes.issues.join("; ")}`,
      });
    }
    writeFileAtomic(join(job.paths.scripts, s.file), bytes.value, { durable: false });
    job.record.act("stage_script", {
      name: s.name,
      entry: s.entry,
      real_entry: relative(checked.realDir, s.realPath),
      script: `scripts/${s.file}`,
      bytes: bytes.value.length,
      ...(s.timeout_s !== undefined ? { timeout_s: s.timeout_s } : {}),
    });
  }
}

type LocatedDesign = NonNullable<ReturnType<typeof locateDesign>["selected"]>;

function locate(job: Job): PhaseResult<LocatedDesign> {
  const { record, options } = job;
  const located = locateDesign({
    cwd: options.cwd,
    query: options.design,
    ...(options.select !== undefined ? { select: options.select } : {}),
  });
  record.act("locate_db", {
    query: options.design,
    mode: located.record.mode,
    candidates: located.record.candidates?.length ?? 0,
    ...(located.record.selection_reason
      ? { selection_reason: located.record.selection_reason }
      : {}),
  });
  record.manifest.design.locator = located.record;
  if (located.selected) {
    record.manifest.design.enc_path = located.selected.enc_path;
    record.manifest.design.enc_dat_path = located.selected.enc_dat_path;
  }
  record.save();
  if (located.failure || !located.selected) {
    throw jobFailed(
      located.failure ?? { error_type: "LOCATOR_FAIL", message: "no design selected" },
    );
  }
  return { value: located.selected, exit: { enc_path: located.selected.enc_path } };
}

async function startSession(job: Job): Promise<PhaseResult<ToolSession>> {
  const { record, options } = job;
  record.act("start_session", {
    adapter: job.adapter,
    orphan_grace_ms: job.settings.orphan_grace_ms,
  });
  // the tool reads who its runner is from here: a later `skill resume` rewrites it
  writeRunnerFile(job.paths, job.io, {
    clock: job.clock,
    orphanGraceMs: job.settings.orphan_grace_ms,
  });
  const session = await startToolSession({
    runDir: job.paths.runDir,
    jobId: job.jobId,
    adapter: job.adapter,
    settings: job.settings,
    timings: job.timings,
    clock: job.clock,
    io: job.io,
    ...(options.env ? { env: options.env } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
    heartbeatMode: job.settings.heartbeat_mode,
    ...schedulerOptions(job),
  });
  // Known to the job before anything else can fail: whatever happens next, it is stopped.
  job.session = session;
  record.manifest.runtime.session = {
    pgid: session.pgid,
    command: session.command,
    tool_pid: session.ready.pid,
  };
  if (record.manifest.versions)
    record.manifest.versions.tool = `tcl ${session.ready.tcl_version}${session.ready.stubbed ? " (innovus stub)" : ""}`;
  record.save();
  return { value: session, exit: { pgid: session.pgid, tool_pid: session.ready.pid } };
}

const RESTORE_WRAPPER = "scripts/restore_wrapper.tcl";

/** The id the job's next request gets: `<job_id>_<NNNN>_<name>`, numbered in order. */
function nextRequestId(job: Job, name: string): string {
  const n = job.requestCount + 1;
  return `${job.jobId}_${String(n).padStart(4, "0")}_${name}`;
}

/** `--adapter slurm`: the plan (settings, then the run's overrides) and where its facts go. */
function schedulerOptions(job: Job) {
  if (job.adapter !== "slurm") return {};
  const base = job.settings.slurm;
  const over = job.options.slurm ?? {};
  const settings = {
    ...base,
    partition: over.partition ?? base.partition,
    time: over.time ?? base.time,
    args: [...base.args, ...(over.args ?? [])],
  };
  return {
    scheduler: planSlurm({
      settings,
      jobId: job.jobId,
      queueWaitTimeoutMs: job.timings.queueWaitTimeoutMs ?? job.settings.queue_wait_timeout_ms,
    }),
    onSchedulerEvent: (event: SchedulerEventName, facts: SchedulerFacts) =>
      recordScheduler(job, event, facts),
  };
}

/** Scheduler facts into the manifest and the timeline; diagnostics, so a failed write never fails the job. */
function recordScheduler(job: Job, event: SchedulerEventName, facts: SchedulerFacts): void {
  job.record.manifest.runtime.scheduler = facts;
  // a queue wait can take hours: the user sees where the job is, not only "start session…"
  const where = [facts.state?.toLowerCase() ?? "submitted", facts.reason && `(${facts.reason})`];
  job.options.onProgress?.(
    `Slurm job ${facts.job_id ?? facts.job_name}: ${where.filter(Boolean).join(" ")}${facts.node_list ? ` on ${facts.node_list}` : ""}…`,
  );
  try {
    job.timeline.append({
      level: event === "SCHEDULER_END" && facts.ending ? "WARN" : "INFO",
      event,
      data: { ...facts },
    });
    job.record.save();
  } catch {
    // the terminal writes record the end anyway
  }
}

/** Send one script as the job's next request, recording it in the manifest and the timeline. */
async function submit(job: Job, name: string, script: string, timeoutMs?: number): Promise<Ack> {
  const { record } = job;
  const manifest = record.manifest;
  const requestId = nextRequestId(job, name);
  job.requestCount++;
  manifest.requests?.push({ request_id: requestId, script });
  record.act("submit_request", {
    request_id: requestId,
    script,
    ...(timeoutMs !== undefined ? { timeout_ms: timeoutMs } : {}),
  });
  if (!job.session) throw jobFailed({ error_type: "INTERNAL_ERROR", message: "no session" });
  const policy = requestPolicyFor({
    contractPolicy: job.contract?.policy,
    encPath: manifest.design.enc_path,
    isRestore: script === RESTORE_WRAPPER,
  });
  const ack = await job.session.request({
    requestId,
    script,
    ...(timeoutMs !== undefined ? { timeoutMs } : {}),
    ...(policy ? { policy } : {}),
  });
  job.audit.collect();
  recordAck(job, ack);
  return ack;
}

function recordAck(job: Job, ack: Ack, extra: Record<string, unknown> = {}): void {
  job.record.act("receive_ack", {
    request_id: ack.request_id,
    status: ack.status,
    error_type: ack.error_type,
    ...(ack.detail_code ? { detail_code: ack.detail_code } : {}),
    by: ack.by ?? "queue_processor",
    ...extra,
  });
  const entry = job.record.manifest.requests?.find((r) => r.request_id === ack.request_id);
  if (entry) {
    entry.status = ack.status;
    entry.error_type = ack.error_type;
  }
}

/**
 * On a resumed job, the job's next request as the first runner left it: its ack when on disk;
 * when it is still in queue/ (waiting or claimed), its ack awaited until the request's own
 * deadline. Undefined when the request was never made (submit it then).
 */
async function adopt(job: Job, name: string): Promise<Ack | undefined> {
  if (!job.resumed) return undefined;
  const requestId = nextRequestId(job, name);
  const onDisk = readAck(join(job.paths.ack, `${requestId}.json`));
  const request = readQueuedRequest(job.paths, requestId);
  if (!onDisk && !request) return undefined;
  const script = request?.script ?? onDisk?.script ?? "";
  job.requestCount++;
  const { manifest } = job.record;
  if (!manifest.requests?.some((r) => r.request_id === requestId))
    manifest.requests?.push({ request_id: requestId, script });
  if (onDisk) {
    // recorded already when the first runner saw it; else recorded now
    const known = manifest.requests?.find((r) => r.request_id === requestId);
    if (known?.status !== onDisk.status) recordAck(job, onDisk, { adopted: "acked" });
    return onDisk;
  }
  if (!job.session || !request)
    throw jobFailed({ error_type: "INTERNAL_ERROR", message: "no session" });
  const timeoutMs =
    request.timeout_s !== undefined ? request.timeout_s * 1000 : job.timings.requestTimeoutMs;
  const deadline = Date.parse(request.created_at) + timeoutMs;
  const remainingMs = Math.max(1, Math.round(deadline - job.clock.now().getTime()));
  job.record.act("await_request", { request_id: requestId, script, remaining_ms: remainingMs });
  job.record.save();
  const ack = await job.session.request({
    requestId,
    script: request.script,
    timeoutMs: remainingMs,
    adopt: true,
  });
  job.audit.collect();
  recordAck(job, ack, { adopted: "in_flight" });
  return ack;
}

async function restoreDesign(job: Job, design: LocatedDesign): Promise<PhaseResult<undefined>> {
  const { record, paths } = job;
  const rel = (p: string) => relative(paths.runDir, p) || ".";
  const wrapper = join(paths.scripts, "restore_wrapper.tcl");
  const ack = (await adopt(job, "restore")) ?? (await submitRestore(job, design, wrapper));
  record.manifest.design.restore = {
    wrapper: rel(wrapper),
    request_id: ack.request_id,
    ack: `ack/${ack.request_id}.json`,
    status: ack.status,
  };
  record.save();
  if (ack.status !== "PASS") throw jobFailed(ackFailure(ack));
  return {
    value: undefined,
    exit: { request_id: ack.request_id, ack: `ack/${ack.request_id}.json` },
  };
}

async function submitRestore(job: Job, design: LocatedDesign, wrapper: string): Promise<Ack> {
  const rel = (p: string) => relative(job.paths.runDir, p) || ".";
  // seed §6.2: the only place an outside file is sourced, after a cd into its directory
  job.io.writeFile(
    wrapper,
    [
      "# SkillPilot restore wrapper (seed §6.2): the one script allowed to source the design's .enc.",
      `set enc_path ${tclQuote(design.enc_path)}`,
      "cd [file dirname $enc_path]",
      "source $enc_path",
      "",
    ].join("\n"),
  );
  // §6.2: the restore exception is audited — the outside file, its wrapper and the request
  job.record.act("restore_design", {
    enc_path: design.enc_path,
    enc_dat_path: design.enc_dat_path,
    wrapper: rel(wrapper),
  });
  return submit(job, "restore", "scripts/restore_wrapper.tcl");
}

async function runScripts(job: Job, contract: Contract): Promise<PhaseResult<undefined>> {
  for (const s of contract.scripts) {
    // a resumed job: a script the first runner submitted already is not sent again
    const adopted = await adopt(job, s.name);
    if (adopted && adopted.status !== "PASS") throw jobFailed(ackFailure(adopted));
    if (adopted) continue;
    // staged at LOAD_CONTRACT; a script's own timeout_s replaces request_timeout_ms
    const script = `scripts/${scriptFileName(contract.name, s.name)}`;
    const timeoutMs = s.timeout_s !== undefined ? Math.round(s.timeout_s * 1000) : undefined;
    const ack = await submit(job, s.name, script, timeoutMs);
    job.record.save();
    if (ack.status !== "PASS") {
      const failure = ackFailure(ack);
      if (ack.error_type === "QUEUE_TIMEOUT" && s.timeout_s !== undefined)
        failure.message += ` (script ${s.name}: the contract's timeout_s is ${s.timeout_s} s)`;
      throw jobFailed(failure);
    }
    job.checkAbort();
  }
  return { value: undefined };
}

function validate(job: Job, contract: Contract): PhaseResult<undefined> {
  const validation = validateOutputs(job.paths.runDir, contract);
  job.record.act("validate_outputs", {
    ok: validation.ok,
    missing: validation.missing,
    empty: validation.empty,
  });
  for (const check of validation.checks) {
    if (check.matched.length > 0 && check.empty.length === 0) {
      job.findings.push(`${check.path}: ${check.matched.join(", ")}`);
    }
  }
  if (validation.failure) {
    job.notes.push(
      `missing: ${validation.missing.join(", ") || "none"}`,
      `empty: ${validation.empty.join(", ") || "none"}`,
    );
    throw jobFailed(validation.failure);
  }
  return { value: undefined, exit: { checks: validation.checks.length } };
}

function safeUser(): string | undefined {
  try {
    return userInfo().username;
  } catch {
    return undefined;
  }
}

/** SUMMARIZE and the terminal event: summary.json/md, DONE/FAIL, the final manifest, the debug bundle. */
function finishJob(o: {
  paths: RunPaths;
  jobId: string;
  manifest: Manifest;
  failure: JobFailure | undefined;
  contract: Contract | undefined;
  contractPath: string;
  findings: string[];
  risks: string[];
  notes: string[];
  io: ProtocolIo;
  clock: Clock;
  timeline: (e: Parameters<ReturnType<typeof createTimeline>["append"]>[0]) => void;
  t0: number;
}): RunSkillResult {
  const { paths, manifest, io } = o;
  let failure = o.failure;
  const buildSummary = (): Summary => ({
    schema_version: SCHEMA_VERSION,
    job_id: o.jobId,
    status: failure ? "FAIL" : "PASS",
    error_type: failure ? failure.error_type : "OK",
    ...(failure?.detail_code ? { detail_code: failure.detail_code } : {}),
    ...(failure ? { message: failure.message } : {}),
    design: { enc_path: manifest.design.enc_path, enc_dat_path: manifest.design.enc_dat_path },
    skill: { name: manifest.skill.name, version: manifest.skill.version },
    metrics: failure ? {} : readMetrics(paths),
    findings: failure ? o.findings.map((f) => `present: ${f}`) : o.findings,
    risks: failure ? [failure.message, ...o.risks] : o.risks,
    evidence: {
      run_dir: paths.runDir,
      summary_md: paths.summaryMd,
      reports_dir: paths.reports,
      ...(failure ? { debug_bundle_dir: paths.debugBundle } : {}),
    },
    duration_ms: Math.round(performance.now() - o.t0),
  });
  let summary = buildSummary();
  try {
    o.timeline({ level: "INFO", event: "STATE_ENTER", state: "SUMMARIZE" });
    o.timeline({
      level: "INFO",
      event: "ACTION",
      state: "SUMMARIZE",
      data: { action: "summarize" },
    });
    io.writeFile(paths.summaryJson, `${JSON.stringify(summary, null, 2)}\n`);
    io.writeFile(paths.summaryMd, formatSummaryMarkdown(summary));
    o.timeline({ level: "INFO", event: "STATE_EXIT", state: "SUMMARIZE" });
  } catch (error) {
    // a summary that cannot be written is itself the failure (e.g. ENOSPC), unless one came first
    if (!failure) failure = toFailure(error);
    summary = buildSummary();
    try {
      io.writeFile(paths.summaryJson, `${JSON.stringify(summary, null, 2)}\n`);
      io.writeFile(paths.summaryMd, formatSummaryMarkdown(summary));
    } catch {
      // the manifest below still records the end
    }
  }
  manifest.status = failure ? "FAIL" : "PASS";
  manifest.error_type = failure ? failure.error_type : "OK";
  if (failure?.detail_code) manifest.detail_code = failure.detail_code;
  if (failure) manifest.message = failure.message;
  manifest.finished_at = o.clock.now().toISOString();
  if (failure && manifest.artifacts) manifest.artifacts.debug_bundle_dir = "debug_bundle";
  const terminal = () =>
    failure
      ? o.timeline({
          level: "ERROR",
          event: "FAIL",
          message: failure.message,
          data: {
            error_type: failure.error_type,
            ...(failure.detail_code ? { detail_code: failure.detail_code } : {}),
          },
        })
      : o.timeline({ level: "INFO", event: "DONE", data: { error_type: "OK" } });
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      terminal();
      break;
    } catch {
      // one retry: an injected or transient ENOSPC
    }
  }
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      manifest.updated_at = manifest.finished_at;
      io.writeFile(paths.manifest, `${JSON.stringify(manifest, null, 2)}\n`);
      break;
    } catch {
      // retried once; a stale RUNNING manifest is closed later by closeStaleJobs
    }
  }
  if (failure) {
    try {
      writeDebugBundle({
        paths,
        jobId: o.jobId,
        failure,
        ...(o.contract || existsSync(o.contractPath) ? { contractPath: o.contractPath } : {}),
        contractHints: o.contract?.debug_hints ?? [],
        notes: o.notes,
        io,
      });
    } catch {
      // best effort: the manifest and summary already say FAIL
    }
  }
  return { summary, manifest, runDir: paths.runDir };
}
