import type { Command } from "commander";
import { ErrorCode, TimewarpError } from "../../core/index.ts";
// The one list of events and agents, at load time for the help: the hooks' index loads only small
// modules (no measurable difference in the CPU time of a bundled `timewarp --version`).
import { HOOK_AGENTS, HOOK_EVENTS, INSTALL_AGENTS, type InstallAgent } from "../../hooks/index.ts";
import { createCommandContext, type GlobalOptions } from "../context.ts";
import { helpExamples } from "../help-examples.ts";
import { printError, style } from "../output.ts";
import { action } from "../run.ts";

async function readStdin(): Promise<string> {
  if (process.stdin.isTTY === true) return "";
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

export interface HookCommandOptions extends GlobalOptions {
  event: string | undefined;
  agent: string | undefined;
}

/**
 * `timewarp hook <event>`: read the payload on stdin, run the hook, answer in the agent's
 * protocol. Called by commander's action and by the entry's fast path (see `parseHookArgv`),
 * with `input` when the hook-server client read stdin already.
 */
export async function runHookCommand(options: HookCommandOptions, input?: Buffer): Promise<void> {
  const ctx = createCommandContext(options);
  try {
    const { runHook, watchRunCommand } = await import("../../hooks/index.ts");
    const run = await runHook({
      event: options.event ?? "",
      input: input !== undefined ? input.toString("utf8") : await readStdin(),
      // `-C DIR` names the hook's workspace as it is (the installs' contract); without it the
      // payload's cwd is resolved as everywhere else.
      ...(options.cwd !== undefined ? { root: ctx.cwd } : {}),
      ...(options.agent !== undefined ? { agent: options.agent } : {}),
      json: ctx.json,
      clock: ctx.clock,
      random: ctx.random,
      watchCommand: watchRunCommand,
    });
    if (run.stdout !== "") process.stdout.write(run.stdout);
    if (run.stderr !== "") process.stderr.write(run.stderr);
    process.exitCode = run.exitCode;
  } catch (error) {
    // runHook handles its own failures; reaching here is a bug, and still must not block.
    printError(error, ctx.json);
    process.exitCode = 0;
  }
}

/**
 * The argv of a plain hook call (`hook <event> [--agent A] [--json] [-C|--cwd DIR]`, as the
 * installed wirings write it), or null for anything else, which goes through commander (help,
 * unknown options, global options before `hook`). Agents start a hook on every tool call, and
 * building the whole program loads commander and every command group for nothing.
 */
export function parseHookArgv(args: readonly string[]): HookCommandOptions | null {
  if (args[0] !== "hook") return null;
  const out: HookCommandOptions = { event: undefined, agent: undefined };
  for (let i = 1; i < args.length; i++) {
    const a = args[i] as string;
    if (a === "--json") out.json = true;
    else if ((a === "--agent" || a === "--cwd" || a === "-C") && i + 1 < args.length) {
      const value = args[++i] as string;
      if (a === "--agent") out.agent = value;
      else out.cwd = value;
    } else if (!a.startsWith("-") && out.event === undefined) out.event = a;
    else return null;
  }
  return out;
}

/** `timewarp hook <event>` (agent hooks) and `timewarp install <agent>` (their wiring). */
export function registerHookCommands(program: Command): void {
  // Never commander's own validation here: its usage error exits 2, which every agent reads as
  // "block this tool call". A hook called wrongly (a stale install, a newer agent) must pass.
  program
    .command("hook")
    .addHelpText(
      "after",
      helpExamples(
        [
          "what the Claude Code install runs at a session start (payload on stdin)",
          'echo \'{"session_id":"s1","cwd":"."}\' | timewarp hook session-start --agent claude-code',
        ],
        [
          "before a tool call, as Codex wires it",
          "timewarp hook pre-tool-use --agent codex < payload.json",
        ],
      ),
    )
    .description("run an agent hook: reads the hook payload (JSON) on stdin")
    .argument("[event]", HOOK_EVENTS.join(" | "))
    .option(
      "--agent <agent>",
      `who calls: ${HOOK_AGENTS.join(" | ")} (default: guessed from the payload)`,
    )
    .allowUnknownOption()
    .allowExcessArguments()
    .action(async (event: string | undefined, options: { agent?: string }, command: Command) => {
      await runHookCommand({
        event,
        agent: options.agent,
        ...command.optsWithGlobals<GlobalOptions>(),
      });
    });

  program
    .command("install")
    .addHelpText(
      "after",
      helpExamples(
        ["wire timewarp into this project for Claude Code", "timewarp install claude-code"],
        [
          "show what an install for Codex would change, then take one back",
          "timewarp install codex --dry-run && timewarp install gemini --uninstall",
        ],
      ),
    )
    .description("wire timewarp into a project for an agent (hooks, MCP server, skill or plugin)")
    .argument("<agent>", INSTALL_AGENTS.join(" | "))
    .option("--dry-run", "show what would change, write nothing")
    .option("--uninstall", "remove exactly what the install added")
    .option(
      "--command <cmd>",
      "how the agent starts timewarp (default: this timewarp, by its absolute path)",
    )
    .action(
      action(
        async (
          ctx,
          agent: string,
          options: { dryRun?: boolean; uninstall?: boolean; command?: string },
        ) => {
          if (!(INSTALL_AGENTS as readonly string[]).includes(agent))
            throw new TimewarpError(
              ErrorCode.INVALID_INPUT,
              `unknown agent ${JSON.stringify(agent)}: expected one of ${INSTALL_AGENTS.join(", ")}`,
            );
          const { installAgent, uninstallAgent } = await import("../../hooks/index.ts");
          const run = options.uninstall === true ? uninstallAgent : installAgent;
          const report = await run({
            root: ctx.root,
            agent: agent as InstallAgent,
            ...(options.command !== undefined ? { command: options.command } : {}),
            // The wiring names the program this process runs as (npm's `timewarp` link): the
            // shell launcher bin/timewarp says which it was, since it runs bin/timewarp.cjs.
            ...(invokedAs() !== undefined ? { invokedAs: invokedAs() } : {}),
            dryRun: options.dryRun === true,
            from: ctx.cwd,
            clock: ctx.clock,
          });
          return { json: report, human: formatInstallReport(report) };
        },
      ),
    );
}

type InstallReport = Awaited<ReturnType<typeof import("../../hooks/index.ts").installAgent>>;

function formatInstallReport(report: InstallReport): string {
  const verb = report.operation === "install" ? "install" : "uninstall";
  if (!report.changed)
    return `${report.agent}: nothing to ${verb}${report.operation === "install" ? " (already installed; nothing changed)" : " (timewarp is not installed here)"}${report.daemon_stopped ? "; the watch daemon was stopped" : ""}`;
  const lines = [
    `${style.bold(report.agent)}: ${verb}${report.dry_run ? style.yellow(" (dry run: nothing written)") : ""}`,
  ];
  for (const f of report.files) {
    const mark =
      f.action === "created"
        ? style.green("created ")
        : f.action === "unchanged"
          ? style.dim("unchanged")
          : f.action.padEnd(9);
    lines.push(
      `  ${mark} ${f.path}${f.changes.length > 0 ? style.dim(`  ${f.changes.join(" ")}`) : ""}`,
    );
  }
  for (const n of report.notes) lines.push(`  ${style.dim("note")} ${n}`);
  if (report.undo !== null && !report.dry_run) lines.push(`undo: ${report.undo}`);
  return lines.join("\n");
}

/** The path the `timewarp` command was started as: bin/timewarp's own, else this script's. */
function invokedAs(): string | undefined {
  const launcher = process.env.TIMEWARP_LAUNCHER;
  return launcher !== undefined && launcher !== "" ? launcher : process.argv[1];
}
