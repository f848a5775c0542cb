import {
  type FSWatcher,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  watch,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import type { Worker } from "node:worker_threads";
import { clearLockOfThread, workspacePaths, writeFileAtomic } from "../core/index.ts";
import { isHookEvent } from "./hook-events.ts";
import { formatHookResponse } from "./hook-outcome.ts";
import {
  claimedFile,
  HOOK_PROTOCOL,
  HOOK_RUN_LIMIT_MS,
  HOOK_TIMING_WINDOW,
  type HookAnswer,
  type HookEventTimings,
  type HookReply,
  type HookRequestHeader,
  type HookServerRecord,
  hookServerPaths,
  replyFile,
  requestFile,
  requestId,
  stderrFile,
  stdoutFile,
} from "./hook-protocol.ts";
import type { HookWorkerReply, HookWorkerRequest } from "./hook-worker.ts";

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
  /** A hook running longer than this is abandoned and its worker replaced (default 2 min). */
  hookTimeoutMs?: number;
  log?: (line: string) => void;
}

export interface HookServer {
  /** When the last hook call came in (ms since the epoch; the start time before any). */
  lastRequestAt: () => number;
  /** How many hook calls were answered. */
  served: () => number;
  /** Stop taking requests, decline what waits, fail what runs, stop the worker. */
  close: () => void;
}

/**
 * Files of killed clients (a reply nobody collected, a request half written) are removed after
 * this long.
 */
const LEFTOVER_MS = 10 * 60_000;

