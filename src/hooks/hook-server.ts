import { type FSWatcher, mkdirSync, readdirSync, rmSync, statSync, watch } from "node:fs";
import { join } from "node:path";
import type { Worker } from "node:worker_threads";
import { writeFileAtomic } from "../core/index.ts";
import {
  COMMAND_EVENT,
  COMMAND_STOP_WAIT_MS,
  HOOK_PROTOCOL,
  HOOK_RUN_LIMIT_MS,
  HOOK_TIMING_WINDOW,
  type HookEventTimings,
  type HookRequestHeader,
  type HookServerRecord,
  hookServerPaths,
  requestId,
} from "./hook-protocol.ts";
import { claimHookRequest, writeHookReply } from "./hook-request.ts";
import { createHookRunner } from "./hook-runner.ts";
import { servedCommandKind } from "./served-command.ts";

export interface HookServerOptions {
  root: string;
  /** Start the thread that runs hooks (`runHookWorker`; see `startHookWorker` in hook-daemon.ts). */
  startWorker: () => Worker;
  /**
   * Asked for each request: why this process may no longer serve (its code on disk was replaced
   * by an upgrade or a rebuild), or null. A stale server declines, so the client runs the hook
   * itself, and calls `onStale` (the daemon stops; the next hook starts a fresh one).
   */
  stale?: () => string | null;
  onStale?: (reason: string) => void;
  /**
   * How often `stale` is also asked between requests (default 5 s): an upgrade's clients speak
   * a newer protocol and never come to ask, so a stale server must notice on its own.
   */
  staleCheckMs?: number;
  /**
   * Asked for each request: why the worker must not run it now, or null. Declined, the client
   * runs the hook or command in its own process (while the daemon primes: hook-daemon.ts).
   */
  declining?: () => string | null;
  /** A hook running longer than this is abandoned and its worker replaced (default 2 min). */
  hookTimeoutMs?: number;
  /** How long `close` lets a write command the worker started run on (`COMMAND_STOP_WAIT_MS`). */
  stopWaitMs?: number;
  log?: (line: string) => void;
}

export interface HookServer {
  /** When the last hook call came in (ms since the epoch; the start time before any). */
  lastRequestAt: () => number;
  /** How many hook calls were answered. */
  served: () => number;
  /**
   * Stop taking requests and decline what waits; let a write command the worker started run to
   * its answer (at most `stopWaitMs`, then it is reported interrupted); fail the rest, stop the
   * worker. Resolves once the worker is stopped.
   */
  close: () => Promise<void>;
}

/**
 * Files of killed clients (a reply nobody collected, a request half written) are removed after
 * this long.
 */
const LEFTOVER_MS = 10 * 60_000;

/**
 * Serve `timewarp hook` calls for the workspace at `root` through its hook directory (see
 * `hook-protocol.ts`), running each in one worker thread that keeps the hook code loaded: a
 * hook then costs the client's Node start and a few file operations instead of loading and
 * compiling the CLI each time. The caller must own `.timewarp/watch/` for the server's lifetime
 * (the watch daemon holds its lock): whatever an earlier server left there is removed.
 */
