import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { type MessagePort, Worker } from "node:worker_threads";
import { ErrorCode, TimewarpError } from "../core/index.ts";
import { hookServerPaths } from "./hook-protocol.ts";
import { type HookServer, serveHooks } from "./hook-server.ts";
import { type HookWorkerOptions, runHookWorker } from "./hook-worker.ts";

/**
 * The watch daemon as `timewarp watch run` assembles it: the store's file watcher
 * (`runWatchDaemon`) plus, in the same process, the hook server (hook-server.ts) and its worker
 * thread (hook-worker.ts), which answer `timewarp hook …` calls without starting a CLI each time.
 * See README.md for the whole hook path.
 */

/**
 * The command line that runs `timewarp watch run` for `root` with the same Node, loader flags
 * (tsx in development) and entry script as this process: the daemon is this CLI, detached.
 */
export function watchRunCommand(root: string): string[] {
  const [node, ...rest] = thisCli();
  return [node as string, ...DAEMON_V8_FLAGS, ...rest, "watch", "run", "-C", root];
}

/**
 * V8's young generation kept small in the daemon, its worker included (the flag is the
 * process's): by default each heap's semi-spaces grow to 16 MiB, and a long-lived process keeps
 * what they grew to. At 100k files: warm 141 → 109–112 MiB; over 25 served commands (status,
 * snapshots, diff, travel, return) the peak 166–175 → 131–134 MiB, the daemon's CPU for them
 * within noise. (`--optimize-for-size` took the peak to 120 MiB for up to 20% more CPU: not
 * taken.)
 */
const DAEMON_V8_FLAGS = ["--max-semi-space-size=1"];

/**
 * This CLI: the same Node, loader flags (tsx in development) and entry script as this process;
 * not the daemon's own V8 flags (its prime walks the tree: a small young generation there
 * would only cost time).
 */
function thisCli(): string[] {
  const flags = process.execArgv.filter((f) => !DAEMON_V8_FLAGS.includes(f));
  // absolute: a daemon starts in the workspace, not where this process was started
  return [process.execPath, ...flags, resolve(process.argv[1] as string)];
}

/**
 * Run `timewarp watch prime` for `root` in a child (this CLI, as `watchRunCommand`): it walks
 * the tree once and leaves the snapshots' stat cache and the shell hooks' view at this daemon's
 * token, so that no command or shell hook the worker serves scans the whole tree (issue 22,
 * item 5: such a scan in the worker left the daemon at 158–170 MiB at 100k files; the child's
 * memory goes when it exits). Its JSON answer goes to the log. A prime that fails or is skipped
 * changes nothing: the first scan walks, as it would without one.
 */
