import { resolve } from "node:path";
import { McpServer } from "@modelcontextprotocol/server";
import { StdioServerTransport } from "@modelcontextprotocol/server/stdio";
import {
  ErrorCode,
  isTimewarpError,
  systemClock,
  systemRandom,
  TimewarpError,
} from "../core/index.ts";
import type { ToolContext, ToolDefinition } from "./define-tool.ts";
import { defineLedgerTools } from "./tools/ledger.ts";
import { defineMemoryTools } from "./tools/memory.ts";
import { defineSkillTools } from "./tools/skill.ts";
import { defineStatusTools } from "./tools/status.ts";
import { defineTimemachineTools } from "./tools/timemachine.ts";

/** Every tool the server offers, from each capability's tool module. */
export function allTools(): ToolDefinition[] {
  return [
    ...defineStatusTools(),
    ...defineTimemachineTools(),
    ...defineSkillTools(),
    ...defineLedgerTools(),
    ...defineMemoryTools(),
  ];
}

/** The error body a failed tool call carries in `structuredContent` and as its text. */
function errorResult(error: unknown) {
  const tw = isTimewarpError(error)
    ? error
    : new TimewarpError(ErrorCode.INTERNAL, error instanceof Error ? error.message : String(error));
  const body = { error: tw.toJSON() };
  return {
    isError: true,
    content: [{ type: "text" as const, text: `${tw.code}: ${tw.message}` }],
    structuredContent: body,
  };
}

/** Build the MCP server for the workspace at `root`, with every tool registered through one wrapper. */
export function createMcpServer(options: { root: string; tools?: ToolDefinition[] }): McpServer {
  const server = new McpServer({ name: "timewarp", version: "0.1.0" });
  const ctx: ToolContext = {
    root: resolve(options.root),
    clock: systemClock,
    random: systemRandom,
  };
  for (const tool of options.tools ?? allTools()) {
    server.registerTool(
      tool.name,
      {
        title: tool.title,
        description: tool.description,
        inputSchema: tool.inputSchema,
        outputSchema: tool.outputSchema,
        ...(tool.annotations ? { annotations: tool.annotations } : {}),
      },
      async (input: unknown) => {
        try {
          const output = tool.outputSchema.parse(await tool.handler(input as never, ctx));
          return {
            content: [{ type: "text" as const, text: JSON.stringify(output) }],
            structuredContent: output as Record<string, unknown>,
          };
        } catch (error) {
          return errorResult(error);
        }
      },
    );
  }
  return server;
}

/** `timewarp mcp`: serve on stdio until the client closes the stream. */
export async function serveStdio(root: string): Promise<void> {
  const server = createMcpServer({ root });
  await server.connect(new StdioServerTransport());
}
