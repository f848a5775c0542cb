import { statSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { Worker } from "node:worker_threads";
import type { Command } from "commander";
import { ErrorCode, TimewarpError } from "../../core/index.ts";
import { style } from "../output.ts";
import { action } from "../run.ts";

/**
 * The command line that runs `timewarp watch run` for `root` with the same Node, loader flags
 * (tsx in development) and entry script as this process: the daemon is this CLI, detached.
 */
export function watchRunCommand(root: string): string[] {
  return [
    process.execPath,
    ...process.execArgv,
    // absolute: the daemon starts in the workspace, not where this process was started
    resolve(process.argv[1] as string),
    "watch",
    "run",
    "-C",
    root,
  ];
}

/** What `workerData` says in the hook server's worker (see entry.ts). */
export const HOOK_WORKER = "timewarp-hook-worker";

/**
 * Start the hook server's worker: this CLI's own entry, in a thread, told by `workerData` to
 * run hooks. In the bundle (dist/bin/timewarp.cjs) that is the bundle itself; from the sources
 * (tsx), the worker registers tsx first, since a thread does not inherit a loader.
 */
function startHookWorker(root: string): Worker {
  const self = fileURLToPath(import.meta.url);
  const workerData = { timewarp: HOOK_WORKER, watchCommand: watchRunCommand(root) };
  if (self.endsWith(".cjs")) return new Worker(self, { workerData });
  if (self.endsWith(".js"))
    return new Worker(join(dirname(self), "..", "entry.js"), { workerData });
  // The ES-module build of tsx's API (require.resolve names the CommonJS one, which a thread's
  // import cannot use); import.meta.resolve would do, but the bundle has no import.meta.
  const tsxCjs = createRequire(import.meta.url).resolve("tsx/esm/api");
  const tsx = pathToFileURL(tsxCjs.replace(/\.cjs$/, ".mjs")).href;
  const entry = pathToFileURL(join(dirname(self), "..", "entry.ts")).href;
  return new Worker(
    `import(${JSON.stringify(tsx)}).then((m) => { m.register(); return import(${JSON.stringify(entry)}); });`,
    { eval: true, workerData },
  );
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

/** `timewarp watch start | stop | status | run`: the file watcher that spares scans their walk. */
export function registerWatchCommands(program: Command): void {
  const watch = program
    .command("watch")
    .description(
      "the workspace's file watcher: scans visit only what it saw change instead of walking the tree",
    );
  watch
    .command("start")
    .description("start the watch daemon in the background (the session-start hook does this)")
    .action(
      action(async (ctx) => {
        const { startWatchDaemon, watchPaths } = await import("../../store/index.ts");
        const r = startWatchDaemon(ctx.root, { command: watchRunCommand(ctx.root), wait: true });
        const running = r.pid !== null && (r.started || r.reason === "already running");
        return {
          json: {
            running,
            started: r.started,
            pid: r.pid,
            ...(r.reason ? { reason: r.reason } : {}),
          },
          human: running
            ? `${r.started ? "started" : "already running:"} watch daemon pid ${r.pid} (log ${watchPaths(ctx.root).log})`
            : style.yellow(`watch daemon not running: ${r.reason ?? "unknown"}`),
        };
      }),
    );
  watch
    .command("stop")
    .description("stop the watch daemon (scans walk the tree again)")
    .action(
      action(async (ctx) => {
        const { stopWatchDaemon } = await import("../../store/index.ts");
        const stopped = stopWatchDaemon(ctx.root);
        return {
          json: { stopped },
          human: stopped ? "watch daemon stopped" : "no watch daemon was running",
        };
      }),
    );
  watch
    .command("status")
    .description("is a watch daemon running, since when, over how many directories")
    .action(
      action(async (ctx) => {
        const { runningWatchDaemon, watchPaths } = await import("../../store/index.ts");
        const { readHookServer } = await import("../../hooks/index.ts");
        const info = runningWatchDaemon(ctx.root);
        const hooks = info === null ? null : readHookServer(ctx.root);
        const wp = watchPaths(ctx.root);
        let journalBytes: number | null = null;
        if (info !== null) {
          try {
            journalBytes = statSync(join(wp.dir, info.journal)).size;
          } catch {
            journalBytes = null;
          }
        }
        return {
          json: {
            running: info !== null,
            pid: info?.pid ?? null,
            started_at: info?.started_at ?? null,
            directories: info?.directories ?? null,
            journal_bytes: journalBytes,
            hooks:
              hooks === null
                ? null
                : { served: hooks.served, since: hooks.started_at, timings: hooks.timings ?? {} },
            log: wp.log,
          },
          human:
            info === null
              ? `no watch daemon (scans walk the tree); start one with ${style.bold("timewarp watch start")}`
              : [
                  `watch daemon pid ${info.pid} since ${info.started_at}, ${info.directories} directories, journal ${journalBytes ?? "?"} bytes; ${hooks === null ? "not serving hooks" : `serving hooks (${hooks.served} answered)`}`,
                  ...Object.entries(hooks?.timings ?? {}).map(
                    ([event, t]) =>
                      `  ${event}: ${t.count} answered, ${t.p50_ms} ms at the median, p95 ${t.p95_ms} ms (in the daemon, from claim to reply)`,
                  ),
                ].join("\n"),
        };
      }),
    );
  watch
    .command("run")
    .description("run the watch daemon in the foreground until stopped (what `start` launches)")
    .option("--idle-minutes <n>", "stop after this long without a scan asking", "120")
    .action(
      action(async (ctx, opts: { idleMinutes: string }) => {
        const minutes = Number(opts.idleMinutes);
        if (!(Number.isFinite(minutes) && minutes > 0)) {
          throw new TimewarpError(
            ErrorCode.INVALID_INPUT,
            `--idle-minutes must be a positive number, got ${JSON.stringify(opts.idleMinutes)}`,
          );
        }
        const { runWatchDaemon } = await import("../../store/index.ts");
        const { hookServerPaths, serveHooks } = await import("../../hooks/index.ts");
        type HookServer = ReturnType<typeof serveHooks>;
        const log = (line: string) => process.stderr.write(`${line}\n`);
        const stop = new AbortController();
        let hooks: HookServer | undefined;
        let stopped = false;
        // The daemon takes its lock before returning (LOCKED otherwise): from here on this
        // process owns .timewarp/watch/, the hook socket included.
        const daemon = runWatchDaemon(ctx.root, {
          idleMs: minutes * 60_000,
          signal: stop.signal,
          log,
          lastActivity: () => hooks?.lastRequestAt() ?? 0,
          beforeStop: () => {
            stopped = true;
            hooks?.close();
          },
        });
        if (!stopped && process.env.TIMEWARP_HOOK_SERVER !== "0") {
          try {
            hooks = serveHooks({
              root: ctx.root,
              startWorker: () => startHookWorker(ctx.root),
              stale: codeChangedSince(),
              onStale: (why) => stop.abort(why),
              log,
            });
            log(`timewarp hooks: serving hooks (${hookServerPaths(ctx.root).dir})`);
          } catch (error) {
            log(`timewarp hooks: not serving hooks (${String(error)}); hooks start the CLI`);
          }
        }
        const reason = await daemon;
        return { json: { stopped: reason }, human: `watch daemon stopped: ${reason}` };
      }),
    );
}
