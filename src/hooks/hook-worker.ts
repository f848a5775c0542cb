import type { MessagePort } from "node:worker_threads";
import { systemClock, systemRandom } from "../core/index.ts";
import type { HookAnswer, HookReply, HookRequestHeader } from "./hook-protocol.ts";
import { runHook } from "./run-hook.ts";
import { type CommandRunner, createIdleCollector, runServedCommand } from "./served-command-run.ts";

export type { CommandRunner } from "./served-command-run.ts";

/**
 * The hook server's message to its worker: one hook call (or command; a write command's live
 * stderr goes to `stderrFile`), or a warm-up.
 */
export type HookWorkerRequest =
  | { kind: "hook"; id: number; header: HookRequestHeader; input: string; stderrFile?: string }
  | { kind: "warm" };

/**
 * A hook's answer; `started` when a write command begins (from then on it is never declined);
 * `ready` once the worker has loaded the hook code (after a warm-up).
 */
export type HookWorkerReply =
  | { kind: "reply"; id: number; reply: HookReply }
  | { kind: "started"; id: number }
  | { kind: "ready" };

export interface HookWorkerOptions {
  watchCommand?: (root: string) => string[];
  /** Runs the requests that carry a `command`; without it they are declined. */
  runCommand?: CommandRunner;
  /** Loads what the commands load, with the hook code's warm-up. */
  warmCommands?: () => Promise<void>;
}

/**
 * The hook server's worker thread: runs each hook call as its own process would, one at a time.
 *
 * - **A thread, not the daemon's own loop.** A shell hook asks the watch daemon what changed and
 *   waits synchronously for its answer; run on the daemon's thread it would wait on itself.
 * - **One at a time.** Each call replaces the thread's environment (below), and the workspace
 *   lock is taken synchronously: two hooks interleaved in one thread would each see the other's
 *   lock as live. (The ledger lock queues its callers in memory and waits with timers, never
 *   blocking this thread's loop: see `withLock` in core.)
 * - **The client's environment.** A worker's `process.env` is its own copy; each call replaces
 *   it with the client's, so everything a hook reads (`CLAUDE_PROJECT_DIR`, the PATH whose
 *   node/python/go the session fingerprint records, TIMEWARP_* settings) is the caller's. The
 *   working directory cannot change in a thread and is passed to `runHook` instead.
 * - **Commands too.** A request with a `command` (from bin/timewarp) runs through `runCommand`
 *   in the same queue, under the client's environment; the runner stands in the client's
 *   working directory and terminals for the command's length.
 */
export function runHookWorker(port: MessagePort, options: HookWorkerOptions = {}): void {
  let queue: Promise<void> = Promise.resolve();
  // (the heap a write command grew is collected once the worker is idle: served-command-run.ts)
  const collector = createIdleCollector();
  port.on("message", (message: HookWorkerRequest) => {
    if (message.kind === "warm") {
      queue = queue.then(async () => {
        await warm();
        // (a command that fails to load later says why itself; hooks must not wait on it)
        await options.warmCommands?.().catch(() => {});
        port.postMessage({ kind: "ready" } satisfies HookWorkerReply);
      });
      return;
    }
    collector.begin();
    queue = queue.then(async () => {
      const { reply, after } =
        message.header.command !== undefined
          ? await runCommandRequest(message, options.runCommand, port)
          : await runOne(message, options.watchCommand);
      port.postMessage({ kind: "reply", id: message.id, reply } satisfies HookWorkerReply);
      // What the answer need not wait for (a session start's cleanup) runs once it is out; the
      // next hook waits for it in the queue, as it must for the workspace lock anyway.
      await after?.();
      // Nothing a request read stays resident until the next one (issue 22, item 5): the
      // manifest texts and the packs' object caches (the manifest nodes' caches stay: a delta
      // snapshot reads the same groups each time).
      const store = await import("../store/index.ts");
      store.forgetManifestTexts();
      store.forgetPackBases();
    });
    const done = () => collector.end(message.header.live === true);
    void queue.then(done, done);
  });
}

/** This thread's environment made the client's (a worker's `process.env` is its own copy). */
function takeEnvironment(env: Record<string, string>): void {
  for (const key of Object.keys(process.env)) if (!(key in env)) delete process.env[key];
  Object.assign(process.env, env);
}

/** A CLI command for `bin/timewarp`, under the client's environment (served-command-run.ts). */
async function runCommandRequest(
  message: Extract<HookWorkerRequest, { kind: "hook" }>,
  runCommand: CommandRunner | undefined,
  port: MessagePort,
): Promise<{ reply: HookReply; after?: undefined }> {
  takeEnvironment(message.header.env);
  const reply = await runServedCommand({
    header: message.header,
    stderrFile: message.stderrFile,
    runCommand,
    started: () => port.postMessage({ kind: "started", id: message.id } satisfies HookWorkerReply),
  });
  return { reply };
}

async function runOne(
  request: Extract<HookWorkerRequest, { kind: "hook" }>,
  watchCommand: ((root: string) => string[]) | undefined,
): Promise<{ reply: HookAnswer; after?: () => Promise<void> }> {
  const { header } = request;
  takeEnvironment(header.env);
  try {
    const run = await runHook({
      event: header.event,
      input: request.input,
      ...(header.root !== undefined ? { root: header.root } : {}),
      cwd: header.cwd,
      ...(header.agent !== undefined ? { agent: header.agent } : {}),
      json: header.json === true,
      // the client's parent, never this daemon's (a detached daemon's parent is init)
      callerPid: typeof header.ppid === "number" && header.ppid > 1 ? header.ppid : null,
      deferAfterAnswer: true,
      clock: systemClock,
      random: systemRandom,
      ...(watchCommand !== undefined ? { watchCommand } : {}),
    });
    const reply = { stdout: run.stdout, stderr: run.stderr, exitCode: run.exitCode };
    return run.after === undefined ? { reply } : { reply, after: run.after };
  } catch (error) {
    // runHook answers its own failures; reaching here is a bug, and still must not block.
    const message = error instanceof Error ? error.message : String(error);
    return { reply: { stdout: "", stderr: `timewarp hook: ${message}\n`, exitCode: 0 } };
  }
}

/** Load what every event's handler loads, so the first hook after a start is not the slow one. */
async function warm(): Promise<void> {
  await Promise.all([
    import("./on-session-start.ts"),
    import("./on-pre-tool-use.ts"),
    import("./on-post-tool-use.ts"),
    import("./on-session-end.ts"),
    import("./on-user-prompt.ts"),
    import("./shell-scan.ts"),
    import("./goal-guard.ts"),
    import("../timemachine/index.ts"),
    import("../ledger/index.ts"),
    import("../store/index.ts"),
    import("../memory/index.ts"),
  ]);
  // The prompt hook redacts the prompt's first line: secretlint's rules load on first use.
  await (await import("../timemachine/index.ts")).redactSecrets("");
}
