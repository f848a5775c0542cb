import { resolve } from "node:path";
import { McpServer, type StandardSchemaWithJSON } from "@modelcontextprotocol/server";
import { StdioServerTransport } from "@modelcontextprotocol/server/stdio";
import type { z } from "zod";
import {
  ErrorCode,
  ensureStoreIgnored,
  systemClock,
  systemRandom,
  TIMEWARP_VERSION,
  TimewarpError,
  toTimewarpError,
  validate,
} from "../core/index.ts";
import type { ToolContext, ToolDefinition } from "./define-tool.ts";
import { defineLedgerTools } from "./tools/ledger.ts";
import { defineMemoryTools } from "./tools/memory.ts";
import { defineRewindTools } from "./tools/rewind.ts";
import { defineSkillTools } from "./tools/skill.ts";
import { defineStatusTools } from "./tools/status.ts";
import { defineTimemachineTools } from "./tools/timemachine.ts";

/** Every tool the server offers, from each capability's tool module. */
export function allTools(): ToolDefinition[] {
  return [
    ...defineStatusTools(),
    ...defineTimemachineTools(),
    ...defineRewindTools(),
    ...defineSkillTools(),
    ...defineLedgerTools(),
    ...defineMemoryTools(),
  ];
}

/** The key of a failed call's `_meta` that carries its error as `{code, message, data?}`. */
export const MCP_ERROR_META_KEY = "timewarp/error";

/**
 * What a failed tool call returns: `CODE: message` as its text (what the agent's model reads),
 * and the error as `{code, message, data?}` in `_meta` under MCP_ERROR_META_KEY for programs.
 * Never as `structuredContent`: every tool declares an output schema, which structured content
 * must match (MCP 2025-06-18), and the SDK 1.x clients the agents ship (Gemini CLI's, issue 17)
 * check it on error results too: an error body there reached the model as "Structured content
 * does not match the tool's output schema", without the reason. A system error (a name too
 * long, a directory where a file was expected) gets its code here, never INTERNAL: INTERNAL
 * means a bug (`toTimewarpError`).
 */
function errorResult(error: unknown) {
  const tw = toTimewarpError(error);
  return {
    isError: true,
    content: [{ type: "text" as const, text: `${tw.code}: ${tw.message}` }],
    _meta: { [MCP_ERROR_META_KEY]: tw.toJSON() },
  };
}

/**
 * The input schema as the SDK sees it: the tool's own JSON Schema in `tools/list`, but a
 * validation that lets every argument through. The SDK's own check would answer bad arguments
 * with a bare text message; ours (in the wrapper below) answers INVALID_INPUT with the fields,
 * like every other timewarp error. Standard Schema is the SDK's public way to plug a validator.
 */
function listedOnly(schema: z.ZodObject): StandardSchemaWithJSON {
  const std = schema["~standard"];
  return {
    "~standard": {
      version: 1,
      vendor: "timewarp",
      validate: (value: unknown) => ({ value }),
      jsonSchema: std.jsonSchema,
    },
  };
}

/** Validate a tool's arguments with its zod schema; INVALID_INPUT names each bad field. */
function parseArguments(tool: ToolDefinition, input: unknown): unknown {
  const result = validate(tool.inputSchema, input ?? {});
  if (result.ok) return result.value;
  throw new TimewarpError(
    ErrorCode.INVALID_INPUT,
    `invalid arguments for ${tool.name}: ${result.issues.join("; ")}`,
    { data: { tool: tool.name, issues: result.issues } },
  );
}

/** Build the MCP server for the workspace at `root`, with every tool registered through one wrapper. */
export function createMcpServer(options: { root: string; tools?: ToolDefinition[] }): McpServer {
  const server = new McpServer({ name: "timewarp", version: TIMEWARP_VERSION });
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
        inputSchema: listedOnly(tool.inputSchema),
        outputSchema: tool.outputSchema,
        ...(tool.annotations ? { annotations: tool.annotations } : {}),
      },
      async (input: unknown) => {
        try {
          const args = parseArguments(tool, input);
          const output = tool.outputSchema.parse(await tool.handler(args as never, ctx));
          return {
            content: [{ type: "text" as const, text: JSON.stringify(output) }],
            structuredContent: output as Record<string, unknown>,
          };
        } catch (error) {
          return errorResult(error);
        } finally {
          // the store a tool made or found stays out of git (issue 16, class 9)
          ensureStoreIgnored(ctx.root);
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
