import {
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  truncateSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { brotliDecompressSync, gzipSync } from "node:zlib";
import { afterEach, describe, expect, it } from "vitest";
import {
  DEFAULT_EXCLUDES,
  isTimewarpError,
  readConfig,
  workspacePaths,
  writeJsonAtomic,
} from "../src/core/index.ts";
import {
  applyWholeFileEdit,
  createMilestone,
  getMilestones,
  ledgerPaths,
  readSnapshotDiff,
} from "../src/ledger/index.ts";
import { createSnapshot, readManifest, readManifestText } from "../src/store/index.ts";
import { initialState, readStatus, reportIssue, startSession } from "../src/timemachine/index.ts";
import { makeTempDir, runCli } from "./helpers/cli.ts";
import { connectMcp, toolError } from "./helpers/mcp.ts";

function errorOf(fn: () => unknown): { code: string; file: unknown } {
  try {
    fn();
  } catch (error) {
    if (!isTimewarpError(error)) throw error;
    return { code: error.code, file: error.data?.file };
  }
  throw new Error("did not throw");
}

/**
 * Every protocol file, cut short, reads as CORRUPT_FILE naming it (CONFIG_INVALID for the
 * config): never IO_ERROR, INTERNAL, or a silent reset (issue 16, class 6).
 */
describe("a truncated protocol file is CORRUPT_FILE with its path", () => {
  const cleanups: (() => void)[] = [];
  afterEach(() => {
    for (const c of cleanups.splice(0)) c();
  });

  it("manifests (brotli and gzip), snapshot.json, state.json, config, ledger records, milestones", async () => {
    const t = makeTempDir();
    cleanups.push(t.cleanup);
    const root = t.dir;
    writeFileSync(join(root, "a.txt"), "a\n");
    const paths = workspacePaths(root);
    const snap = createSnapshot(root, { excludes: [...DEFAULT_EXCLUDES], maxFileBytes: 1e9 });
    const edit = await applyWholeFileEdit({ root }, { path: "a.txt", content: "b\n" });
    const operation = edit.snapshotId ?? "";
    await createMilestone({ root }, { title: "m", description: "d", snapshotIds: [operation] });
    writeJsonAtomic(paths.state, initialState(root));
    writeFileSync(paths.config, `${JSON.stringify({ schema_version: 1 })}\n`);

    const cut = (file: string, keep = 10) => truncateSync(file, keep);
    const manifest = join(snap.dir, "manifest.json.br");
    // a record of an older version: its manifest gzip-compressed
    const gz = gzipSync(brotliDecompressSync(readFileSync(manifest)));
    writeFileSync(manifest, gz.subarray(0, gz.length - 8));
    for (const read of [() => readManifest(root, snap.id), () => readManifestText(root, snap.id)]) {
      expect(errorOf(read)).toEqual({ code: "CORRUPT_FILE", file: manifest });
    }
    cut(manifest);
    for (const read of [() => readManifest(root, snap.id), () => readManifestText(root, snap.id)]) {
      expect(errorOf(read)).toEqual({ code: "CORRUPT_FILE", file: manifest });
    }
    const record = join(snap.dir, "snapshot.json");
    cut(record);
    expect(errorOf(() => readManifest(root, snap.id))).toEqual({
      code: "CORRUPT_FILE",
      file: record,
    });
    cut(paths.state);
    expect(errorOf(() => readStatus(root))).toEqual({ code: "CORRUPT_FILE", file: paths.state });
    cut(paths.config, 5);
    expect(errorOf(() => readConfig(paths.config))).toEqual({
      code: "CONFIG_INVALID",
      file: paths.config,
    });
    const milestone = join(ledgerPaths(root).milestones, "milestone_001.json");
    cut(milestone);
    expect(getMilestones({ root }).corrupt).toEqual([
      expect.objectContaining({ id: "milestone_001", code: "CORRUPT_FILE", file: milestone }),
    ]);
    const records = ledgerPaths(root).snapshots;
    const name = readdirSync(records, { recursive: true, encoding: "utf8" }).find((n) =>
      n.endsWith(`_${operation}.json`),
    );
    const opFile = join(records, name ?? "");
    cut(opFile);
    expect(errorOf(() => readSnapshotDiff({ root }, { snapshotId: operation }))).toEqual({
      code: "CORRUPT_FILE",
      file: opFile,
    });
  });
});

/**
 * One damaged issue.json or milestone file is named in `corrupt`; the others are still listed,
 * by the CLI (exit 0) and the MCP tools alike (issue 16, class 6).
 */
describe("one damaged issue or milestone hides none of the others", () => {
  const cleanups: (() => void | Promise<void>)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  function workspace(): string {
    const t = makeTempDir("tw-corrupt-list-");
    cleanups.push(t.cleanup);
    writeFileSync(join(t.dir, "a.txt"), "a\n");
    // the CLI and the MCP server name files under the workspace's real path
    return realpathSync(t.dir);
  }

  async function mcpCall(root: string, name: string, args: Record<string, unknown>) {
    const mcp = await connectMcp(root);
    cleanups.push(mcp.close);
    const r = await mcp.client.callTool({ name, arguments: args });
    return {
      isError: r.isError === true,
      body: r.structuredContent ?? toolError(r),
      text: r.content,
    };
  }

  it("issues: `issue list` and timewarp_issue_list name the bad issue.json and list the rest", async () => {
    const root = workspace();
    await startSession({ root, sessionId: "s1" });
    const ids: string[] = [];
    for (const symptom of ["one", "two", "three", "four"]) {
      ids.push(
        (await reportIssue({ root, task_context: "t", symptom, success_criteria: "c" })).issue_id,
      );
    }
    const [good1, torn, missing, good2] = ids as [string, string, string, string];
    const issueJson = (id: string) => join(root, ".timewarp", "issues", id, "issue.json");
    truncateSync(issueJson(torn), 12);
    rmSync(issueJson(missing));
    const corrupt = [
      {
        issue_id: torn,
        code: "CORRUPT_FILE",
        message: expect.stringContaining(issueJson(torn)),
        file: issueJson(torn),
      },
      {
        issue_id: missing,
        code: "NOT_FOUND",
        message: expect.stringContaining(issueJson(missing)),
        file: issueJson(missing),
      },
    ].sort((a, b) => a.issue_id.localeCompare(b.issue_id));

    const listed = runCli(["issue", "list", "--status", "all", "--json"], { cwd: root });
    expect(listed.status, listed.stdout + listed.stderr).toBe(0);
    const doc = listed.json() as { issues: { issue_id: string }[]; corrupt: unknown[] };
    expect(doc.issues.map((i) => i.issue_id).sort()).toEqual([good1, good2].sort());
    expect(doc.corrupt).toEqual(corrupt);

    const text = runCli(["issue", "list"], { cwd: root });
    expect(text.status, text.stderr).toBe(0);
    expect(text.stdout).toContain(good1);
    expect(text.stdout).toContain(
      `warning: issue ${torn} does not read (CORRUPT_FILE): ${issueJson(torn)}`,
    );
    expect(text.stdout).toContain(
      `warning: issue ${missing} does not read (NOT_FOUND): ${issueJson(missing)}`,
    );

    const mcp = await mcpCall(root, "timewarp_issue_list", { status: "all" });
    expect(mcp.isError, JSON.stringify(mcp.text)).toBe(false);
    const body = mcp.body as { issues: { issue_id: string }[]; corrupt: unknown[] };
    expect(body.issues.map((i) => i.issue_id).sort()).toEqual([good1, good2].sort());
    expect(body.corrupt).toEqual(corrupt);
  }, 60_000);

  it("milestones: `milestone list` and GetMilestones name the bad file and list the rest", async () => {
    const root = workspace();
    const ops: string[] = [];
    for (const content of ["b\n", "c\n", "d\n"]) {
      ops.push((await applyWholeFileEdit({ root }, { path: "a.txt", content })).snapshotId ?? "");
    }
    for (const [i, op] of ops.entries()) {
      await createMilestone({ root }, { title: `m${i + 1}`, description: "d", snapshotIds: [op] });
    }
    const file = join(ledgerPaths(root).milestones, "milestone_002.json");
    truncateSync(file, 10);
    const corrupt = [
      {
        id: "milestone_002",
        code: "CORRUPT_FILE",
        message: expect.stringContaining(file),
        file,
      },
    ];

    const listed = runCli(["milestone", "list", "--json"], { cwd: root });
    expect(listed.status, listed.stdout + listed.stderr).toBe(0);
    const doc = listed.json() as { milestones: { id: string }[]; corrupt: unknown[] };
    expect(doc.milestones.map((m) => m.id)).toEqual(["milestone_001", "milestone_003"]);
    expect(doc.corrupt).toEqual(corrupt);

    const text = runCli(["milestone", "list"], { cwd: root });
    expect(text.status, text.stderr).toBe(0);
    expect(text.stdout).toContain("milestone_003 m3");
    expect(text.stdout).toContain(`warning: milestone_002 does not read (CORRUPT_FILE): ${file}`);

    const mcp = await mcpCall(root, "GetMilestones", {});
    expect(mcp.isError, JSON.stringify(mcp.text)).toBe(false);
    expect(mcp.body).toMatchObject({
      success: true,
      milestones: [{ id: "milestone_001" }, { id: "milestone_003" }],
    });
    expect((mcp.body as { corrupt: unknown }).corrupt).toEqual(corrupt);
  }, 60_000);
});
