import { afterEach, describe, expect, it } from "vitest";
import { makeTempDir } from "./helpers/cli.ts";
import { connectMcp, mcpError } from "./helpers/mcp.ts";

describe("timewarp mcp over stdio", () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  it("lists timewarp_status and answers it with structured content", async () => {
    const tmp = makeTempDir();
    cleanups.push(tmp.cleanup);
    const { client, close } = await connectMcp(tmp.dir);
    cleanups.push(close);
    const { tools } = await client.listTools();
    const status = tools.find((t) => t.name === "timewarp_status");
    expect(status?.outputSchema).toBeDefined();
    const result = await client.callTool({ name: "timewarp_status", arguments: {} });
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toMatchObject({
      mode: "present",
      initialized: false,
      lock: null,
    });
  });

  it("turns a TimewarpError into an isError result carrying its code", async () => {
    const tmp = makeTempDir();
    cleanups.push(tmp.cleanup);
    const { mkdirSync, writeFileSync } = await import("node:fs");
    mkdirSync(`${tmp.dir}/.timewarp`);
    writeFileSync(`${tmp.dir}/.timewarp/state.json`, '{"mode":"sideways"}');
    const { client, close } = await connectMcp(tmp.dir);
    cleanups.push(close);
    const result = await client.callTool({ name: "timewarp_status", arguments: {} });
    expect(result.isError).toBe(true);
    // No structured content: it would have to match the tool's output schema (issue 17).
    expect(result.structuredContent).toBeUndefined();
    expect(mcpError(result)).toMatchObject({ code: "CORRUPT_FILE" });
    expect(result.content).toEqual([
      { type: "text", text: expect.stringMatching(/^CORRUPT_FILE: /) },
    ]);
  });
});
