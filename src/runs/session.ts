import { type ChildProcess, spawn } from "node:child_process";
import { closeSync, existsSync, openSync, readFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import type { Clock } from "../core/index.ts";
import { ErrorCode, isProcessAlive, TimewarpError } from "../core/index.ts";
import { beatSurvivesBusyLoop, heartbeatThresholdMs, watchHeartbeat } from "./heartbeat.ts";
import { formatBootScript, type LaunchSettings, planLaunch } from "./launch.ts";
import { tclDir } from "./package-paths.ts";
import { endProcessGroup, processGroupAlive } from "./process-group.ts";
import {
  type Ack,
  type AdapterName,
  type HeartbeatMode,
  type Ready,
  ReadySchema,
  type RequestPolicy,
} from "./protocol.ts";
import {
  ackWaker,
  publishSupervisorAck,
  readAck,
  type SupervisorFailure,
  submitRequest,
  sweepTempFiles,
} from "./request-files.ts";
import { type ProtocolIo, type RunPaths, runPathsFor } from "./run-dir.ts";
import { type FsProbeOps, probeRunDir } from "./run-dir-probe.ts";
import type { SchedulerEventName, SchedulerFacts, SchedulerPlan } from "./scheduler.ts";
import { createSchedulerWatch, type SchedulerWatch } from "./scheduler-watch.ts";
import { classifySession, jobFailed } from "./taxonomy.ts";

/** Timing knobs of a session; tests use small ones. */
export interface SessionTimings {
  readyTimeoutMs: number;
  heartbeatStaleMs: number;
  requestTimeoutMs: number;
  /** The Tcl side's idle poll of queue/. */
  pollMs: number;
  /** The Tcl side's heartbeat period. */
  heartbeatIntervalMs: number;
  /** The runner's fallback poll of ack/ (fs.watch wakes it sooner). */
  ackPollMs: number;
  /** Use fs.watch on ack/ (default true); false measures plain polling. */
  watchAcks: boolean;
  /** Through a scheduler: how long the job may stay pending (QUEUE_WAIT_TIMEOUT). */
  queueWaitTimeoutMs?: number;
}

export interface StartSessionOptions {
  runDir: string;
  jobId: string;
  adapter: AdapterName;
  settings: LaunchSettings;
  timings: SessionTimings;
  clock: Clock;
  io: ProtocolIo;
  /** Extra environment for the tool (tests put a fake `innovus` on PATH this way). */
  env?: NodeJS.ProcessEnv;
  /** Stop waiting for ready.json (a farm queue can take minutes) when the job is interrupted. */
  signal?: AbortSignal;
  /** Who beats (setting `heartbeat_mode`); default auto: a Tcl thread, else the sidecar, else the loop. */
  heartbeatMode?: "auto" | HeartbeatMode;
  /** Run the tool as a scheduler job (`--adapter slurm`): its facts go to `onSchedulerEvent`. */
  scheduler?: SchedulerPlan;
  onSchedulerEvent?: (event: SchedulerEventName, facts: SchedulerFacts) => void;
  /** The run directory's file-system probe (tests make it fail). */
  fsProbe?: FsProbeOps;
}

/** One request to run: a script under scripts/. */
export interface RequestOptions {
  requestId: string;
  script: string;
  timeoutMs?: number;
  /** What the queue processor refuses while the script runs (the contract's `policy`). */
  policy?: RequestPolicy;
  /** The request is in queue/ already (a resumed job): wait for its ack, submit nothing. */
  adopt?: boolean;
}

/**
 * A live tool session behind the file protocol. `request` never throws for tool faults: a crash,
 * a timeout or a lost heartbeat comes back as a FAIL ack that the supervisor published itself
 * (by the same hard-link rule, so each request still has exactly one ack).
 */
export interface ToolSession {
  readonly adapter: AdapterName;
  readonly command: string[];
  readonly pgid: number;
  readonly ready: Ready;
  request(options: RequestOptions): Promise<Ack>;
  /**
   * Between requests: INNOVUS_CRASH when the tool is gone, HEARTBEAT_LOST when the counter has
   * not moved for the threshold; undefined when healthy. (During a request `request` watches.)
   */
  checkHealth(): "HEARTBEAT_LOST" | "INNOVUS_CRASH" | undefined;
  /** Whether the tool (or its launcher) is still running. */
  alive(): boolean;
  /** End the session's whole process group (TERM, then KILL) and wait until it is gone. */
  stop(): Promise<void>;
  /** Interrupt (SIGINT/SIGTERM of the runner): an in-flight request ends FAIL INTERNAL_ERROR/INTERRUPTED. */
  interrupt(reason: string): void;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** session/ready.json when present and valid (it is written atomically, so a bad one is foreign). */
export function readReady(path: string): Ready | undefined {
  try {
    return ReadySchema.parse(JSON.parse(readFileSync(path, "utf8")));
  } catch {
    return undefined;
  }
}

function tail(path: string, bytes = 2000): string {
  try {
    return readFileSync(path, "utf8").slice(-bytes);
  } catch {
    return "";
  }
}

/** supervisor.log is diagnostics: a failed append (disk full, run dir removed) never fails the job. */
type Log = (message: string) => void;

function supervisorLog(paths: RunPaths, io: ProtocolIo, clock: Clock): Log {
  return (message) => {
    try {
      io.appendLine(paths.supervisorLog, `${clock.now().toISOString()} ${message}`);
    } catch {
      // nothing better to do with it
    }
  };
}

/** The tool's process as the runner sees it: its group, and how (or whether) it ended. */
interface LaunchedTool {
  /** Undefined for a session attached by `skill resume`: another runner started it. */
  child: ChildProcess | undefined;
  command: string[];
  pgid: number | undefined;
  exit: () => { code: number | null; signal: string | null } | undefined;
  spawnError: () => Error | undefined;
  /** The scheduler job the launcher submitted, when the session runs through one. */
  scheduler: SchedulerWatch | undefined;
}

/**
 * Write the boot script and start the tool in its own process group (detached, so the tool and
 * anything it starts are ended together), its output appended to session/tool.*.log.
 */
function launchTool(options: StartSessionOptions, paths: RunPaths, log: Log): LaunchedTool {
  const { timings } = options;
  options.io.writeFile(
    paths.boot,
    formatBootScript({
      runDir: options.runDir,
      processorPath: join(tclDir(), "queue_processor.tcl"),
      stubPath: join(tclDir(), "innovus_stub.tcl"),
      pollMs: timings.pollMs,
      heartbeatMs: timings.heartbeatIntervalMs,
      runnerPid: process.pid,
      runnerHost: hostname(),
      heartbeatMode: options.heartbeatMode ?? "auto",
    }),
  );
  const plan = options.scheduler;
  const toolCommand = planLaunch({
    adapter: plan ? plan.tool : options.adapter,
    settings: options.settings,
    bootPath: paths.boot,
  });
  const command = plan ? plan.preset.wrap(toolCommand, plan.request) : toolCommand;
  const env = { ...process.env, ...options.env, SKILLPILOT_RUN_DIR: options.runDir };
  const outFd = openSync(paths.toolStdout, "a");
  const errFd = openSync(paths.toolStderr, "a");
  let child: ChildProcess;
  let exit: { code: number | null; signal: string | null } | undefined;
  let spawnError: Error | undefined;
  try {
    child = spawn(command[0] ?? "", command.slice(1), {
      cwd: paths.session,
      detached: true,
      // stdin stays open: interactive launchers (dsub -I, bsub -Is) end on EOF
      stdio: ["pipe", outFd, errFd],
      env,
    });
  } finally {
    closeSync(outFd);
    closeSync(errFd);
  }
  child.on("error", (error) => {
    spawnError = error;
  });
  child.on("exit", (code, signal) => {
    exit = { code, signal };
    log(`tool exited (code ${code}, signal ${signal})`);
  });
  child.stdin?.on("error", () => {});
  log(`started ${options.adapter}: ${command.join(" ")} (pgid ${child.pid ?? "none"})`);
  const scheduler = plan
    ? createSchedulerWatch({
        preset: plan.preset,
        jobName: plan.request.jobName,
        env,
        pollMs: plan.pollMs,
        onEvent: options.onSchedulerEvent ?? (() => {}),
        log,
      })
    : undefined;
  scheduler?.start();
  return {
    child,
    command,
    pgid: child.pid,
    exit: () => exit,
    spawnError: () => spawnError,
    scheduler,
  };
}

/** A start failure's words: a detail_code and a message. */
type StartFault = { detail: string; message: string };

/**
 * The start's clocks. Without a scheduler the tool has `readyTimeoutMs` from launch. Through a
 * scheduler, waiting in the queue has its own limit (`queueWaitTimeoutMs`, QUEUE_WAIT_TIMEOUT) and
 * the tool's ready timeout counts only from when the job is seen running.
 */
function startClock(
  options: StartSessionOptions,
  tool: LaunchedTool,
): () => StartFault | undefined {
  const t0 = performance.now();
  const { readyTimeoutMs } = options.timings;
  const plan = options.scheduler;
  let readyBy = tool.scheduler ? undefined : t0 + readyTimeoutMs;
  return () => {
    const now = performance.now();
    if (readyBy === undefined && tool.scheduler && plan) {
      const s = tool.scheduler.status();
      if (s && s.phase !== "pending") readyBy = now + readyTimeoutMs;
      else if (now - t0 > plan.queueWaitTimeoutMs) {
        const what = s
          ? `job ${s.jobId} stayed ${s.state}${s.reason ? ` (reason ${s.reason})` : ""}`
          : `the job of ${tool.command[0]} was not seen running`;
        return {
          detail: "QUEUE_WAIT_TIMEOUT",
          message: `${plan.preset.kind}: ${what} for more than ${plan.queueWaitTimeoutMs} ms (queue_wait_timeout_ms); it was cancelled`,
        };
      }
      return undefined;
    }
    if (readyBy !== undefined && now > readyBy) {
      return {
        detail: "READY_TIMEOUT",
        message: `the session was not ready within ${readyTimeoutMs} ms${tool.scheduler ? " of its job running" : ""} (${tool.command.join(" ")})`,
      };
    }
    return undefined;
  };
}

/** Why the launcher exited before ready: the scheduler's ending when it was one, else the exit. */
async function earlyExitFault(tool: LaunchedTool, paths: RunPaths): Promise<StartFault> {
  const ending = await tool.scheduler?.ending();
  if (ending) return { detail: ending.detail_code, message: ending.message };
  const exit = tool.exit();
  return {
    detail: "EXITED_BEFORE_READY",
    message: `${tool.command[0]} exited (code ${exit?.code}, signal ${exit?.signal}) before the session was ready; stderr: ${tail(paths.toolStderr, 400).trim()}`,
  };
}

/** End what was started: the scheduler job first (so the allocation is released), then the group. */
async function endLaunch(tool: LaunchedTool, log: Log): Promise<void> {
  if (tool.scheduler) {
    const released = await tool.scheduler.release();
    tool.scheduler.close();
    log(
      `scheduler job ${tool.scheduler.status()?.jobId ?? "(none)"} ${released ? "released" : "NOT released"}`,
    );
  }
  if (tool.pgid !== undefined) await endProcessGroup(tool.pgid);
}

/**
 * Wait for session/ready.json. SESSION_START_FAIL (as a jobFailed) when the launcher cannot
 * start, exits early (a scheduler ending keeps its own detail_code), is interrupted, waits in the
 * queue too long or the ready timeout passes; the job is cancelled and the group ended then.
 */
async function waitForReady(
  tool: LaunchedTool,
  options: StartSessionOptions,
  paths: RunPaths,
  log: Log,
): Promise<{ ready: Ready; pgid: number }> {
  const { command } = tool;
  const fail = async ({ detail, message }: StartFault): Promise<never> => {
    await endLaunch(tool, log);
    log(`SESSION_START_FAIL ${detail}: ${message}`);
    throw jobFailed({ error_type: "SESSION_START_FAIL", detail_code: detail, message });
  };
  const overdue = startClock(options, tool);
  for (;;) {
    const exit = tool.exit();
    const spawnError = tool.spawnError();
    await sleep(spawnError || exit ? 0 : 5);
    if (spawnError || tool.pgid === undefined) {
      return fail({
        message: `could not start ${command[0]}: ${spawnError?.message ?? "no pid"}`,
        detail: "SPAWN_FAILED",
      });
    }
    const found = readReady(paths.ready);
    if (found) return { ready: found, pgid: tool.pgid };
    if (exit) {
      // ready.json may land just before a quick exit; give it one more look
      await sleep(20);
      const late = readReady(paths.ready);
      if (late) return { ready: late, pgid: tool.pgid };
      return fail(await earlyExitFault(tool, paths));
    }
    if (options.signal?.aborted) {
      return fail({
        message: `interrupted while waiting for the session (${String(options.signal.reason)})`,
        detail: "INTERRUPTED",
      });
    }
    const fault = overdue();
    if (fault) return fail(fault);
  }
}

/**
 * Start the tool with the queue processor as its boot script, wait until it is ready, and hand
 * back the session its supervisor drives: one request at a time, each ending in exactly one ack.
 */
export async function startToolSession(options: StartSessionOptions): Promise<ToolSession> {
  const paths = runPathsFor(options.runDir);
  const log = supervisorLog(paths, options.io, options.clock);
  // once per run, before anything starts: a shared file system must keep the protocol's promises
  probeRunDir(paths.runDir, options.fsProbe);
  const tool = launchTool(options, paths, log);
  const { ready, pgid } = await waitForReady(tool, options, paths, log);
  log(
    `ready: tool pid ${ready.pid} on ${ready.host}, Tcl ${ready.tcl_version}, stubbed ${ready.stubbed}, heartbeat ${ready.heartbeat_mode ?? "loop"}`,
  );
  return superviseSession(tool, ready, pgid, options, paths, log);
}

/** What ended the tool, for a supervisor ack's message. */
function exitText(tool: LaunchedTool): string {
  const exit = tool.exit();
  return exit ? `code ${exit.code}, signal ${exit.signal}` : "pid gone";
}

/** The supervisor's FAIL for a fault seen before or during a request (pure). */
function faultFailure(
  fault: "INNOVUS_CRASH" | "HEARTBEAT_LOST" | "QUEUE_TIMEOUT",
  request: { requestId: string; script: string; timeout: number; inFlight: boolean },
  facts: { staleMs: number; mode: string; exit: string },
): SupervisorFailure {
  const when = request.inFlight
    ? `while running ${request.script}`
    : `before request ${request.requestId}`;
  if (fault === "HEARTBEAT_LOST") {
    return {
      error_type: fault,
      detail_code: "HEARTBEAT_STALE",
      message: `no heartbeat for more than ${facts.staleMs} ms ${when} (heartbeat mode ${facts.mode}: the tool is frozen, stopped or its host unreachable); the session was ended`,
    };
  }
  if (fault === "QUEUE_TIMEOUT") {
    return {
      error_type: fault,
      detail_code: "NO_ACK_BEFORE_DEADLINE",
      message: `no ack for ${request.script} within ${request.timeout} ms; the session was ended`,
    };
  }
  return {
    error_type: fault,
    detail_code: "TOOL_EXITED",
    message: `the tool exited (${facts.exit}) ${when}${request.inFlight ? "; see session/tool.stderr.log" : ""}`,
  };
}

function superviseSession(
  tool: LaunchedTool,
  ready: Ready,
  pgid: number,
  options: Pick<StartSessionOptions, "jobId" | "adapter" | "timings" | "clock" | "io">,
  paths: RunPaths,
  log: Log,
): ToolSession {
  const { timings } = options;
  const heartbeat = watchHeartbeat(paths.heartbeat);
  const sameHost = ready.host === hostname();
  // On another host (a farm launcher) the pid means nothing here: the launcher's exit is the sign.
  const toolAlive = () => !tool.exit() && (!sameHost || isProcessAlive(ready.pid));
  const waker = ackWaker(paths.ack, timings.watchAcks);
  tool.child?.on("exit", () => waker.wake());

  const usedIds = new Set<string>();
  let stopped = false;
  let interrupted: string | undefined;
  let inFlight: string | undefined;

  /** End the session, then answer `requestId` with the supervisor's FAIL (or the tool's late ack). */
  const endWith = async (
    requestId: string,
    startedAt: string,
    failure: SupervisorFailure,
  ): Promise<Ack> => {
    await session.stop();
    return publishSupervisorAck(
      paths,
      options.io,
      options.clock,
      { requestId, jobId: options.jobId, startedAt },
      failure,
    );
  };

  const staleMs = heartbeatThresholdMs(timings);
  const judgedInFlight = beatSurvivesBusyLoop(ready.heartbeat_mode);
  const heartbeatStale = () => {
    heartbeat.observe();
    return heartbeat.silentForMs() > staleMs;
  };
  const facts = () => ({ staleMs, mode: ready.heartbeat_mode ?? "loop", exit: exitText(tool) });

  /** A tool that ended because its scheduler ended the job (scancel, preemption, node failure, time limit) did not crash. */
  const schedulerEnding = async (
    fault: string,
    failure: SupervisorFailure,
  ): Promise<SupervisorFailure> => {
    if (fault !== "INNOVUS_CRASH" || !tool.scheduler) return failure;
    const ending = await tool.scheduler.ending();
    return ending
      ? {
          ...failure,
          detail_code: ending.detail_code,
          message: `${ending.message} (${failure.message})`,
        }
      : failure;
  };

  /** Wait for the request's ack while watching the tool, its heartbeat and the deadline. */
  const awaitAck = async (
    request: { requestId: string; script: string; timeout: number; startedAt: string },
    ackPath: string,
  ): Promise<Ack> => {
    const { requestId, script, startedAt } = request;
    const deadline = performance.now() + request.timeout;
    for (;;) {
      if (interrupted !== undefined) {
        log(`interrupted during ${requestId}: ${interrupted}`);
        return endWith(requestId, startedAt, {
          error_type: "INTERNAL_ERROR",
          detail_code: "INTERRUPTED",
          message: `the job was interrupted (${interrupted}) while running ${script}`,
        });
      }
      const ack = existsSync(ackPath) ? readAck(ackPath) : undefined;
      const verdict = classifySession({
        ackPresent: ack !== undefined,
        toolExited: !toolAlive(),
        deadlinePassed: performance.now() > deadline,
        heartbeatStale: judgedInFlight && heartbeatStale(),
        requestInFlight: true,
        beatSurvivesBusyLoop: judgedInFlight,
      });
      if (verdict === "ACK" && ack) {
        // the loop was free a moment ago: restart the heartbeat's clock from here
        heartbeat.reset();
        log(`ack ${requestId}: ${ack.status} ${ack.error_type}`);
        return ack;
      }
      if (verdict !== "HEALTHY" && verdict !== "ACK") {
        // an ack may have landed just before the fault was seen: it stands
        await sleep(20);
        const late = readAck(ackPath);
        if (late) return late;
        log(`${verdict} during ${requestId}`);
        return endWith(
          requestId,
          startedAt,
          await schedulerEnding(
            verdict,
            faultFailure(verdict, { ...request, inFlight: true }, facts()),
          ),
        );
      }
      await waker.nap(Math.min(timings.ackPollMs, Math.max(1, deadline - performance.now())));
    }
  };

  const runRequest = async ({
    requestId,
    script,
    timeoutMs,
    policy,
    adopt,
  }: RequestOptions): Promise<Ack> => {
    const startedAt = options.clock.now().toISOString();
    const timeout = timeoutMs ?? timings.requestTimeoutMs;
    // Judged while idle, before the request exists; acted on after it is written, so that every
    // request in queue/ has its one ack even when the session is already gone.
    const health = stopped ? "INNOVUS_CRASH" : session.checkHealth();
    if (adopt) usedIds.add(requestId);
    else
      submitRequest(paths, options.io, usedIds, {
        requestId,
        jobId: options.jobId,
        script,
        timeoutMs: timeout,
        createdAt: startedAt,
        ...(policy ? { policy } : {}),
      });
    log(`${adopt ? "adopted" : "submitted"} ${requestId}: ${script}`);
    if (health) {
      log(`${health} before request ${requestId}`);
      return endWith(
        requestId,
        startedAt,
        await schedulerEnding(
          health,
          faultFailure(health, { requestId, script, timeout, inFlight: false }, facts()),
        ),
      );
    }
    return awaitAck(
      { requestId, script, timeout, startedAt },
      join(paths.ack, `${requestId}.json`),
    );
  };

  const session: ToolSession = {
    adapter: options.adapter,
    command: tool.command,
    pgid,
    ready,
    alive: () => toolAlive(),
    checkHealth() {
      if (!toolAlive()) return "INNOVUS_CRASH";
      const verdict = classifySession({
        ackPresent: false,
        toolExited: false,
        deadlinePassed: false,
        heartbeatStale: heartbeatStale(),
        requestInFlight: false,
        beatSurvivesBusyLoop: judgedInFlight,
      });
      return verdict === "HEARTBEAT_LOST" ? verdict : undefined;
    },
    async request(request) {
      if (inFlight) {
        throw new TimewarpError(
          ErrorCode.INTERNAL,
          `request ${request.requestId} while ${inFlight} is in flight: a session runs one request at a time`,
        );
      }
      inFlight = request.requestId;
      try {
        return await runRequest(request);
      } finally {
        inFlight = undefined;
      }
    },
    interrupt(reason) {
      interrupted = reason;
      waker.wake();
    },
    async stop() {
      stopped = true;
      waker.close();
      tool.child?.stdin?.destroy();
      // a scheduler job is cancelled first, so that its allocation is released
      await endLaunch({ ...tool, pgid }, log);
      // a launcher may have moved the tool out of our group (setsid); end it by pid too
      if (sameHost && toolAlive() && ready.pid !== pgid) {
        try {
          process.kill(ready.pid, "SIGKILL");
        } catch {
          // gone
        }
      }
      const { child } = tool;
      const running = () =>
        child ? child.exitCode === null && child.signalCode === null : toolAlive();
      for (let i = 0; i < 100 && !tool.exit() && running(); i++) await sleep(5);
      // A tool killed between its ack's hard link and the unlink of the temp name leaves that
      // temp behind; with no writer left, sweep such leftovers (readers skip them anyway).
      if (!toolAlive() && !processGroupAlive(pgid)) sweepTempFiles(paths);
    },
  };
  return session;
}

export interface AttachSessionOptions {
  runDir: string;
  jobId: string;
  adapter: AdapterName;
  /** The session as the manifest recorded it when it was started. */
  command: string[];
  pgid: number;
  timings: SessionTimings;
  clock: Clock;
  io: ProtocolIo;
  /** The scheduler job the session runs in (`--adapter slurm`): followed, and cancelled at the end. */
  scheduler?: SchedulerPlan;
  onSchedulerEvent?: (event: SchedulerEventName, facts: SchedulerFacts) => void;
  env?: NodeJS.ProcessEnv;
}

/**
 * Supervise a live session that another runner started (`skill resume`: its runner was killed
 * -9): no launch, no restore. Nothing here is this process's child, so the tool's end is seen
 * through its pid (same host) and its process group, not through an exit event.
 * SESSION_START_FAIL (as a jobFailed) when session/ready.json is missing.
 */
export function attachToolSession(options: AttachSessionOptions): ToolSession {
  const paths = runPathsFor(options.runDir);
  const log = supervisorLog(paths, options.io, options.clock);
  const ready = readReady(paths.ready);
  if (!ready) {
    throw jobFailed({
      error_type: "SESSION_START_FAIL",
      detail_code: "NOT_READY",
      message: `no valid ${paths.ready}: there is no session to attach to`,
    });
  }
  const { pgid } = options;
  const sameHost = ready.host === hostname();
  const gone = () =>
    !processGroupAlive(pgid) && (!sameHost || !isProcessAlive(ready.pid))
      ? { code: null, signal: null }
      : undefined;
  const tool: LaunchedTool = {
    child: undefined,
    command: options.command,
    pgid,
    exit: gone,
    spawnError: () => undefined,
    scheduler: options.scheduler
      ? createSchedulerWatch({
          preset: options.scheduler.preset,
          jobName: options.scheduler.request.jobName,
          env: { ...process.env, ...options.env },
          pollMs: options.scheduler.pollMs,
          onEvent: options.onSchedulerEvent ?? (() => {}),
          log,
        })
      : undefined,
  };
  tool.scheduler?.start();
  log(`attached by pid ${process.pid}: tool pid ${ready.pid} on ${ready.host}, pgid ${pgid}`);
  return superviseSession(tool, ready, pgid, options, paths, log);
}
