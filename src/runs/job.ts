import { copyFileSync, existsSync, readFileSync } from "node:fs";
import { hostname, userInfo } from "node:os";
import { join, relative } from "node:path";
import type { Clock, Config, Random } from "../core/index.ts";
import {
  isTimewarpError,
  readConfig,
  systemClock,
  systemRandom,
  workspacePaths,
} from "../core/index.ts";
import { type Contract, readContract } from "./contract.ts";
import { writeDebugBundle } from "./debug-bundle.ts";
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
import {
  createRunDir,
  createTimeline,
  defaultProtocolIo,
  type ProtocolIo,
  type RunPaths,
} from "./run-dir.ts";
import { type SessionTimings, startToolSession, type ToolSession } from "./session.ts";
import { findSkill } from "./skills.ts";
import { formatSummaryMarkdown } from "./summary.ts";
import { type JobFailure, JobFailureError } from "./taxonomy.ts";
import { validateOutputs } from "./validate-outputs.ts";

export const RUNTIME_VERSION = "0.1.0";

export type SkillPilotSettings = Config["skillpilot"];

export interface RunSkillOptions {
  /** The user's working directory: the design is looked up here and `.skillpilot/runs/` lives here. */
  cwd: string;
  /** A subskill name (looked up in subskills/, .skillpilot/subskills/, the package examples) or a folder path. */
  skill: string;
  /** `AAA` (scan CWD) or an explicit `./AAA.enc`. */
  design: string;
  adapter?: AdapterName;
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
    heartbeatStaleMs: settings.heartbeat_stale_ms,
    requestTimeoutMs: settings.request_timeout_ms,
    pollMs: settings.poll_ms,
    heartbeatIntervalMs: settings.heartbeat_interval_ms,
    ackPollMs: 50,
    watchAcks: true,
    ...overrides,
  };
}

