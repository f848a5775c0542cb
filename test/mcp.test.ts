import { afterEach, describe, expect, it } from "vitest";
import { makeTempDir } from "./helpers/cli.ts";
import { connectMcp, toolError } from "./helpers/mcp.ts";

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
    expect(toolError(result)).toMatchObject({ error: { code: "CORRUPT_FILE" } });
    // The model reads the code and message first; the whole error follows as JSON.
    const texts = (result.content as { text?: string }[]).map((c) => c.text ?? "");
    expect(texts[0]).toMatch(/^CORRUPT_FILE: /);
    // No structured content: the tool's output schema does not describe an error, and the
    // SDK's v1 client (OpenCode 1.x) validates an error's structured content too, turning the
    // refusal into "Structured content does not match the tool's output schema" (issue 17).
    expect(result.structuredContent).toBeUndefined();
  });
});
