/** mcp: the MCP surface. Thin: each tool parses input, calls one library function, returns its result. */

export type { ToolContext, ToolDefinition } from "./define-tool.ts";
export { defineTool } from "./define-tool.ts";
export { allTools, createMcpServer, serveStdio } from "./server.ts";
