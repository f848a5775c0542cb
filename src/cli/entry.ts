import { isMainThread, parentPort, workerData } from "node:worker_threads";
import { dropOutputOnceClosed } from "./closed-output.ts";
import { parseHookArgv, runHookCommand } from "./commands/hooks.ts";
import type { HookServerTry } from "./hook-client-main.ts";

/**
 * Set by the bin when it already asked the hook server (dist/bin/hook-client.cjs), with the
 * payload when that read stdin.
 */
const HOOK_SERVER_TRIED = Symbol.for("timewarp.hookServerTried");

// No top-level await: the bin runs this as one CommonJS bundle (see scripts/bundle-cli.ts).
const worker = workerData as { timewarp?: unknown } | null;
if (!isMainThread && worker?.timewarp !== undefined && parentPort !== null) {
  // The watch daemon's hook worker (started by src/hooks/hook-daemon.ts).
  const port = parentPort;
  // It also runs the read-only commands bin/timewarp hands it, through the CLI's own program.
  Promise.all([import("../hooks/index.ts"), import("./captured-command.ts")]).then(
    ([{ runHookWorkerThread }, { runCapturedCommand, warmCapturedCommands }]) =>
      runHookWorkerThread(port, worker, {
        runCommand: runCapturedCommand,
        warmCommands: warmCapturedCommands,
      }),
  );
} else {
  dropOutputOnceClosed();
  // A plain hook call asks the workspace's hook server first, then skips building the program
  // (commander and every command group): agents start one on every tool call.
  const hook = parseHookArgv(process.argv.slice(2));
  // bin/timewarp-hook found no server for this hook, or the server declined it: as the bin's own
  // try (bin/timewarp.cjs reads the variable too; it is not passed on to what the hook starts).
  const tried =
    (globalThis as Record<symbol, HookServerTry | undefined>)[HOOK_SERVER_TRIED] ??
    (process.env.TIMEWARP_HOOK_TRIED === "1" ? { served: false } : undefined);
  delete process.env.TIMEWARP_HOOK_TRIED;
  const done =
    hook !== null
      ? (tried !== undefined
          ? Promise.resolve(tried)
          : import("./hook-client-main.ts").then((m) => m.runViaHookServer(process.argv.slice(2)))
        ).then((r) => (r.served ? undefined : runHookCommand(hook, r.input)))
      : import("./main.ts").then((m) => m.main(process.argv));
  done.catch((error: unknown) => {
    // Both paths print their own errors; reaching here is a bug in the error path.
    console.error(error);
    process.exitCode = 1;
  });
}
