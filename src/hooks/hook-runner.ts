import type { Worker } from "node:worker_threads";
import { clearLockOfThread, workspacePaths } from "../core/index.ts";
import { isHookEvent } from "./hook-events.ts";
import { formatHookResponse } from "./hook-outcome.ts";
import type { HookAnswer, HookRequestHeader } from "./hook-protocol.ts";
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

export function createHookRunner(options: HookRunnerOptions): HookRunner {
  const { log } = options;
  let nextId = 1;
  let worker: Worker | null = null;
  /** The worker loaded the hook code: from then on a request it was given may have started. */
  let workerReady = false;
  const pending = new Map<
    number,
    { to: ReplyTo; timer: NodeJS.Timeout; header: HookRequestHeader; claimedAt: number }
  >();

  /**
   * Answer every queued hook: declined while the worker never loaded (nothing of them ran, so
   * their clients run them), else as failed (one may have run in part; a hook never runs twice).
   * Commands are declined either way.
   */
  const failAll = (why: string): void => {
    for (const [id, p] of pending) {
      clearTimeout(p.timer);
      pending.delete(id);
      // A read-only command (all the server runs) may run again: its client runs it itself.
      const rerun = !workerReady || p.header.command !== undefined;
      writeHookReply(p.to, rerun ? { declined: why } : failedAnswer(p.header, why), log);
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
    clearTimeout(p.timer);
    pending.delete(message.id);
    writeHookReply(p.to, message.reply, log);
    if (message.reply.declined === undefined)
      options.onAnswered(p.header, performance.now() - p.claimedAt);
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
    run({ to, header, input, claimedAt }) {
      const runId = nextId++;
      const timeoutMs = options.hookTimeoutMs;
      const timer = setTimeout(() => {
        log(
          `timewarp hooks: a ${header.event} hook ran past ${timeoutMs} ms; restarting the worker`,
        );
        dropWorker(`the hook ran past ${timeoutMs} ms and was abandoned`);
      }, timeoutMs);
      pending.set(runId, { to, timer, header, claimedAt });
      ensureWorker().postMessage({
        kind: "hook",
        id: runId,
        header,
        input,
      } satisfies HookWorkerRequest);
    },
    stop: dropWorker,
  };
}