function startPrime(root: string, log: (line: string) => void): ChildProcess {
  const [exe, ...args] = thisCli();
  const child = spawn(exe as string, [...args, "watch", "prime", "--json", "-C", root], {
    cwd: root,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout?.setEncoding("utf8").on("data", (s: string) => {
    out += s;
  });
  child.stderr?.setEncoding("utf8").on("data", (s: string) => {
    out += s;
  });
  child.on("error", (error) => log(`timewarp watch: prime not started (${String(error)})`));
  child.on("exit", (code, signal) => {
    const said = out.trim().replace(/\s*\n\s*/g, " ");
    log(`timewarp watch: prime pid ${child.pid} ended (${signal ?? `exit ${code}`}): ${said}`);
  });
  return child;
}

/** What `workerData` says in the hook server's worker (see `runHookWorkerThread`). */
const HOOK_WORKER = "timewarp-hook-worker";

interface HookWorkerData {
  timewarp: typeof HOOK_WORKER;
  /** The daemon's `watchRunCommand`, for hooks that (re)start a daemon. */
  watchCommand: string[];
}

/**
 * Start the hook server's worker: the CLI's own entry (src/cli/entry.ts), in a thread, told by
 * `workerData` to run hooks. In the bundle (dist/bin/timewarp.cjs) that is the bundle, run by
 * the bin beside it (`hookWorkerScript`); from the sources (tsx), the worker registers tsx
 * first, since a thread does not inherit a loader.
 */
function startHookWorker(root: string): Worker {
  const self = fileURLToPath(import.meta.url);
  const workerData: HookWorkerData = { timewarp: HOOK_WORKER, watchCommand: watchRunCommand(root) };
  if (self.endsWith(".cjs")) return new Worker(hookWorkerScript(self), { workerData });
  if (self.endsWith(".js"))
    return new Worker(join(dirname(self), "..", "cli", "entry.js"), { workerData });
  // The ES-module build of tsx's API (require.resolve names the CommonJS one, which a thread's
  // import cannot use); import.meta.resolve would do, but the bundle has no import.meta.
  const tsxCjs = createRequire(import.meta.url).resolve("tsx/esm/api");
  const tsx = pathToFileURL(tsxCjs.replace(/\.cjs$/, ".mjs")).href;
  const entry = pathToFileURL(join(dirname(self), "..", "cli", "entry.ts")).href;
  return new Worker(
    `import(${JSON.stringify(tsx)}).then((m) => { m.register(); return import(${JSON.stringify(entry)}); });`,
    { eval: true, workerData },
  );
}

/**
 * The script a worker of the bundle `bundle` runs: the package's bin (`bin/timewarp.cjs`, two
 * folders up), which runs the bundle through V8's code cache as it does for every command, so
 * the worker does not compile the 2.4 MiB bundle again: at 10k files the daemon's first travel
 * took 66–81 ms instead of 96–99, and its start peaked 5 MiB lower. The bundle itself when the
 * bin is not there (a bundle copied elsewhere).
 */
export function hookWorkerScript(bundle: string): string {
  const bin = join(dirname(bundle), "..", "..", "bin", "timewarp.cjs");
  return existsSync(bin) ? bin : bundle;
}

/**
 * The CLI entry's branch for a worker thread that carries a `timewarp` tag in its `workerData`:
 * run the hook worker when the tag is the hook server's. Throws INTERNAL on any other tag.
 */
export function runHookWorkerThread(
  port: MessagePort,
  data: { timewarp?: unknown },
  commands: Pick<HookWorkerOptions, "runCommand" | "warmCommands"> = {},
): void {
  if (data.timewarp !== HOOK_WORKER) {
    throw new TimewarpError(
      ErrorCode.INTERNAL,
      `unknown timewarp worker ${JSON.stringify(data.timewarp)}`,
    );
  }
  const { watchCommand } = data as HookWorkerData;
  runHookWorker(port, { watchCommand: () => watchCommand ?? [], ...commands });
}

/**
 * Why the code this process runs is no longer the code on disk (an upgrade or a rebuild
 * replaced it), or null: a long-lived daemon must not serve hooks with yesterday's code.
 */
function codeChangedSince(): () => string | null {
  const self = fileURLToPath(import.meta.url);
  const identity = (): string => {
    try {
      const st = statSync(self);
      return `${st.size}:${st.mtimeMs}`;
    } catch {
      return "gone";
    }
  };
  const atStart = identity();
  return () => (identity() === atStart ? null : `the timewarp code on disk changed (${self})`);
}

export interface HookDaemonOptions {
  root: string;
  /** Stop after this long without a scan or a hook asking. */
  idleMs: number;
  /** The daemon's log (its stderr). */
  log: (line: string) => void;
}

/**
 * Run the watch daemon for `root` in this process until it stops (idle, stale code, signal,
 * another daemon); resolves with why. It serves hooks too unless TIMEWARP_HOOK_SERVER=0 or the
 * server cannot start, in which case hooks fall back to starting the CLI. Throws LOCKED when
 * another daemon owns the workspace.
 */
export async function runHookDaemon(options: HookDaemonOptions): Promise<string> {
  const { root, log } = options;
  const { runWatchDaemon } = await import("../store/index.ts");
  const stop = new AbortController();
  let hooks: HookServer | undefined;
  let stopped = false;
  let prime: ChildProcess | undefined;
  // The daemon takes its lock before returning (LOCKED otherwise): from here on this
  // process owns .timewarp/watch/, the hook socket included.
  const daemon = runWatchDaemon(root, {
    idleMs: options.idleMs,
    signal: stop.signal,
    log,
    lastActivity: () => hooks?.lastRequestAt() ?? 0,
    onWatching: () => {
      if (process.env.TIMEWARP_WATCH_PRIME !== "0") prime = startPrime(root, log);
    },
    // (a write command the worker runs answers first: the lock stays held till then)
    beforeStop: () => {
      stopped = true;
      // (its token dies with this daemon; killed mid-walk it leaves the cache as it was)
      if (prime?.exitCode === null && prime.signalCode === null) prime.kill("SIGTERM");
      return hooks?.close();
    },
  });
  if (!stopped && process.env.TIMEWARP_HOOK_SERVER !== "0") {
    try {
      hooks = serveHooks({
        root,
        startWorker: () => startHookWorker(root),
        stale: codeChangedSince(),
        onStale: (why) => stop.abort(why),
        // While the prime walks, a command or shell hook would scan the whole tree in the
        // worker too (nothing is at this daemon's token yet): its client runs it, and pays that
        // in its own process.
        declining: () =>
          prime !== undefined && prime.exitCode === null && prime.signalCode === null
            ? "the watch daemon is still priming its stat cache"
            : null,
        log,
      });
      log(`timewarp hooks: serving hooks (${hookServerPaths(root).dir})`);
    } catch (error) {
      log(`timewarp hooks: not serving hooks (${String(error)}); hooks start the CLI`);
    }
  }
  return daemon;
}
