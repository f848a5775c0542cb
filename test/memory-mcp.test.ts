import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { makeTempDir } from "./helpers/cli.ts";
import { connectMcp, mcpError } from "./helpers/mcp.ts";
import { writeTranslationMemory } from "./helpers/memory-fixtures.ts";

describe("memory MCP tools over stdio", () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  it("memory_retrieve renders fitting cards for the user; guard_check scores proposed edits against the active goal", async () => {
    const tmp = makeTempDir("tw-mem-mcp-");
    cleanups.push(tmp.cleanup);
    const root = tmp.dir;
    execFileSync("git", ["init", "-q", root]);
    writeTranslationMemory(root);

    const { client, close } = await connectMcp(root);
    cleanups.push(close);
    const names = (await client.listTools()).tools.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(["memory_retrieve", "guard_check"]));

    const hit = await client.callTool({
      name: "memory_retrieve",
      arguments: { objective: "translate the README into Chinese", user: "nina" },
    });
    expect(hit.isError).toBeFalsy();
    expect(hit.structuredContent).toMatchObject({
      view: "guided",
      reason: "self_report=novice",
      cards: [{ pattern_id: "pc_translate_readme_chinese", uses: 1 }],
    });
    const text = (hit.structuredContent as { cards: { text: string }[] }).cards[0]?.text ?? "";
    expect(text).toContain("### Steps");
    const miss = await client.callTool({
      name: "memory_retrieve",
      arguments: { objective: "tune the postgres vacuum settings" },
    });
    expect(miss.structuredContent).toMatchObject({ cards: [], library_size: 1 });
    // explain: true says why, as `memory retrieve --explain` does
    const why = await client.callTool({
      name: "memory_retrieve",
      arguments: { objective: "translate the README into Chinese", explain: true },
    });
    expect(why.isError).toBeFalsy();
    expect(why.structuredContent).toMatchObject({
      explain: {
        returned: [
          { pattern_id: "pc_translate_readme_chinese", rejected: null, min_coverage: 0.4 },
        ],
      },
    });
    const returned = (
      why.structuredContent as { explain: { returned: { matched: { token: string }[] }[] } }
    ).explain.returned[0];
    expect(returned?.matched.map((m) => m.token)).toEqual(
      expect.arrayContaining(["translate", "readme"]),
    );

    const bad = await client.callTool({
      name: "guard_check",
      arguments: { paths: [join(root, "requirements.txt")], tool: "Edit" },
    });
    expect(bad.isError).toBeFalsy();
    expect(bad.structuredContent).toMatchObject({
      action: "rollback",
      auto_fixable: true,
      fix_cmd: "git checkout -- requirements.txt",
    });
    const good = await client.callTool({
      name: "guard_check",
      arguments: { paths: ["docs/guide.md"], tool: "Write", content: "# 指南" },
    });
    expect(good.structuredContent).toMatchObject({ action: "ok", drift_score: 0 });
    const tamper = await client.callTool({
      name: "guard_check",
      arguments: { paths: ["tests/test_docs.py"], diff: "@@ -1 +1 @@\n+@pytest.mark.skip" },
    });
    expect(tamper.structuredContent).toMatchObject({ action: "rollback" });
    expect(
      readFileSync(join(root, ".timewarp/events.jsonl"), "utf8").match(/"guard.checked"/g),
    ).toHaveLength(3);

    const invalid = await client.callTool({
      name: "guard_check",
      arguments: { paths: ["a"], run: "no-such-run" },
    });
    expect(invalid.isError).toBe(true);
    expect(mcpError(invalid)).toMatchObject({ code: "RUN_INVALID" });
  });
});
