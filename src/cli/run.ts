import type { Command } from "commander";
import { assertInputDirectory, ensureStoreIgnored } from "../core/index.ts";
import { type CommandContext, createCommandContext, type GlobalOptions } from "./context.ts";
import { type CommandResult, printError, printResult } from "./output.ts";

export type Handler<A extends unknown[]> = (
  ctx: CommandContext,
  ...args: A
) => Promise<CommandResult> | CommandResult;

/**
 * Wrap a command handler: it receives the context (global `--json`/`--cwd` resolved) and the
 * command's positional arguments and options as commander passes them; its result is printed
 * per the `--json` contract, and any error is printed once, here. Whatever the command did, the
 * store it found or made is left ignored by git (`.timewarp/.gitignore`, issue 16 class 9).
 */
export function action<A extends unknown[]>(
  handler: Handler<A>,
): (...args: unknown[]) => Promise<void> {
  return async (...args: unknown[]) => {
    const command = args[args.length - 1] as Command;
    const globals = command.optsWithGlobals<GlobalOptions>();
    const json = globals.json === true;
    let root: string | undefined;
    let ctx: CommandContext | undefined;
    try {
      // `-C DIR` names the workspace: a missing one must not be created by the first write.
      if (globals.cwd !== undefined) assertInputDirectory(globals.cwd, { what: "--cwd" });
      ctx = createCommandContext(globals, commandPath(command));
      root = ctx.root;
      const result = await handler(ctx, ...(args.slice(0, -1) as A));
      ctx.progress(""); // before the result: a reader never sees work the output says is done
      printResult(result, ctx.json);
    } catch (error) {
      ctx?.progress("");
      printError(error, json);
    } finally {
      if (root !== undefined) ensureStoreIgnored(root);
    }
  };
}

/** `snapshot create` for `timewarp snapshot create …`: the command's names below the program. */
function commandPath(command: Command): string {
  const names: string[] = [];
  let c = command;
  while (c.parent !== null) {
    names.unshift(c.name());
    c = c.parent;
  }
  return names.join(" ");
}
