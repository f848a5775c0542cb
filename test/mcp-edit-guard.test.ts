import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { makeTempDir } from "./helpers/cli.ts";
import { connectMcp, toolError } from "./helpers/mcp.ts";
import { writeGoal } from "./hooks-helpers.ts";

// An edit through timewarp's own MCP tools meets the goal as the agent's own edit tools do
// through PreToolUse: before, ApplyEditBlock changed a blacklisted package.json right after
// guard_check had answered rollback.
describe("MCP edit tools and the drift guards", () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  const goal = writeGoal;
  const history = (dir: string) => {
    const index = join(dir, ".timewarp", "history", "index.tsv");
    return existsSync(index) ? readFileSync(index, "utf8").split("\n").filter(Boolean) : [];
  };

  it("a blacklisted edit is refused with GUARD_BLOCKED by every edit tool and its dry run; nothing is written", async () => {
    const { dir, cleanup } = makeTempDir("tw-mcp-guard-");
    cleanups.push(cleanup);
    mkdirSync(join(dir, "src"));
    writeFileSync(join(dir, "src", "app.ts"), "export const greeting = 'hello';\n");
    writeFileSync(join(dir, "package.json"), '{"name":"x"}\n');
    goal(dir);
    const { client, close } = await connectMcp(dir);
    cleanups.push(close);

    const calls = [
      {
        name: "ApplyEditBlock",
        arguments: { path: "package.json", searchBlock: '"x"', replaceBlock: '"y"' },
      },
      { name: "ApplyWholeFileEdit", arguments: { path: "package.json", content: "{}\n" } },
      {
        name: "ApplyRangedEdit",
        arguments: { path: "package.json", startLine: 1, endLine: 1, content: "{}" },
      },
      {
        name: "ApplyUnifiedDiff",
        arguments: {
          diff: '--- a/package.json\n+++ b/package.json\n@@ -1 +1 @@\n-{"name":"x"}\n+{}\n',
        },
      },
      { name: "Delete", arguments: { path: "package.json" } },
      {
        name: "ApplyEditBlock",
        arguments: { path: "package.json", searchBlock: '"x"', replaceBlock: '"y"', dryRun: true },
      },
    ];
    for (const call of calls) {
      const result = await client.callTool(call);
      expect(result.isError, call.name).toBe(true);
      expect(toolError(result)).toMatchObject({
        error: { code: "GUARD_BLOCKED", data: { paths: ["package.json"] } },
      });
    }
    expect(readFileSync(join(dir, "package.json"), "utf8")).toBe('{"name":"x"}\n');
    expect(history(dir)).toEqual([]);

    // In scope: applied and recorded as before.
    const ok = await client.callTool({
      name: "ApplyEditBlock",
      arguments: { path: "src/app.ts", searchBlock: "hello", replaceBlock: "hi" },
    });
    expect(ok.isError).toBeFalsy();
    expect(readFileSync(join(dir, "src", "app.ts"), "utf8")).toBe(
      "export const greeting = 'hi';\n",
    );
    expect(history(dir)).toHaveLength(1);
    // Each real call was scored on the bus; the dry run left no event.
    const checked = readFileSync(join(dir, ".timewarp", "events.jsonl"), "utf8")
      .split("\n")
      .filter((l) => l.includes('"guard.checked"'));
    expect(checked).toHaveLength(6);
  });

  it("a warning lets the edit through and says why in the result", async () => {
    const { dir, cleanup } = makeTempDir("tw-mcp-guard-");
    cleanups.push(cleanup);
    writeFileSync(join(dir, "package.json"), '{"name":"x"}\n');
    goal(dir, {
      weights: { scope: 0.5, plan: 1, test: 0.2, evidence: 0.1 },
      thresholds: { warn: 0.4, rollback: 0.9 },
    });
    const { client, close } = await connectMcp(dir);
    cleanups.push(close);
    const result = await client.callTool({
      name: "ApplyWholeFileEdit",
      arguments: { path: "package.json", content: "{}\n" },
    });
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toMatchObject({
      success: true,
      message: expect.stringMatching(/drift guard warning: .*blacklist/i),
    });
    expect(readFileSync(join(dir, "package.json"), "utf8")).toBe("{}\n");
    expect(history(dir)).toHaveLength(1);
  });
});