/** Where a request's answer goes: its reply file, and with `reply: "files"` its output files. */
interface ReplyTo {
  reply: string;
  files?: { stdout: string; stderr: string };
}

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
  mkdirSync(paths.dir, { recursive: true, mode: 0o700 });
  let lastRequestAt = Date.now();
  let served = 0;
  let closing = false;
  let nextId = 1;
  let worker: Worker | null = null;
  /** The worker loaded the hook code: from then on a request it was given may have started. */
  let workerReady = false;
  const pending = new Map<
    number,
    { to: ReplyTo; timer: NodeJS.Timeout; header: HookRequestHeader; claimedAt: number }
  >();
  /** Per event: answers so far, and the last HOOK_TIMING_WINDOW claim-to-reply times (ms). */
  const timings = new Map<string, { count: number; recent: number[] }>();
  const timed = (event: string, ms: number): void => {
    let t = timings.get(event);
    if (t === undefined) {
      t = { count: 0, recent: [] };
      timings.set(event, t);
    }
    t.count++;
    t.recent.push(ms);
    if (t.recent.length > HOOK_TIMING_WINDOW) t.recent.shift();
  };

  const answer = (to: ReplyTo, body: HookReply): void => {
    let json: HookReply | { exitCode: number } = body;
    if (to.files !== undefined && body.declined === undefined) {
      // The output first, each file only when there is some: the reply publishes them.
      json = { exitCode: body.exitCode };
      for (const [file, text] of [
        [to.files.stdout, body.stdout],
        [to.files.stderr, body.stderr],
      ] as const) {
        try {
          if (text !== "") writeFileSync(file, text, { mode: 0o600 });
        } catch (error) {
          log(`timewarp hooks: cannot write a hook's output: ${String(error)}`);
        }
      }
    }
    try {
      // whole or not at all (the client polls for the name), private, not fsynced: ephemeral
      writeFileAtomic(to.reply, JSON.stringify(json), { mode: 0o600, durable: false });
    } catch (error) {
      log(`timewarp hooks: cannot write a reply: ${String(error)}`);
    }
  };
  /**
   * Answer every queued hook: declined while the worker never loaded (nothing of them ran, so
   * their clients run them), else as failed (one may have run in part; a hook never runs twice).
   */
  const failAll = (why: string): void => {
    for (const [id, p] of pending) {
      clearTimeout(p.timer);
      pending.delete(id);
      answer(p.to, workerReady ? failedAnswer(p.header, why) : { declined: why });
    }
  };
  const dropWorker = (why: string): void => {
    const w = worker;
    worker = null;
    failAll(why);
    if (w !== null) void w.terminate();
  };
  /**
   * The locks a worker stopped from outside (a hook past its time, a crash, the daemon's stop,
   * which can come during a session start's cleanup) may still hold: they name this live
   * process, so nobody else would take them over until it exits.
   */
  const releaseLocksOf = async (thread: number): Promise<void> => {
    const { ledgerPaths } = await import("../ledger/index.ts");
    for (const path of [workspacePaths(options.root).lock, ledgerPaths(options.root).lock]) {
      try {
        if (clearLockOfThread(path, thread))
          log(`timewarp hooks: released ${path}, held by a stopped worker`);
      } catch (error) {
        log(`timewarp hooks: cannot release ${path}: ${String(error)}`);
      }
    }
  };
  const ensureWorker = (): Worker => {
    if (worker !== null) return worker;
    const w = options.startWorker();
    const thread = w.threadId;
    worker = w;
    workerReady = false;
    w.on("message", (message: HookWorkerReply) => {
      if (message.kind === "ready") {
        workerReady = true;
        return;
      }
      const p = pending.get(message.id);
      if (p === undefined) return;
      clearTimeout(p.timer);
      pending.delete(message.id);
      served++;
      answer(p.to, message.reply);
      timed(p.header.event, performance.now() - p.claimedAt);
      if (!closing) publish();
    });
    w.on("error", (error) => {
      log(`timewarp hooks: the worker failed: ${error.message}`);
      if (worker === w) dropWorker(`the hook worker failed: ${error.message}`);
    });
    w.on("exit", (code) => {
      if (worker === w) dropWorker(`the hook worker exited (code ${code})`);
      void releaseLocksOf(thread);
    });
    w.unref();
    w.postMessage({ kind: "warm" } satisfies HookWorkerRequest);
    return w;
  };

  /** Claim a request by rename (at most once), then run it or decline it. */
  const take = (id: string): void => {
    const claimedAt = performance.now();
    const claimed = join(paths.dir, claimedFile(id));
    try {
      renameSync(join(paths.dir, requestFile(id)), claimed);
    } catch {
      return; // taken back by its client, or a second event for the same request
    }
    const to: ReplyTo = { reply: join(paths.dir, replyFile(id)) };
    let bytes: Buffer;
    try {
      bytes = readFileSync(claimed);
    } catch (error) {
      answer(to, { declined: `cannot read the request: ${String(error)}` });
      return;
    } finally {
      rmSync(claimed, { force: true });
    }
    const newline = bytes.indexOf(0x0a);
    let header: HookRequestHeader | undefined;
    try {
      header = JSON.parse(bytes.subarray(0, newline).toString("utf8")) as HookRequestHeader;
    } catch {
      header = undefined;
    }
    if (newline < 0 || header?.protocol !== HOOK_PROTOCOL) {
      answer(to, { declined: "the request is not of this server's protocol" });
      return;
    }
    if (header.reply === "files")
      to.files = {
        stdout: join(paths.dir, stdoutFile(id)),
        stderr: join(paths.dir, stderrFile(id)),
      };
    const staleReason = closing ? "the daemon is stopping" : (options.stale?.() ?? null);
    if (staleReason !== null) {
      answer(to, { declined: staleReason });
      if (!closing) options.onStale?.(staleReason);
      return;
    }
    lastRequestAt = Date.now();
    const runId = nextId++;
    const timeoutMs = options.hookTimeoutMs ?? HOOK_RUN_LIMIT_MS;
    const event = header.event;
    const timer = setTimeout(() => {
      log(`timewarp hooks: a ${event} hook ran past ${timeoutMs} ms; restarting the worker`);
      dropWorker(`the hook ran past ${timeoutMs} ms and was abandoned`);
    }, timeoutMs);
    pending.set(runId, { to, timer, header, claimedAt });
    ensureWorker().postMessage({
      kind: "hook",
      id: runId,
      header,
      input: bytes.subarray(newline + 1).toString("utf8"),
    } satisfies HookWorkerRequest);
  };

  const startedAt = new Date().toISOString();
  /** The record clients look for (written last at start: from then on requests are taken). */
  function publish(): void {
    const record: HookServerRecord = {
      protocol: HOOK_PROTOCOL,
      pid: process.pid,
      started_at: startedAt,
      served,
      timings: Object.fromEntries(
        [...timings].map(([event, t]) => [event, summarize(t.count, t.recent)]),
      ),
    };
    try {
      // One line, protocol then pid first: the shell client reads them without a JSON parser.
      writeFileAtomic(paths.record, `${JSON.stringify(record)}\n`, { durable: false });
    } catch (error) {
      log(`timewarp hooks: cannot write ${paths.record}: ${String(error)}`);
    }
  }

  const sweepLeftovers = (): void => {
    const old = Date.now() - LEFTOVER_MS;
    for (const name of readdirSync(paths.dir)) {
      if (join(paths.dir, name) === paths.record || name.startsWith("req-")) continue;
      try {
        if (statSync(join(paths.dir, name)).mtimeMs < old) rmSync(join(paths.dir, name));
      } catch {
        // collected meanwhile
      }
    }
  };

  const watcher: FSWatcher = watch(paths.dir, { persistent: false }, (_type, name) => {
    const id = name === null ? null : requestId(name);
    if (id !== null) take(id);
  });
  watcher.on("error", (error) => log(`timewarp hooks: watcher error: ${String(error)}`));
  const sweeper = setInterval(sweepLeftovers, 60_000);
  sweeper.unref();
  const staleCheck = setInterval(() => {
    const why = closing ? null : (options.stale?.() ?? null);
    if (why !== null) options.onStale?.(why);
  }, options.staleCheckMs ?? 5_000);
  staleCheck.unref();
  ensureWorker();
  publish();

  return {
    lastRequestAt: () => lastRequestAt,
    served: () => served,
    close: () => {
      if (closing) return;
      closing = true;
      rmSync(paths.record, { force: true });
      watcher.close();
      clearInterval(sweeper);
      clearInterval(staleCheck);
      // Requests that came in meanwhile are declined (their clients run them), not left to wait.
      for (const name of readdirSync(paths.dir)) {
        const id = requestId(name);
        if (id !== null) take(id);
      }
      dropWorker("the daemon stopped before this hook finished");
    },
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

/** A failure in the hook's own answer form (`--json` or the agent's), which never blocks. */
function failedAnswer(header: HookRequestHeader, message: string): HookAnswer {
  const event = isHookEvent(header.event) ? header.event : "pre-tool-use";
  return formatHookResponse(
    { kind: "failed", summary: "internal failure", message },
    { agent: "claude-code", event, json: header.json === true },
  );
}
