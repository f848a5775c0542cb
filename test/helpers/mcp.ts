import { Client } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { cliCommand } from "./cli.ts";

/** Start `timewarp mcp` in `cwd` as a real child process and connect the SDK's own client to it. */
export async function connectMcp(
  cwd: string,
): Promise<{ client: Client; close: () => Promise<void> }> {
  const { command, args } = cliCommand();
  const transport = new StdioClientTransport({
    command,
    args: [...args, "mcp"],
    cwd,
    env: { ...(process.env as Record<string, string>), NO_COLOR: "1" },
    stderr: "pipe",
  });
  const client = new Client({ name: "timewarp-test", version: "0.0.0" });
  await client.connect(transport);
  return { client, close: () => client.close() };
}

/** The error body of a failed call: `_meta["timewarp/error"]` (`{code, message, data?}`), or undefined. */
export function mcpError(
  result: unknown,
): { code: string; message: string; data?: Record<string, unknown> } | undefined {
  const meta = (result as { _meta?: Record<string, unknown> })._meta;
  return meta?.["timewarp/error"] as
    | { code: string; message: string; data?: Record<string, unknown> }
    | undefined;
}
