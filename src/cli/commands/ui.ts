import { spawn } from "node:child_process";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { type Command, InvalidArgumentError } from "commander";
import { createCommandContext, type GlobalOptions } from "../context.ts";
import { helpExamples } from "../help-examples.ts";
import { printError, style } from "../output.ts";

interface UiOptions {
  port?: number;
  open?: boolean;
  allowActions?: boolean;
}

function parsePort(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535)
    throw new InvalidArgumentError(`--port must be 0..65535, got ${JSON.stringify(value)}`);
  return n;
}

/** `timewarp ui`: the local dashboard, until Ctrl-C. */
export function registerUiCommand(program: Command): void {
  program
    .command("ui")
    .description("serve the local dashboard on 127.0.0.1 (read-only unless --allow-actions)")
    .option("--port <n>", "the port (default: a free one)", parsePort)
    .option("--open", "open the dashboard in the default browser")
    .option("--allow-actions", "allow revert, travel, return and rewind from the dashboard")
    .addHelpText(
      "after",
      helpExamples(
        ["look at this workspace's sessions, edits, runs and guards", "timewarp ui --open"],
        ["allow revert, travel and return from the page", "timewarp ui --allow-actions"],
      ),
    )
    .action(async (opts: UiOptions, command: Command) => {
      const ctx = createCommandContext(command.optsWithGlobals<GlobalOptions>());
      try {
        const { startUiServer } = await import("../../ui/index.ts");
        collectStartupGarbage();
        const server = await startUiServer({
          root: ctx.root,
          port: opts.port,
          allowActions: opts.allowActions === true,
        });
        if (ctx.json)
          process.stdout.write(
            `${JSON.stringify({ url: server.url, port: server.port, allow_actions: opts.allowActions === true, root: ctx.root })}\n`,
          );
        else
          process.stdout.write(
            `timewarp dashboard for ${ctx.root}\n  ${style.bold(server.url)}\n` +
              `  ${opts.allowActions === true ? "actions allowed" : "read-only (--allow-actions to revert, travel, return)"}; Ctrl-C stops it\n`,
          );
        if (opts.open === true) openBrowser(server.url);
        const stop = () => void server.close().then(() => process.exit(0));
        process.once("SIGINT", stop);
        process.once("SIGTERM", stop);
      } catch (error) {
        printError(error, ctx.json);
      }
    });
}

/**
 * One full collection before the server builds its index: the start-up's garbage (the CLI's
 * source read as text, the module graph's temporaries) goes now, not at a peak later.
 */
function collectStartupGarbage(): void {
  // `gc` exists only in contexts made after the flag is set
  setFlagsFromString("--expose-gc");
  const gc = runInNewContext("gc") as unknown;
  if (typeof gc === "function") gc();
}

/** The platform's own opener; a failure only means the user opens the printed URL. */
function openBrowser(url: string): void {
  const [cmd, args] =
    process.platform === "darwin"
      ? ["open", [url]]
      : process.platform === "win32"
        ? ["cmd", ["/c", "start", "", url]]
        : ["xdg-open", [url]];
  const child = spawn(cmd, args, { stdio: "ignore", detached: true });
  child.on("error", () => process.stderr.write(`could not start ${cmd}: open ${url} yourself\n`));
  child.unref();
}
