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

/** What a failed tool call carries: its last text block is the error as JSON. */
export interface ToolErrorBody {
  error?: { code: string; message: string; data?: Record<string, unknown> };
}

/** The error body of an `isError` result (`{}` for any other result). */
export function toolError(result: unknown): ToolErrorBody {
  const r = result as { isError?: boolean; content?: { type: string; text?: string }[] };
  if (r.isError !== true) return {};
  const text = r.content?.at(-1)?.text ?? "";
  try {
    return JSON.parse(text) as ToolErrorBody;
  } catch {
    return {};
  }
}
