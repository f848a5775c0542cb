import type { Command } from "commander";
import { createCommandContext, type GlobalOptions } from "../context.ts";
import { printError } from "../output.ts";

/** `timewarp mcp`: the MCP server on stdio. It prints nothing of its own on stdout (that is the protocol). */
export function registerMcpCommand(program: Command): void {
  program
    .command("mcp")
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