function toFailure(error: unknown): JobFailure {
  if (error instanceof JobFailureError) return error.failure;
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
  const random = options.random ?? systemRandom;
  const io = options.io ?? defaultProtocolIo;
  const settings = options.settings ?? readConfig(workspacePaths(options.cwd).config).skillpilot;
  const adapter = options.adapter ?? settings.adapter;
  const timings = timingsFrom(settings, options.timings);
  const progress = options.onProgress ?? (() => {});
  const skillRef = findSkill(options.cwd, options.skill);
  const t0 = performance.now();

  const { jobId, paths } = createRunDir({ cwd: options.cwd, clock, random });
  const timeline = createTimeline({ path: paths.timeline, jobId, clock, io });
  const rel = (p: string) => relative(paths.runDir, p) || ".";
  const manifest: Manifest = {
    schema_version: SCHEMA_VERSION,
    job_id: jobId,
    created_at: clock.now().toISOString(),
    status: "RUNNING",
    runtime: {
      cwd: options.cwd,
      run_dir: paths.runDir,
      adapter,
      user: safeUser(),
      host: hostname(),
      pid: process.pid,
      env_summary: { node: process.version, platform: process.platform },
    },
    design: {
      enc_path: "",
      enc_dat_path: "",
      locator: {
        mode:
          options.design.includes("/") || options.design.endsWith(".enc")
            ? "explicit_path"
            : "cwd_scan",
        query: options.design,
      },
    },
    skill: { name: skillRef.name, version: "unknown", subskill_path: skillRef.dir },
    requests: [],
    artifacts: {
      timeline: "job_timeline.jsonl",
      summary_json: "summary.json",
      summary_md: "summary.md",
      reports_dir: "reports",
      session_dir: "session",
      scripts_dir: "scripts",
    },
    versions: { runtime: RUNTIME_VERSION, schema: SCHEMA_VERSION, node: process.version },
  };
  const writeManifest = () => {
    manifest.updated_at = clock.now().toISOString();
    io.writeFile(paths.manifest, `${JSON.stringify(manifest, null, 2)}\n`);
  };

  let state: JobState | undefined;
  const enter = (s: JobState, message?: string) => {
    state = s;
    progress(`${s.toLowerCase().replaceAll("_", " ")}…`);
    timeline.append({
      level: "INFO",
      event: "STATE_ENTER",
      state: s,
      ...(message ? { message } : {}),
    });
  };
  const leave = (data?: Record<string, unknown>) => {
    if (state)
      timeline.append({ level: "INFO", event: "STATE_EXIT", state, ...(data ? { data } : {}) });
    state = undefined;
  };
  const act = (action: string, data?: Record<string, unknown>) =>
    timeline.append({
      level: "INFO",
      event: "ACTION",
      ...(state ? { state } : {}),
      data: { action, ...data },
    });

  let session: ToolSession | undefined;
  let contract: Contract | undefined;
  let failure: JobFailure | undefined;
  let interruptedBy: string | undefined;
  const findings: string[] = [];
  const risks: string[] = [];
  const notes: string[] = [];
  const onAbort = () => {
    interruptedBy = String(options.signal?.reason ?? "aborted");
    session?.interrupt(interruptedBy);
  };
  options.signal?.addEventListener("abort", onAbort, { once: true });
  const checkAbort = () => {
    if (options.signal?.aborted) onAbort();
    if (interruptedBy !== undefined) {
      throw new JobFailureError({
        error_type: "INTERNAL_ERROR",
        detail_code: "INTERRUPTED",
        message: `the job was interrupted (${interruptedBy})`,
      });
    }
  };

  let seq = 0;
  const submit = async (name: string, script: string): Promise<Ack> => {
    seq += 1;
    const requestId = `${jobId}_${String(seq).padStart(4, "0")}_${name}`;
    manifest.requests?.push({ request_id: requestId, script });
    act("submit_request", { request_id: requestId, script });
    if (!session)
      throw new JobFailureError({ error_type: "INTERNAL_ERROR", message: "no session" });
    const ack = await session.request({ requestId, script });
    act("receive_ack", {
      request_id: requestId,
      status: ack.status,
      error_type: ack.error_type,
      ...(ack.detail_code ? { detail_code: ack.detail_code } : {}),
      by: ack.by ?? "queue_processor",
    });
    const entry = manifest.requests?.find((r) => r.request_id === requestId);
    if (entry) {
      entry.status = ack.status;
      entry.error_type = ack.error_type;
    }
    return ack;
  };

  try {
    timeline.append({
      level: "INFO",
      event: "JOB_START",
      data: { skill: options.skill, design: options.design, adapter },
    });
    enter("INIT");
    writeManifest();
    leave();
    checkAbort();

    enter("LOAD_CONTRACT");
    const c = readContract(skillRef.dir);
    if (!c.ok) {
      throw new JobFailureError({
        error_type: "CONTRACT_INVALID",
        message: `${join(skillRef.dir, "contract.yaml")}: ${c.issues.join("; ")}`,
      });
    }
    contract = c.value;
    manifest.skill = {
      name: contract.name,
      version: contract.version,
      subskill_path: skillRef.dir,
    };
    if (manifest.versions) manifest.versions.subskill = contract.version;
    writeManifest();
    leave({ name: contract.name, version: contract.version });
    checkAbort();

    enter("LOCATE_DB");
    const located = locateDesign({
      cwd: options.cwd,
      query: options.design,
      ...(options.select !== undefined ? { select: options.select } : {}),
    });
    act("locate_db", {
      query: options.design,
      mode: located.record.mode,
      candidates: located.record.candidates?.length ?? 0,
      ...(located.record.selection_reason
        ? { selection_reason: located.record.selection_reason }
        : {}),
    });
    manifest.design.locator = located.record;
    if (located.selected) {
      manifest.design.enc_path = located.selected.enc_path;
      manifest.design.enc_dat_path = located.selected.enc_dat_path;
    }
    writeManifest();
    if (located.failure || !located.selected) {
      throw new JobFailureError(
        located.failure ?? { error_type: "LOCATOR_FAIL", message: "no design selected" },
      );
    }
    leave({ enc_path: located.selected.enc_path });
    checkAbort();

    enter("START_SESSION");
    act("start_session", { adapter });
    session = await startToolSession({
      runDir: paths.runDir,
      jobId,
      adapter,
      settings,
      timings,
      clock,
      io,
      ...(options.env ? { env: options.env } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
    });
    manifest.runtime.session = {
      pgid: session.pgid,
      command: session.command,
      tool_pid: session.ready.pid,
    };
    if (manifest.versions)
      manifest.versions.tool = `tcl ${session.ready.tcl_version}${session.ready.stubbed ? " (innovus stub)" : ""}`;
    writeManifest();
    leave({ pgid: session.pgid, tool_pid: session.ready.pid });
    checkAbort();

    enter("RESTORE");
    const wrapper = join(paths.scripts, "restore_wrapper.tcl");
    // seed §6.2: the only place an outside file is sourced, after a cd into its directory
    io.writeFile(
      wrapper,
      [
        "# SkillPilot restore wrapper (seed §6.2): the one script allowed to source the design's .enc.",
        `set enc_path ${tclQuote(located.selected.enc_path)}`,
        "cd [file dirname $enc_path]",
        "source $enc_path",
        "",
      ].join("\n"),
    );
    // §6.2: the restore exception is audited — the outside file, its wrapper and the request
    act("restore_design", {
      enc_path: located.selected.enc_path,
      enc_dat_path: located.selected.enc_dat_path,
      wrapper: rel(wrapper),
    });
    const restoreAck = await submit("restore", "scripts/restore_wrapper.tcl");
    manifest.design.restore = {
      wrapper: rel(wrapper),
      request_id: restoreAck.request_id,
      ack: `ack/${restoreAck.request_id}.json`,
      status: restoreAck.status,
    };
    writeManifest();
    if (restoreAck.status !== "PASS") throw new JobFailureError(ackFailure(restoreAck));
    leave({ request_id: restoreAck.request_id, ack: `ack/${restoreAck.request_id}.json` });
    checkAbort();

    enter("RUN_SCRIPTS");
    for (const s of contract.scripts) {
      const target = join(paths.scripts, `${contract.name}__${s.name}.tcl`);
      copyFileSync(join(skillRef.dir, s.entry), target);
      const ack = await submit(s.name, `scripts/${contract.name}__${s.name}.tcl`);
      writeManifest();
      if (ack.status !== "PASS") throw new JobFailureError(ackFailure(ack));
      checkAbort();
    }
    leave();

    enter("VALIDATE_OUTPUTS");
    const validation = validateOutputs(paths.runDir, contract);
    act("validate_outputs", {
      ok: validation.ok,
      missing: validation.missing,
      empty: validation.empty,
    });
    for (const check of validation.checks) {
      if (check.matched.length > 0 && check.empty.length === 0) {
        findings.push(`${check.path}: ${check.matched.join(", ")}`);
      }
    }
    if (validation.failure) {
      notes.push(
        `missing: ${validation.missing.join(", ") || "none"}`,
        `empty: ${validation.empty.join(", ") || "none"}`,
      );
      throw new JobFailureError(validation.failure);
    }
    leave({ checks: validation.checks.length });
  } catch (error) {
    failure = toFailure(error);
    if (interruptedBy !== undefined) {
      if (failure.detail_code !== "INTERRUPTED")
        notes.push(`underlying: ${failure.error_type} ${failure.message}`);
      failure = {
        error_type: "INTERNAL_ERROR",
        detail_code: "INTERRUPTED",
        message: `the job was interrupted (${interruptedBy})`,
      };
    }
    try {
      timeline.append({
        level: "ERROR",
        event: "ERROR",
        ...(state ? { state } : {}),
        message: failure.message,
        data: {
          error_type: failure.error_type,
          ...(failure.detail_code ? { detail_code: failure.detail_code } : {}),
        },
      });
      if (state) leave({ error_type: failure.error_type });
    } catch {
      // the disk may be full; the terminal writes below try again
    }
  } finally {
    options.signal?.removeEventListener("abort", onAbort);
    if (session) await session.stop();
  }

  return finishJob({
    paths,
    jobId,
    manifest,
    failure,
    contract,
    contractPath: join(skillRef.dir, "contract.yaml"),
    findings,
    risks,
    notes,
    io,
    clock,
    timeline: (e) => timeline.append(e),
    t0,
  });
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
