import type { Worker } from "node:worker_threads";
import { clearLockOfThread, workspacePaths } from "../core/index.ts";
import { isHookEvent } from "./hook-events.ts";
import { formatHookResponse } from "./hook-outcome.ts";
import type { HookAnswer, HookReply, HookRequestHeader } from "./hook-protocol.ts";
import { type ReplyTo, writeHookReply } from "./hook-request.ts";
import type { HookWorkerReply, HookWorkerRequest } from "./hook-worker.ts";

export interface HookRunnerOptions {
  root: string;
  /** Start the thread that runs hooks (`runHookWorker`). */
  startWorker: () => Worker;
  /** A hook running longer than this is abandoned and its worker replaced. */
  hookTimeoutMs: number;
  log: (line: string) => void;
  /** Called after a hook's answer was written, with its claim-to-reply time. */
  onAnswered: (header: HookRequestHeader, ms: number) => void;
}

/** The one worker thread that runs hooks, and the hooks it was given and has not answered. */
export interface HookRunner {
  /** Start the worker (and have it load the hook code) unless it runs. */
  warm(): void;
  /** Whether a hook or command was given to the worker and not yet answered. */
  busy(): boolean;
  /** Whether the worker runs a write command it started (stopping it would cut it short). */
  writing(): boolean;
  /** Run a hook; its answer goes to `to`. */
  run(request: { to: ReplyTo; header: HookRequestHeader; input: string; claimedAt: number }): void;
  /** Answer every hook not yet answered with `why`, and stop the worker. */
  stop(why: string): void;
}

/** A failure in the hook's own answer form (`--json` or the agent's), which never blocks. */
function failedAnswer(header: HookRequestHeader, message: string): HookAnswer {
  const event = isHookEvent(header.event) ? header.event : "pre-tool-use";
  return formatHookResponse(
    { kind: "failed", summary: "internal failure", message },
    { agent: "claude-code", event, json: header.json === true },
  );
}

/** A hook or command given to the worker and not yet answered. */
interface Pending {
  to: ReplyTo;
  /** The run limit (none for a write command). */
  timer: NodeJS.Timeout | undefined;
  header: HookRequestHeader;
  claimedAt: number;
  /** A write command the worker said it started. */
  started: boolean;
}

/** The answer to a request the worker will not answer (see `failAll`). */
function lostReply(p: Pending, why: string, workerReady: boolean): HookReply {
  if (p.header.command === undefined)
    return workerReady ? failedAnswer(p.header, why) : { declined: why };
  return p.header.live === true && p.started ? { interrupted: why } : { declined: why };
}

export function createHookRunner(options: HookRunnerOptions): HookRunner {
  const { log } = options;
  let nextId = 1;
  let worker: Worker | null = null;
  /** The worker loaded the hook code: from then on a request it was given may have started. */
  let workerReady = false;
  const pending = new Map<number, Pending>();

  /**
   * Answer every queued hook: declined while the worker never loaded (nothing of them ran, so
   * their clients run them), else as failed (one may have run in part; a hook never runs twice).
   * A read-only command is declined either way (its client runs it); a write command is declined
   * only if it never started, else reported interrupted: it must not run twice either.
   */
  const failAll = (why: string): void => {
    for (const [id, p] of pending) {
      if (p.timer !== undefined) clearTimeout(p.timer);
      pending.delete(id);
      writeHookReply(p.to, lostReply(p, why, workerReady), log);
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
  const onMessage = (message: HookWorkerReply): void => {
    if (message.kind === "ready") {
      workerReady = true;
      return;
    }
    const p = pending.get(message.id);
    if (p === undefined) return;
    if (message.kind === "started") {
      p.started = true;
      return;
    }
    if (p.timer !== undefined) clearTimeout(p.timer);
    pending.delete(message.id);
    writeHookReply(p.to, message.reply, log);
    if ("exitCode" in message.reply) options.onAnswered(p.header, performance.now() - p.claimedAt);
  };
  const ensureWorker = (): Worker => {
    if (worker !== null) return worker;
    const w = options.startWorker();
    const thread = w.threadId;
    worker = w;
    workerReady = false;
    w.on("message", onMessage);
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

  return {
    warm: () => void ensureWorker(),
    busy: () => pending.size > 0,
    writing: () => [...pending.values()].some((p) => p.header.live === true && p.started),
    run({ to, header, input, claimedAt }) {
      const runId = nextId++;
      const timeoutMs = options.hookTimeoutMs;
      // A write command has no limit, as in its own process: abandoning it would cut a restore
      // short for `recover` to mend, where letting it end leaves the workspace whole.
      const timer =
        header.live === true
          ? undefined
          : setTimeout(() => {
              log(
                `timewarp hooks: a ${header.event} hook ran past ${timeoutMs} ms; restarting the worker`,
              );
              dropWorker(`the hook ran past ${timeoutMs} ms and was abandoned`);
            }, timeoutMs);
      pending.set(runId, { to, timer, header, claimedAt, started: false });
      const stderrFile = header.live === true ? to.files?.stderr : undefined;
      ensureWorker().postMessage({
        kind: "hook",
        id: runId,
        header,
        input,
        ...(stderrFile !== undefined ? { stderrFile } : {}),
      } satisfies HookWorkerRequest);
    },
    stop: dropWorker,
  };
}
