import { Command, CommanderError } from "commander";
import { ErrorCode, TimewarpError } from "../core/index.ts";
import { registerHookCommands } from "./commands/hooks.ts";
import { registerLedgerCommands } from "./commands/ledger.ts";
import { registerMcpCommand } from "./commands/mcp.ts";
import { registerMemoryCommands } from "./commands/memory.ts";
import { registerSkillCommands } from "./commands/skill.ts";
import { registerSnapshotCommands } from "./commands/snapshot.ts";
import { registerStoreCommands } from "./commands/store.ts";
import { registerTimemachineCommands } from "./commands/timemachine.ts";
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
    .version(VERSION)
    .option("--json", "print exactly one JSON document on stdout")
    .option(
      "-C, --cwd <dir>",
      "run as if started in <dir>; the workspace is the nearest .timewarp/ (else .git) at or above it",
    )
    .showHelpAfterError()
    .exitOverride();
  registerStoreCommands(program);
  registerTimemachineCommands(program);
  registerSnapshotCommands(program);
  registerSkillCommands(program);
  registerLedgerCommands(program);
  registerMemoryCommands(program);
  registerWatchCommands(program);
  registerMcpCommand(program);
  registerHookCommands(program);
  return program;
}

const VERSION = "0.1.0";

export async function main(argv: string[]): Promise<void> {
  const program = createProgram();
  const json = argv.includes("--json");
  if (json) {
    // Commander's own messages (unknown option, missing argument) become the JSON error.
    program.configureOutput({ writeErr: () => {}, writeOut: (s) => process.stdout.write(s) });
    for (const c of allCommands(program)) c.configureOutput({ writeErr: () => {} }).exitOverride();
  }
  try {
    await program.parseAsync(argv);
  } catch (error) {
    if (error instanceof CommanderError) {
      if (error.exitCode === 0) return; // --help, --version
      printError(
        new TimewarpError(ErrorCode.INVALID_INPUT, error.message.replace(/^error: /, "")),
        json,
      );
      return;
    }
    printError(error, json);
  }
}

function allCommands(command: Command): Command[] {
  return command.commands.flatMap((c) => [c, ...allCommands(c)]);
}
