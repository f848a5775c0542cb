import type { z } from "zod";
import type { Clock, Random } from "../core/index.ts";

/** What every MCP tool handler receives. */
export interface ToolContext {
  /** The workspace root the server was started in (`timewarp mcp --cwd` or the process cwd). */
  root: string;
  clock: Clock;
  random: Random;
}

/**
 * One MCP tool: zod input and output schemas, a description an agent can act on, and a handler
 * that calls one library function. A thrown TimewarpError becomes an `isError` result carrying
 * its code (see server.ts); handlers never catch to format errors themselves.
 */
export interface ToolDefinition<
  I extends z.ZodObject = z.ZodObject,
  O extends z.ZodObject = z.ZodObject,
> {
  name: string;
  title: string;
  description: string;
  inputSchema: I;
  outputSchema: O;
  annotations?: { readOnlyHint?: boolean; destructiveHint?: boolean; idempotentHint?: boolean };
  handler: (input: z.output<I>, ctx: ToolContext) => Promise<z.input<O>> | z.input<O>;
}

/** Identity helper that keeps the input/output types of one tool tied together. */
export function defineTool<I extends z.ZodObject, O extends z.ZodObject>(
  tool: ToolDefinition<I, O>,
): ToolDefinition {
  return tool as unknown as ToolDefinition;
}