export function serveHooks(options: HookServerOptions): HookServer {
  const log = options.log ?? (() => {});
  const paths = hookServerPaths(options.root);
  rmSync(paths.dir, { recursive: true, force: true });
  // Private: requests carry payloads (file contents, commands) and the agent's environment.
  // Not recursive: a workspace deleted while the daemon started is not made again (ENOENT).
  mkdirSync(paths.dir, { mode: 0o700 });
  let lastRequestAt = Date.now();
  let served = 0;
  let closing: Promise<void> | undefined;
  const timings = createHookTimings();
  const startedAt = new Date().toISOString();

  /** The record clients look for (written last at start: from then on requests are taken). */
  const publish = (): void => {
    const record: HookServerRecord = {
      protocol: HOOK_PROTOCOL,
      pid: process.pid,
      started_at: startedAt,
      served,
      timings: timings.summary(),
    };
    try {
      // One line, protocol then pid first: the shell client reads them without a JSON parser.
      writeFileAtomic(paths.record, `${JSON.stringify(record)}\n`, { durable: false });
    } catch (error) {
      log(`timewarp hooks: cannot write ${paths.record}: ${String(error)}`);
    }
  };

  const runner = createHookRunner({
    root: options.root,
    startWorker: options.startWorker,
    hookTimeoutMs: options.hookTimeoutMs ?? HOOK_RUN_LIMIT_MS,
    log,
    onAnswered: (header, ms) => {
      served++;
      timings.record(header.event, ms);
      if (closing === undefined) publish();
    },
  });

  /** Claim a request by rename (at most once), then run it or decline it. */
  const take = (id: string): void => {
    const claimedAt = performance.now();
    const request = claimHookRequest(paths.dir, id);
    if (request === undefined) return;
    if ("declined" in request) {
      writeHookReply(request.to, { declined: request.declined }, log);
      return;
    }
    const why = commandRefusal(request.header, runner.busy()) ?? options.declining?.() ?? null;
    if (why !== null) {
      writeHookReply(request.to, { declined: why }, log);
      // (so that a command that ran slower than the daemon serves it can be told why)
      log(`timewarp hooks: declined ${requestName(request.header)}: ${why}`);
      return;
    }
    const staleReason =
      closing !== undefined ? "the daemon is stopping" : (options.stale?.() ?? null);
    if (staleReason !== null) {
      writeHookReply(request.to, { declined: staleReason }, log);
      if (closing === undefined && !runner.writing()) options.onStale?.(staleReason);
      return;
    }
    lastRequestAt = Date.now();
    runner.run({ ...request, claimedAt });
  };

  const watcher: FSWatcher = watch(paths.dir, { persistent: false }, (_type, name) => {
    const id = name === null ? null : requestId(name);
    if (id !== null) take(id);
  });
  watcher.on("error", (error) => log(`timewarp hooks: watcher error: ${String(error)}`));
  const sweeper = setInterval(() => sweepLeftovers(paths.dir, paths.record), 60_000);
  sweeper.unref();
  // (A write command the worker runs is let finish first: stopping would cut a restore short.)
  const staleCheck = setInterval(() => {
    const why = closing !== undefined || runner.writing() ? null : (options.stale?.() ?? null);
    if (why !== null) options.onStale?.(why);
  }, options.staleCheckMs ?? 5_000);
  staleCheck.unref();
  runner.warm();
  publish();

  return {
    lastRequestAt: () => lastRequestAt,
    served: () => served,
    close: () => {
      if (closing !== undefined) return closing;
      closing = Promise.resolve();
      rmSync(paths.record, { force: true });
      watcher.close();
      clearInterval(sweeper);
      clearInterval(staleCheck);
      // Requests that came in meanwhile are declined (their clients run them), not left to wait.
      for (const name of readdirSync(paths.dir)) {
        const id = requestId(name);
        if (id !== null) take(id);
      }
      closing = runner.finish(
        "the daemon stopped before this hook finished",
        options.stopWaitMs ?? COMMAND_STOP_WAIT_MS,
      );
      return closing;
    },
  };
}

/** A request as the log names it: `command snapshot create`, or `hook pre-tool-use`. */
function requestName(header: HookRequestHeader): string {
  const { command } = header;
  return Array.isArray(command)
    ? `command ${command.slice(0, 2).join(" ")}`
    : `hook ${header.event}`;
}

/**
 * Why a request's command is not run here (null for a hook, or a command this server runs): not
 * a served command; a write command without its live stderr; or a write command while the worker
 * holds something else. That one runs in its client's own process instead, which meets a lock
 * held as any process would (`LOCKED`): queued here it would wait and then run, an answer the
 * CLI never gives.
 */
function commandRefusal(header: HookRequestHeader, busy: boolean): string | null {
  const { command, event } = header;
  if (command === undefined && event !== COMMAND_EVENT) return null;
  const kind = Array.isArray(command) ? servedCommandKind(command) : null;
  if (kind === null) return "not a command this server runs";
  if (kind === "read" && header.live === true) return "a read-only command is not live";
  if (kind === "write" && (header.live !== true || header.reply !== "files"))
    return "a write command needs its stderr live";
  if (kind === "write" && busy) return "the worker is busy";
  return null;
}

/** Remove what killed clients left (a reply nobody collected, a request half written). */
function sweepLeftovers(dir: string, record: string): void {
  const old = Date.now() - LEFTOVER_MS;
  for (const name of readdirSync(dir)) {
    if (join(dir, name) === record || name.startsWith("req-")) continue;
    try {
      if (statSync(join(dir, name)).mtimeMs < old) rmSync(join(dir, name));
    } catch {
      // collected meanwhile
    }
  }
}

/** Per event: answers so far, and the last HOOK_TIMING_WINDOW claim-to-reply times (ms). */
function createHookTimings(): {
  record(event: string, ms: number): void;
  summary(): Record<string, HookEventTimings>;
} {
  const timings = new Map<string, { count: number; recent: number[] }>();
  return {
    record(event, ms) {
      let t = timings.get(event);
      if (t === undefined) {
        t = { count: 0, recent: [] };
        timings.set(event, t);
      }
      t.count++;
      t.recent.push(ms);
      if (t.recent.length > HOOK_TIMING_WINDOW) t.recent.shift();
    },
    summary: () =>
      Object.fromEntries([...timings].map(([event, t]) => [event, summarize(t.count, t.recent)])),
  };
}

/** Nearest-rank percentiles of the recent times, rounded to 0.1 ms. */
function summarize(count: number, recent: readonly number[]): HookEventTimings {
  const sorted = [...recent].sort((a, b) => a - b);
  const at = (p: number) => {
    const v = sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0;
    return Math.round(v * 10) / 10;
  };
  return { count, p50_ms: at(50), p95_ms: at(95) };
}
