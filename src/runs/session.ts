import { type ChildProcess, spawn } from "node:child_process";
import {
  closeSync,
  existsSync,
  type FSWatcher,
  linkSync,
  openSync,
  readdirSync,
  readFileSync,
  unlinkSync,
  watch,
} from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import type { Clock } from "../core/index.ts";
import { ErrorCode, errnoCode, isTempName, TimewarpError, tempPathFor } from "../core/index.ts";
import { formatBootScript, type LaunchSettings, planLaunch } from "./launch.ts";
import { tclDir } from "./package-paths.ts";
import {
  type Ack,
  AckSchema,
  type AdapterName,
  type Ready,
  ReadySchema,
  SCHEMA_VERSION,
} from "./protocol.ts";
import { type ProtocolIo, type RunPaths, runPathsFor } from "./run-dir.ts";
import { classifySession, JobFailureError } from "./taxonomy.ts";

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
}

/** One request to run: a script under scripts/. */
export interface RequestOptions {
  requestId: string;
  script: string;
  timeoutMs?: number;
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
  /** HEARTBEAT_LOST when the counter has not moved for too long while idle; undefined when healthy. */
  checkHealth(): "HEARTBEAT_LOST" | "INNOVUS_CRASH" | undefined;
  /** Whether the tool (or its launcher) is still running. */
  alive(): boolean;
  /** End the session's whole process group (TERM, then KILL) and wait until it is gone. */
  stop(): Promise<void>;
  /** Interrupt (SIGINT/SIGTERM of the runner): an in-flight request ends FAIL INTERNAL_ERROR/INTERRUPTED. */
  interrupt(reason: string): void;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * True while any live process of the group exists. On Linux, zombies do not count: a killed tool
 * orphaned by its launcher waits for PID 1 to reap it, which in containers may take a while.
 */
export function processGroupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
  } catch (error) {
    return errnoCode(error) === "EPERM";
  }
  if (!existsSync("/proc/self/stat")) return true;
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${name}/stat`, "utf8");
    } catch {
      continue;
    }
    // "pid (comm) state ppid pgrp …" — comm may hold spaces and parentheses
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (Number(fields[2]) === pgid && fields[0] !== "Z" && fields[0] !== "X") return true;
  }
  return false;
}

/** True while `pid` runs (a zombie waiting to be reaped does not count, on Linux). */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    return errnoCode(error) === "EPERM";
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const state = stat.slice(stat.lastIndexOf(")") + 2).split(" ")[0];
    return state !== "Z" && state !== "X";
  } catch {
    // no /proc (not Linux): the kill(0) above is all we know
    return !existsSync("/proc/self/stat");
  }
}

function killGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // already gone
  }
}

/** End a process group: TERM, a short grace, then KILL; resolves when no member is left. */
export async function endProcessGroup(pgid: number, graceMs = 300): Promise<void> {
  if (!processGroupAlive(pgid)) return;
  killGroup(pgid, "SIGTERM");
  const until = performance.now() + graceMs;
  while (processGroupAlive(pgid) && performance.now() < until) await sleep(10);
  for (let i = 0; i < 300 && processGroupAlive(pgid); i++) {
    killGroup(pgid, "SIGKILL");
    await sleep(10);
  }
}

/**
 * Remove temp names (`.…tw-tmp-…`) from ack/, queue/ and session/. Only safe once no writer is
 * left: a tool killed between an ack's hard link and the unlink of its temp name leaves one.
 */
export function sweepTempFiles(paths: RunPaths): void {
  for (const dir of [paths.ack, paths.queue, paths.session]) {
    for (const name of safeReaddir(dir)) {
      if (!isTempName(name)) continue;
      try {
        unlinkSync(join(dir, name));
      } catch {
        // gone already
      }
    }
  }
}

function safeReaddir(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

function readHeartbeat(path: string): number | undefined {
  try {
    const n = Number.parseInt(readFileSync(path, "utf8").split(" ")[0] ?? "", 10);
    return Number.isFinite(n) ? n : undefined;
  } catch {
    return undefined;
  }
}

/** session/ready.json when present and valid (it is written atomically, so a bad one is foreign). */
function readReady(path: string): Ready | undefined {
  try {
    return ReadySchema.parse(JSON.parse(readFileSync(path, "utf8")));
  } catch {
    return undefined;
  }
}

function tail(path: string, bytes = 2000): string {
  try {
    const text = readFileSync(path, "utf8");
    return text.slice(-bytes);
  } catch {
    return "";
  }
}

/**
 * Start the tool in its own process group (detached), with the queue processor as its boot
 * script, and wait for session/ready.json. SESSION_START_FAIL (as a JobFailureError) when the
 * launcher cannot start, exits early, or the ready timeout passes; the group is ended then.
 */
export async function startSession(options: StartSessionOptions): Promise<ToolSession> {
  const paths = runPathsFor(options.runDir);
  const { timings } = options;
  // supervisor.log is diagnostics: a failed append (disk full, run dir removed) never fails the job
  const log = (message: string) => {
    try {
      options.io.appendLine(paths.supervisorLog, `${options.clock.now().toISOString()} ${message}`);
    } catch {
      // nothing better to do with it
    }
  };
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
    }),
  );
  const command = planLaunch({
    adapter: options.adapter,
    settings: options.settings,
    bootPath: paths.boot,
  });
  const outFd = openSync(paths.toolStdout, "a");
  const errFd = openSync(paths.toolStderr, "a");
  let child: ChildProcess;
  let exit: { code: number | null; signal: string | null } | undefined;
  let spawnError: Error | undefined;
  try {
    child = spawn(command[0] ?? "", command.slice(1), {
      cwd: paths.session,
      // its own process group, so the tool and anything it starts are ended together
      detached: true,
      // stdin stays open: interactive launchers (dsub -I, bsub -Is) end on EOF
      stdio: ["pipe", outFd, errFd],
      env: { ...process.env, ...options.env, SKILLPILOT_RUN_DIR: options.runDir },
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
  const pgid = child.pid;
  log(`started ${options.adapter}: ${command.join(" ")} (pgid ${pgid ?? "none"})`);

  const fail = async (message: string, detail: string): Promise<never> => {
    if (pgid !== undefined) await endProcessGroup(pgid);
    log(`SESSION_START_FAIL ${detail}: ${message}`);
    throw new JobFailureError({ error_type: "SESSION_START_FAIL", detail_code: detail, message });
  };

  // ── wait for ready.json ───────────────────────────────────────────────────
  const readyBy = performance.now() + timings.readyTimeoutMs;
  let ready: Ready | undefined;
  for (;;) {
    await sleep(spawnError || exit ? 0 : 5);
    if (spawnError || pgid === undefined) {
      return fail(
        `could not start ${command[0]}: ${spawnError?.message ?? "no pid"}`,
        "SPAWN_FAILED",
      );
    }
    const found = readReady(paths.ready);
    if (found) {
      ready = found;
      break;
    }
    if (exit) {
      // ready.json may land just before a quick exit; give it one more look
      await sleep(20);
      ready = readReady(paths.ready);
      if (ready) break;
      return fail(
        `${command[0]} exited (code ${exit.code}, signal ${exit.signal}) before the session was ready; stderr: ${tail(paths.toolStderr, 400).trim()}`,
        "EXITED_BEFORE_READY",
      );
    }
    if (options.signal?.aborted) {
      return fail(
        `interrupted while waiting for the session (${String(options.signal.reason)})`,
        "INTERRUPTED",
      );
    }
    if (performance.now() > readyBy) {
      return fail(
        `the session was not ready within ${timings.readyTimeoutMs} ms (${command.join(" ")})`,
        "READY_TIMEOUT",
      );
    }
  }
  log(
    `ready: tool pid ${ready.pid} on ${ready.host}, Tcl ${ready.tcl_version}, stubbed ${ready.stubbed}`,
  );
  const readyInfo = ready;
  const groupId = pgid;

  // ── heartbeat, timed on the runner's own clock ────────────────────────────
  let beatValue = readHeartbeat(paths.heartbeat);
  let beatSeenAt = performance.now();
  const observeBeat = () => {
    const v = readHeartbeat(paths.heartbeat);
    if (v !== undefined && v !== beatValue) {
      beatValue = v;
      beatSeenAt = performance.now();
    }
  };
  const sameHost = readyInfo.host === hostname();
  const toolAlive = () => {
    if (exit) return false;
    if (!sameHost) return true;
    return pidAlive(readyInfo.pid);
  };

  // ── ack wake-ups: fs.watch on ack/ with a polling fallback ────────────────
  let wake: (() => void) | undefined;
  let watcher: FSWatcher | undefined;
  if (timings.watchAcks) {
    try {
      watcher = watch(paths.ack, () => wake?.());
      watcher.on("error", () => {});
    } catch {
      watcher = undefined;
    }
  }
  child.on("exit", () => wake?.());
  const nap = (ms: number) =>
    new Promise<void>((resolve) => {
      const t = setTimeout(() => {
        wake = undefined;
        resolve();
      }, ms);
      wake = () => {
        clearTimeout(t);
        wake = undefined;
        resolve();
      };
    });

  const usedIds = new Set<string>();
  let stopped = false;
  let interrupted: string | undefined;

  const readAck = (path: string): Ack | undefined => {
    try {
      return AckSchema.parse(JSON.parse(readFileSync(path, "utf8")));
    } catch {
      return undefined;
    }
  };

  /** The supervisor's own ack for a request the tool could not answer, published the same way. */
  const publishSupervisorAck = (
    requestId: string,
    failure: { error_type: Ack["error_type"]; detail_code: string; message: string },
    startedAt: string,
  ): Ack => {
    const final = join(paths.ack, `${requestId}.json`);
    const ack: Ack = {
      schema_version: SCHEMA_VERSION,
      request_id: requestId,
      job_id: options.jobId,
      status: "FAIL",
      error_type: failure.error_type,
      detail_code: failure.detail_code,
      message: failure.message,
      started_at: startedAt,
      finished_at: options.clock.now().toISOString(),
      evidence_paths: ["session/supervisor.log", "session/tool.stderr.log"],
      by: "supervisor",
    };
    const temp = tempPathFor(final);
    options.io.writeFile(temp, `${JSON.stringify(ack, null, 2)}\n`);
    try {
      linkSync(temp, final);
    } catch (error) {
      if (errnoCode(error) !== "EEXIST") throw error;
      // the tool answered after all: its ack is the one
      const theirs = readAck(final);
      if (theirs) return theirs;
    } finally {
      try {
        unlinkSync(temp);
      } catch {
        // gone already
      }
    }
    return ack;
  };

  const runRequest = async ({ requestId, script, timeoutMs }: RequestOptions): Promise<Ack> => {
    const startedAt = options.clock.now().toISOString();
    const ackPath = join(paths.ack, `${requestId}.json`);
    const queuePath = join(paths.queue, `${requestId}.json`);
    if (
      usedIds.has(requestId) ||
      existsSync(ackPath) ||
      readdirSync(paths.queue).some(
        (n) => n === `${requestId}.json` || n.startsWith(`${requestId}.json.`),
      )
    ) {
      throw new TimewarpError(
        ErrorCode.REQUEST_DUPLICATE,
        `request id ${requestId} was used already in ${paths.queue}; a request file is never overwritten (seed §5.1.4)`,
        { data: { request_id: requestId } },
      );
    }
    usedIds.add(requestId);
    // Judged while idle, before the request exists; acted on after it is written, so that every
    // request in queue/ has its one ack even when the session is already gone.
    const health = stopped ? "INNOVUS_CRASH" : session.checkHealth();
    const timeout = timeoutMs ?? timings.requestTimeoutMs;
    const request = {
      schema_version: SCHEMA_VERSION,
      request_id: requestId,
      job_id: options.jobId,
      action: "SOURCE_TCL",
      script,
      timeout_s: timeout / 1000,
      created_at: startedAt,
    };
    // temp file in queue/, then a link that fails if the name exists: never overwrite a request
    const temp = tempPathFor(queuePath);
    options.io.writeFile(temp, `${JSON.stringify(request, null, 2)}\n`);
    try {
      linkSync(temp, queuePath);
    } catch (error) {
      throw errnoCode(error) === "EEXIST"
        ? new TimewarpError(ErrorCode.REQUEST_DUPLICATE, `${queuePath} exists already`, {
            data: { request_id: requestId },
          })
        : error;
    } finally {
      try {
        unlinkSync(temp);
      } catch {
        // gone already
      }
    }
    log(`submitted ${requestId}: ${script}`);
    if (health) {
      log(`${health} before request ${requestId}`);
      await session.stop();
      return publishSupervisorAck(
        requestId,
        health === "HEARTBEAT_LOST"
          ? {
              error_type: health,
              detail_code: "HEARTBEAT_STALE",
              message: `no heartbeat for more than ${timings.heartbeatStaleMs} ms while idle; the session was ended`,
            }
          : {
              error_type: health,
              detail_code: "TOOL_EXITED",
              message: `the tool exited (${exit ? `code ${exit.code}, signal ${exit.signal}` : "pid gone"}) before request ${requestId}`,
            },
        startedAt,
      );
    }
    const deadline = performance.now() + timeout;
    for (;;) {
      if (interrupted !== undefined) {
        log(`interrupted during ${requestId}: ${interrupted}`);
        await session.stop();
        const late = readAck(ackPath);
        if (late) return late;
        return publishSupervisorAck(
          requestId,
          {
            error_type: "INTERNAL_ERROR",
            detail_code: "INTERRUPTED",
            message: `the job was interrupted (${interrupted}) while running ${script}`,
          },
          startedAt,
        );
      }
      const ack = existsSync(ackPath) ? readAck(ackPath) : undefined;
      const verdict = classifySession({
        ackPresent: ack !== undefined,
        toolExited: !toolAlive(),
        deadlinePassed: performance.now() > deadline,
        heartbeatStale: false,
        requestInFlight: true,
      });
      if (verdict === "ACK" && ack) {
        // the loop was free a moment ago: restart the heartbeat's clock from here
        observeBeat();
        beatSeenAt = performance.now();
        log(`ack ${requestId}: ${ack.status} ${ack.error_type}`);
        return ack;
      }
      if (verdict === "INNOVUS_CRASH") {
        // the ack may have landed just before the exit
        await sleep(20);
        const late = readAck(ackPath);
        if (late) return late;
        log(`INNOVUS_CRASH during ${requestId}`);
        await session.stop();
        return publishSupervisorAck(
          requestId,
          {
            error_type: "INNOVUS_CRASH",
            detail_code: "TOOL_EXITED",
            message: `the tool exited (${exit ? `code ${exit.code}, signal ${exit.signal}` : "pid gone"}) while running ${script}; see session/tool.stderr.log`,
          },
          startedAt,
        );
      }
      if (verdict === "QUEUE_TIMEOUT") {
        log(`QUEUE_TIMEOUT for ${requestId} after ${timeout} ms`);
        await session.stop();
        return publishSupervisorAck(
          requestId,
          {
            error_type: "QUEUE_TIMEOUT",
            detail_code: "NO_ACK_BEFORE_DEADLINE",
            message: `no ack for ${script} within ${timeout} ms; the session was ended`,
          },
          startedAt,
        );
      }
      await nap(Math.min(timings.ackPollMs, Math.max(1, deadline - performance.now())));
    }
  };

  let inFlight: string | undefined;
  const session: ToolSession = {
    adapter: options.adapter,
    command,
    pgid: groupId,
    ready: readyInfo,
    alive: () => toolAlive(),
    checkHealth() {
      if (!toolAlive()) return "INNOVUS_CRASH";
      observeBeat();
      const verdict = classifySession({
        ackPresent: false,
        toolExited: false,
        deadlinePassed: false,
        heartbeatStale: performance.now() - beatSeenAt > timings.heartbeatStaleMs,
        requestInFlight: false,
      });
      return verdict === "HEARTBEAT_LOST" ? verdict : undefined;
    },
    async request({ requestId, script, timeoutMs }) {
      if (inFlight) {
        throw new TimewarpError(
          ErrorCode.INTERNAL,
          `request ${requestId} while ${inFlight} is in flight: a session runs one request at a time`,
        );
      }
      inFlight = requestId;
      try {
        return await runRequest({
          requestId,
          script,
          ...(timeoutMs !== undefined ? { timeoutMs } : {}),
        });
      } finally {
        inFlight = undefined;
      }
    },
    interrupt(reason) {
      interrupted = reason;
      wake?.();
    },
    async stop() {
      stopped = true;
      watcher?.close();
      watcher = undefined;
      child.stdin?.destroy();
      await endProcessGroup(groupId);
      // a launcher may have moved the tool out of our group (setsid); end it by pid too
      if (sameHost && toolAlive() && readyInfo.pid !== groupId) {
        try {
          process.kill(readyInfo.pid, "SIGKILL");
        } catch {
          // gone
        }
      }
      for (let i = 0; i < 100 && !exit && child.exitCode === null && child.signalCode === null; i++)
        await sleep(5);
      // A tool killed between its ack's hard link and the unlink of the temp name leaves that
      // temp behind; with no writer left, sweep such leftovers (readers skip them anyway).
      if (!toolAlive() && !processGroupAlive(groupId)) sweepTempFiles(paths);
    },
  };
  return session;
}

/** For tests and the debug bundle: the tail of a session log. */
export function sessionLogTail(
  paths: RunPaths,
  which: "supervisor" | "stdout" | "stderr" | "processor",
): string {
  const file =
    which === "supervisor"
      ? paths.supervisorLog
      : which === "stdout"
        ? paths.toolStdout
        : which === "stderr"
          ? paths.toolStderr
          : join(paths.session, "processor.log");
  return tail(file, 4000);
}
