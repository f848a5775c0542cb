import type { Worker } from "node:worker_threads";
import { clearLockOfThread, faultPoint, workspacePaths } from "../core/index.ts";
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
  /**
   * Called with a hook's claim-to-reply time just before its answer is written: a client that
   * has its answer finds it counted in the server's record (`watch status`).
   */
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
  /**
   * Stop gracefully: a write command the worker started runs on to its answer (and so does what
   * was queued with it), for at most `waitMs`; then `stop(why)`, which reports a command still
   * running `interrupted` (its client says COMMAND_LOST). Without a write command running, at once.
   */
  finish(why: string, waitMs: number): Promise<void>;
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

/** The requests given to the worker and not yet answered, and how each gets its answer. */
function createPendingTable(options: Pick<HookRunnerOptions, "log" | "onAnswered">) {
  const pending = new Map<number, Pending>();
  let onEmpty: (() => void)[] = [];
  const take = (id: number): Pending | undefined => {
    const p = pending.get(id);
    if (p === undefined) return undefined;
    if (p.timer !== undefined) clearTimeout(p.timer);
    pending.delete(id);
    if (pending.size === 0) for (const done of onEmpty.splice(0)) done();
    return p;
  };
  return {
    add: (id: number, p: Pending) => void pending.set(id, p),
    started(id: number): void {
      const p = pending.get(id);
      if (p !== undefined) p.started = true;
    },
    answer(id: number, reply: HookReply): void {
      const p = take(id);
      if (p === undefined) return;
      if ("exitCode" in reply) options.onAnswered(p.header, performance.now() - p.claimedAt);
      faultPoint("hooks:answering");
      writeHookReply(p.to, reply, options.log);
    },
    /**
     * Answer every queued hook: declined while the worker never loaded (nothing of them ran, so
     * their clients run them), else as failed (one may have run in part; a hook never runs
     * twice). A read-only command is declined either way (its client runs it); a write command
     * is declined only if it never started, else reported interrupted: it must not run twice.
     */
    failAll(why: string, workerReady: boolean): void {
      for (const [id, p] of [...pending]) {
        take(id);
        writeHookReply(p.to, lostReply(p, why, workerReady), options.log);
      }
    },
    busy: () => pending.size > 0,
    writing: () => [...pending.values()].some((p) => p.header.live === true && p.started),
    /** Resolves once nothing is pending. */
    empty: () => new Promise<void>((done) => (pending.size === 0 ? done() : onEmpty.push(done))),
    forgetWaiters: () => {
      onEmpty = [];
    },
  };
}

/**
 * The locks a worker stopped from outside (a hook past its time, a crash, the daemon's stop,
 * which can come during a session start's cleanup) may still hold: they name this live process,
 * so nobody else would take them over until it exits.
 */
async function releaseLocksOf(
  root: string,
  thread: number,
  log: (line: string) => void,
): Promise<void> {
  const { ledgerPaths } = await import("../ledger/index.ts");
  for (const path of [workspacePaths(root).lock, ledgerPaths(root).lock]) {
    try {
      if (clearLockOfThread(path, thread))
        log(`timewarp hooks: released ${path}, held by a stopped worker`);
    } catch (error) {
      log(`timewarp hooks: cannot release ${path}: ${String(error)}`);
    }
  }
}

/** The worker thread, started on demand, and what it says back. */
function createWorkerSlot(options: {
  runner: HookRunnerOptions;
  onMessage: (message: HookWorkerReply) => void;
  /** The worker failed or exited while it was the current one. */
  onLost: (why: string) => void;
}) {
  const { runner: o } = options;
  let worker: Worker | null = null;
  /** The worker loaded the hook code: from then on a request it was given may have started. */
  let ready = false;
  const start = (): Worker => {
    const w = o.startWorker();
    const thread = w.threadId;
    worker = w;
    ready = false;
    w.on("message", (message: HookWorkerReply) => {
      if (message.kind === "ready") ready = true;
      else options.onMessage(message);
    });
    w.on("error", (error) => {
      o.log(`timewarp hooks: the worker failed: ${error.message}`);
      if (worker === w) options.onLost(`the hook worker failed: ${error.message}`);
    });
    w.on("exit", (code) => {
      if (worker === w) options.onLost(`the hook worker exited (code ${code})`);
      void releaseLocksOf(o.root, thread, o.log);
    });
    w.unref();
    w.postMessage({ kind: "warm" } satisfies HookWorkerRequest);
    return w;
  };
  return {
    get: (): Worker => worker ?? start(),
    ready: () => ready,
    /** Keep this process up while the worker runs (a stopping daemon has nothing else). */
    hold: () => worker?.ref(),
    /** Forget the worker (the caller answers its requests) and stop it. */
    drop(): void {
      const w = worker;
      worker = null;
      if (w !== null) void w.terminate();
    },
  };
}

/** Whether `until` settles within `ms` (the timer holds the process up meanwhile). */
async function settlesWithin(until: Promise<void>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<boolean>((done) => {
    timer = setTimeout(() => done(false), ms);
  });
  try {
    return await Promise.race([until.then(() => true), late]);
  } finally {
    clearTimeout(timer);
  }
}

export function createHookRunner(options: HookRunnerOptions): HookRunner {
  const { log } = options;
  let nextId = 1;
  const table = createPendingTable(options);
  const dropWorker = (why: string): void => {
    slot.drop();
    table.failAll(why, slot.ready());
  };
  const slot = createWorkerSlot({
    runner: options,
    onMessage: (message) => {
      if (message.kind === "started") table.started(message.id);
      else if (message.kind === "reply") table.answer(message.id, message.reply);
    },
    onLost: dropWorker,
  });
  /** A hook's run limit; a write command has none, as in its own process. */
  const limit = (header: HookRequestHeader): NodeJS.Timeout | undefined => {
    // (abandoning a write command would cut a restore short for `recover` to mend, where
    // letting it end leaves the workspace whole)
    if (header.live === true) return undefined;
    const ms = options.hookTimeoutMs;
    return setTimeout(() => {
      log(`timewarp hooks: a ${header.event} hook ran past ${ms} ms; restarting the worker`);
      dropWorker(`the hook ran past ${ms} ms and was abandoned`);
    }, ms);
  };

  return {
    warm: () => void slot.get(),
    busy: table.busy,
    writing: table.writing,
    run({ to, header, input, claimedAt }) {
      const runId = nextId++;
      table.add(runId, { to, timer: limit(header), header, claimedAt, started: false });
      const stderrFile = header.live === true ? to.files?.stderr : undefined;
      slot.get().postMessage({
        kind: "hook",
        id: runId,
        header,
        input,
        ...(stderrFile !== undefined ? { stderrFile } : {}),
      } satisfies HookWorkerRequest);
    },
    stop: dropWorker,
    async finish(why, waitMs) {
      if (table.writing()) {
        slot.hold();
        log("timewarp hooks: stopping once the write command the worker runs has answered");
        if (!(await settlesWithin(table.empty(), waitMs))) {
          table.forgetWaiters();
          why = `${why}: the command ran past the ${waitMs} ms a stop waits for it`;
          log(`timewarp hooks: ${why}`);
        }
      }
      dropWorker(why);
    },
  };
}
