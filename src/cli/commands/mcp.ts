import type { Command } from "commander";
import { createCommandContext, type GlobalOptions } from "../context.ts";
import { helpExamples } from "../help-examples.ts";
import { printError } from "../output.ts";

/** `timewarp mcp`: the MCP server on stdio. It prints nothing of its own on stdout (that is the protocol). */
export function registerMcpCommand(program: Command): void {
  program
    .command("mcp")
    .addHelpText(
      "after",
      helpExamples(
        ["serve the tools on stdio (what an agent's MCP config starts)", "timewarp mcp"],
        ["serve them for another directory's workspace", "timewarp -C ~/work/app mcp"],
      ),
    )
    .description("serve the timewarp tools over MCP on stdio")
    .action(async (_opts: unknown, command: Command) => {
      const ctx = createCommandContext(command.optsWithGlobals<GlobalOptions>());
      try {
        const { serveStdio } = await import("../../mcp/index.ts");
        await serveStdio(ctx.root);
      } catch (error) {
        printError(error, false);
      }
    });
}
