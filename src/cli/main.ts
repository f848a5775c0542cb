import { Command, CommanderError } from "commander";
import { ErrorCode, TIMEWARP_VERSION, TimewarpError } from "../core/index.ts";
import { registerDoctorCommand } from "./commands/doctor.ts";
import { registerHookCommands } from "./commands/hooks.ts";
import { registerLedgerCommands } from "./commands/ledger.ts";
import { registerMcpCommand } from "./commands/mcp.ts";
import { registerMemoryCommands } from "./commands/memory.ts";
import { registerRewindCommand } from "./commands/rewind.ts";
import { registerSkillCommands } from "./commands/skill.ts";
import { registerSnapshotCommands } from "./commands/snapshot.ts";
import { registerStoreCommands } from "./commands/store.ts";
import { registerTimemachineCommands } from "./commands/timemachine.ts";
import { registerUiCommand } from "./commands/ui.ts";
import { registerWatchCommands } from "./commands/watch.ts";
import { printError } from "./output.ts";

/**
 * The `timewarp` program. Each command group lives in `commands/<capability>.ts`; command
 * modules import only commander at load time and their capability lazily inside the action,
 * so `timewarp status` never pays for SkillPilot or the diff engine.
 */
export function createProgram(): Command {
  const program = new Command("timewarp")
    .description("A local flight recorder, time machine and guard rail for AI coding agents")
    .version(TIMEWARP_VERSION)
    .option("--json", "print exactly one JSON document on stdout")
    .option(
      "-C, --cwd <dir>",
      "run as if started in <dir>; the workspace is the nearest .timewarp/ (else .git) at or above it",
    )
    .showHelpAfterError()
    .exitOverride();
  registerStoreCommands(program);
  registerTimemachineCommands(program);
  registerRewindCommand(program);
  registerSnapshotCommands(program);
  registerSkillCommands(program);
  registerLedgerCommands(program);
  registerMemoryCommands(program);
  registerWatchCommands(program);
  registerMcpCommand(program);
  registerHookCommands(program);
  registerDoctorCommand(program);
  registerUiCommand(program);
  return program;
}

export async function main(argv: string[]): Promise<void> {
  const program = createProgram();
  const json = argv.includes("--json");
  // Every command throws its usage errors to the catch below (one exit code, 2, in both modes).
  for (const c of allCommands(program)) c.exitOverride();
  if (json) {
    // Commander's own messages (unknown option, missing argument) become the JSON error.
    program.configureOutput({ writeErr: () => {}, writeOut: (s) => process.stdout.write(s) });
    for (const c of allCommands(program)) c.configureOutput({ writeErr: () => {} });
  }
  try {
    await program.parseAsync(argv);
  } catch (error) {
    if (error instanceof CommanderError) {
      if (error.exitCode === 0) return; // --help, --version
      // Bad usage: INVALID_INPUT, exit 2, in text mode as with --json (commander's own message
      // and help are already on stderr in text mode).
      const message =
        error.code === "commander.help"
          ? missingCommand(program, argv.slice(2))
          : error.message.replace(/^error: /, "");
      printError(
        new TimewarpError(ErrorCode.INVALID_INPUT, message, { data: { usage: error.code } }),
        json,
      );
      return;
    }
    printError(error, json);
  }
}

/** Commander shows the help for a group called without its command ("(outputHelp)"): say so. */
function missingCommand(program: Command, args: string[]): string {
  let at = program;
  for (const arg of args) {
    const sub = at.commands.find((c) => c.name() === arg || c.aliases().includes(arg));
    if (sub === undefined) continue;
    at = sub;
  }
  const names = [] as string[];
  for (let c: Command | null = at; c !== null; c = c.parent) names.unshift(c.name());
  const path = names.join(" ");
  const choices = at.commands.map((c) => c.name()).filter((n) => n !== "help");
  return `${path} needs a command${choices.length > 0 ? ` (one of ${choices.join(", ")})` : ""}; see \`${path} --help\``;
}

function allCommands(command: Command): Command[] {
  return command.commands.flatMap((c) => [c, ...allCommands(c)]);
}
