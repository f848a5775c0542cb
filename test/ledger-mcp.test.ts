import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { makeTempDir } from "./helpers/cli.ts";
import { connectMcp, toolError } from "./helpers/mcp.ts";

describe("ledger tools over MCP stdio", () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  it("offers the v2 tools and runs edit → history → revert, conflicts as success:false, errors with codes", async () => {
    const tmp = makeTempDir("tw-ledger-mcp-");
    cleanups.push(tmp.cleanup);
    writeFileSync(join(tmp.dir, "a.ts"), "const x = 1;\nconst y = 2;\nconst x = 1;\n");
    const { client, close } = await connectMcp(tmp.dir);
    cleanups.push(close);

    const names = (await client.listTools()).tools.map((t) => t.name);
    for (const n of [
      "ApplyEditBlock",
      "ApplyWholeFileEdit",
      "ApplyRangedEdit",
      "ApplyUnifiedDiff",
      "Delete",
      "CreateDirectory",
      "ReadSnapshotDiff",
      "GetEditHistory",
      "ReverseOp",
      "CreateMilestone",
      "GetMilestones",
    ]) {
      expect(names).toContain(n);
    }

    // error case: the block occurs twice
    const ambiguous = await client.callTool({
      name: "ApplyEditBlock",
      arguments: { path: "a.ts", searchBlock: "const x = 1;", replaceBlock: "const x = 3;" },
    });
    expect(ambiguous.isError).toBe(true);
    expect(toolError(ambiguous)).toMatchObject({
      error: { code: "EDIT_BLOCK_AMBIGUOUS", data: { candidates: [1, 3] } },
    });

    const preview = await client.callTool({
      name: "ApplyRangedEdit",
      arguments: { path: "a.ts", startLine: 2, endLine: 2, content: "const y = 20;", dryRun: true },
    });
    expect(preview.structuredContent).toMatchObject({
      success: true,
      dryRun: true,
      previewDiff: expect.stringContaining("+const y = 20;"),
    });
    expect((preview.structuredContent as { snapshotId?: string }).snapshotId).toBeUndefined();

    const applied = await client.callTool({
      name: "ApplyRangedEdit",
      arguments: { path: "a.ts", startLine: 2, endLine: 2, content: "const y = 20;" },
    });
    const snapshotId = (applied.structuredContent as { snapshotId: string }).snapshotId;
    expect(snapshotId).toMatch(/^[0-9a-z]{10}$/);

    const history = await client.callTool({
      name: "GetEditHistory",
      arguments: { includeDiffs: true, fileFilter: "**/*.ts" },
    });
    expect(history.structuredContent).toMatchObject({
      success: true,
      history: [
        { id: snapshotId, tool: "ApplyRangedEdit", diff: expect.stringContaining("-const y = 2;") },
      ],
      pagination: { total: 1, hasMore: false },
    });

    writeFileSync(join(tmp.dir, "a.ts"), "const x = 1;\nconst y = 21;\nconst x = 1;\n");
    const conflict = await client.callTool({ name: "ReverseOp", arguments: { snapshotId } });
    expect(conflict.isError).toBeFalsy();
    expect(conflict.structuredContent).toMatchObject({
      success: false,
      conflicts: [expect.stringContaining("a.ts: hunk 1")],
    });
    expect(readFileSync(join(tmp.dir, "a.ts"), "utf8")).toBe(
      "const x = 1;\nconst y = 21;\nconst x = 1;\n",
    );

    const forced = await client.callTool({
      name: "ReverseOp",
      arguments: { snapshotId, force: true },
    });
    expect(forced.structuredContent).toMatchObject({
      success: true,
      newSnapshotId: expect.any(String),
    });
    expect(readFileSync(join(tmp.dir, "a.ts"), "utf8")).toBe(
      "const x = 1;\nconst y = 2;\nconst x = 1;\n",
    );

    const m = await client.callTool({
      name: "CreateMilestone",
      arguments: { title: "y", description: "tweak y", snapshotIds: [snapshotId], tags: ["t"] },
    });
    expect(m.structuredContent).toMatchObject({ success: true, milestoneId: "milestone_001" });
    const list = await client.callTool({ name: "GetMilestones", arguments: { tags: ["t"] } });
    expect(list.structuredContent).toMatchObject({
      milestones: [{ id: "milestone_001", title: "y" }],
    });

    const proposals = await client.callTool({
      name: "timewarp_milestone_proposals",
      arguments: {},
    });
    const offered = (
      proposals.structuredContent as { proposals: { id: string; snapshotIds: string[] }[] }
    ).proposals;
    // the edit is in milestone_001; only the forced revert that followed is left to propose
    expect(offered.flatMap((p) => p.snapshotIds)).toEqual([
      (forced.structuredContent as { newSnapshotId: string }).newSnapshotId,
    ]);
    const accepted = await client.callTool({
      name: "timewarp_milestone_accept",
      arguments: { proposalId: offered[0]?.id ?? "", title: "revert" },
    });
    expect(accepted.structuredContent).toMatchObject({
      success: true,
      milestoneId: "milestone_002",
    });

    const missing = await client.callTool({
      name: "ReadSnapshotDiff",
      arguments: { snapshotId: "nope" },
    });
    expect(missing.isError).toBe(true);
    expect(toolError(missing)).toMatchObject({ error: { code: "OPERATION_NOT_FOUND" } });
  });
});
