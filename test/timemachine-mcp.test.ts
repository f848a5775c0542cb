import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rememberSession, startSession } from "../src/timemachine/index.ts";
import { makeTempDir, REPO_ROOT } from "./helpers/cli.ts";
import { connectMcp, toolError } from "./helpers/mcp.ts";

type Client = Awaited<ReturnType<typeof connectMcp>>["client"];

let tmp: { dir: string; cleanup: () => void };
let client: Client;
let close: () => Promise<void>;
let snapshotId: string;

async function call(name: string, args: Record<string, unknown> = {}) {
  const r = await client.callTool({ name, arguments: args });
  return {
    isError: r.isError === true,
    body: (r.structuredContent ?? toolError(r)) as Record<string, unknown>,
    text: r.content,
  };
}

beforeAll(async () => {
  tmp = makeTempDir("tw-mcp-tm-");
  writeFileSync(join(tmp.dir, "a.txt"), "past\n");
  rememberSession({
    root: tmp.dir,
    sessionId: "7f3c2a10",
    transcriptPath: join(REPO_ROOT, "examples", "transcripts", "claude-session.jsonl"),
  });
  snapshotId = (await startSession({ root: tmp.dir, sessionId: "7f3c2a10" })).snapshot_id;
  writeFileSync(join(tmp.dir, "a.txt"), "present\n");
  ({ client, close } = await connectMcp(tmp.dir));
}, 60_000);

afterAll(async () => {
  await close?.();
  tmp?.cleanup();
});

describe("time machine tools over the real MCP stdio client", () => {
  it("lists the tools under the original plugin's names, with output schemas", async () => {
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name);
    for (const n of [
      "issue_report",
      "timewarp_issue_list",
      "timewarp_issue_get",
      "timewarp_travel",
      "timewarp_return",
      "timewarp_status",
    ]) {
      expect(names).toContain(n);
      expect(tools.find((t) => t.name === n)?.outputSchema).toBeDefined();
    }
  });

  it("runs the protocol: issue_report → list → get → travel → return(save_patch) → status", async () => {
    const rep = await call("issue_report", {
      task_context: "fix slugify",
      symptom: "three retries",
      success_criteria: "the accented test passes first time",
      chat_summary: "regexes instead of NFD",
    });
    expect(rep.isError).toBe(false);
    expect(rep.body).toMatchObject({ ok: true, snapshot_id: snapshotId, session_id: "7f3c2a10" });
    const issueId = String(rep.body.issue_id);
    expect(readFileSync(String(rep.body.chat_path), "utf8")).not.toContain("ghp_9aZ3kLmN0pQ");

    const list = await call("timewarp_issue_list");
    expect(list.body).toMatchObject({
      issues: [{ issue_id: issueId, status: "open", snapshot_id: snapshotId }],
    });
    const got = await call("timewarp_issue_get", { issue_id: issueId });
    expect(got.body).toMatchObject({
      success_criteria: "the accented test passes first time",
      snapshot_id: snapshotId,
    });
    expect(String(got.body.experiment_path)).toMatch(/experiment\.md$/);

    const t = await call("timewarp_travel", { snapshot_id: snapshotId });
    expect(t.body).toMatchObject({ mode: "past", snapshot_id: snapshotId });
    expect(readFileSync(join(tmp.dir, "a.txt"), "utf8")).toBe("past\n");
    expect((await call("timewarp_status")).body).toMatchObject({
      mode: "past",
      current_snapshot_id: snapshotId,
    });

    writeFileSync(join(tmp.dir, "a.txt"), "experiment\n");
    const back = await call("timewarp_return", { save_patch: issueId });
    expect(back.body).toMatchObject({ mode: "present", patch_files: 1 });
    expect(readFileSync(String(back.body.patch_path), "utf8")).toContain("-past\n+experiment");
    expect(readFileSync(join(tmp.dir, "a.txt"), "utf8")).toBe("present\n");
  });

  it("errors are isError results carrying the code", async () => {
    const cases: [string, Record<string, unknown>, string][] = [
      ["timewarp_return", {}, "NOT_IN_PAST"],
      ["timewarp_travel", { snapshot_id: "s_20200101_000000_zzzzzz" }, "SNAPSHOT_NOT_FOUND"],
      ["timewarp_issue_get", { issue_id: "nope" }, "INVALID_ISSUE_ID"],
      ["timewarp_issue_get", { issue_id: "i_20200101_000000_zzzzzz" }, "ISSUE_NOT_FOUND"],
      ["issue_report", { task_context: "t", symptom: "s", success_criteria: "" }, "INVALID_INPUT"],
      [
        "issue_report",
        { task_context: "t", symptom: "s", success_criteria: "c", session_id: "unknown" },
        "NO_SESSION_SNAPSHOT",
      ],
    ];
    for (const [name, args, code] of cases) {
      const r = await call(name, args);
      expect(r.isError, name).toBe(true);
      expect(r.body, `${name} ${JSON.stringify(args)}`).toMatchObject({ error: { code } });
    }
    await call("timewarp_travel", { snapshot_id: snapshotId });
    expect((await call("timewarp_travel", { snapshot_id: snapshotId })).body).toMatchObject({
      error: { code: "NESTED_TRAVEL" },
    });
    expect((await call("timewarp_return")).isError).toBe(false);
  });
});
