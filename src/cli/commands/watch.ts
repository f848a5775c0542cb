import { statSync } from "node:fs";
import { join } from "node:path";
import type { Command } from "commander";
import { ErrorCode, TimewarpError } from "../../core/index.ts";
import { helpExamples } from "../help-examples.ts";
import { style } from "../output.ts";
import { action } from "../run.ts";

/** `timewarp watch start | stop | status | run`: the file watcher that spares scans their walk. */
export function registerWatchCommands(program: Command): void {
  const watch = program
    .command("watch")
    .addHelpText(
      "after",
      helpExamples([
        "start the watcher, then see what it watches",
        "timewarp watch start && timewarp watch status",
      ]),
    )
    .description(
      "the workspace's file watcher: scans visit only what it saw change instead of walking the tree",
    );
  watch
    .command("start")
    .addHelpText(
      "after",
      helpExamples(["start the watch daemon in the background", "timewarp watch start"]),
    )
    .description("start the watch daemon in the background (the session-start hook does this)")
    .action(
      action(async (ctx) => {
        const { startWatchDaemon, watchPaths } = await import("../../store/index.ts");
        const { watchRunCommand } = await import("../../hooks/index.ts");
        const r = startWatchDaemon(ctx.root, { command: watchRunCommand(ctx.root), wait: true });
        const running =
          r.pid !== null &&
          (r.started || r.reason === "already running" || r.reason === "already starting");
        return {
          json: {
            running,
            started: r.started,
            pid: r.pid,
            ...(r.reason ? { reason: r.reason } : {}),
          },
          human: running
            ? `${r.started ? "started" : `${r.reason}:`} watch daemon pid ${r.pid} (log ${watchPaths(ctx.root).log})`
            : style.yellow(`watch daemon not running: ${r.reason ?? "unknown"}`),
        };
      }),
    );
  watch
    .command("stop")
    .addHelpText(
      "after",
      helpExamples(["stop it (scans walk the tree again)", "timewarp watch stop"]),
    )
    .description(
      "stop the watch daemon (scans walk the tree again); a write command it runs ends first",
    )
    .action(
      action(async (ctx) => {
        const { stopWatchDaemon } = await import("../../store/index.ts");
        const { COMMAND_STOP_WAIT_MS } = await import("../../hooks/index.ts");
        // The daemon lets a write command its worker runs answer before it goes: wait as long.
        const stopped = stopWatchDaemon(ctx.root, COMMAND_STOP_WAIT_MS + 10_000);
        return {
          json: { stopped },
          human: stopped ? "watch daemon stopped" : "no watch daemon was running",
        };
      }),
    );
  watch
    .command("status")
    .addHelpText(
      "after",
      helpExamples(["is a daemon running, and over how many directories", "timewarp watch status"]),
    )
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
    .command("prime", { hidden: true })
    .addHelpText(
      "after",
      helpExamples(["what the daemon runs once its watches are in place", "timewarp watch prime"]),
    )
    .description(
      "walk once and leave the stat cache at the running daemon's token (the daemon runs this in a child)",
    )
    .action(
      action(async (ctx) => {
        const { primeWatchedCache } = await import("../../store/index.ts");
        const t0 = performance.now();
        const r = primeWatchedCache(ctx.root);
        // then the shell hooks' view (after the cache: a view made anew starts from it)
        const { primeShellView } = await import("../../hooks/index.ts");
        const view = primeShellView(ctx.root);
        const ms = Math.round(performance.now() - t0);
        return {
          json: { pid: process.pid, ...r, shell_view: view, duration_ms: ms },
          human: `watch prime (pid ${process.pid}): ${r.outcome}${r.reason ? ` (${r.reason})` : ""}${r.files === undefined ? "" : `, ${r.files} files, ${r.rehashed} read, manifest ${r.manifest}`}; shell hooks' view: ${view}`,
        };
      }),
    );
  watch
    .command("run")
    .addHelpText(
      "after",
      helpExamples([
        "run the daemon in the foreground, stopping after 10 idle minutes",
        "timewarp watch run --idle-minutes 10",
      ]),
    )
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
        const { runHookDaemon } = await import("../../hooks/index.ts");
        const reason = await runHookDaemon({
          root: ctx.root,
          idleMs: minutes * 60_000,
          log: (line) => process.stderr.write(`${line}\n`),
        });
        return { json: { stopped: reason }, human: `watch daemon stopped: ${reason}` };
      }),
    );
}
