import { spawnSync } from "node:child_process";
import {
  cpSync,
  existsSync,
  mkdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeTempDir, REPO_ROOT, runCli } from "./helpers/cli.ts";
import { connectMcp, mcpError } from "./helpers/mcp.ts";
import { writeTranslationMemory } from "./helpers/memory-fixtures.ts";
import { copyDesign, writeFastSkillConfig } from "./runs-helpers.ts";

/**
 * Issue 7: the complete MCP server end to end. One real `timewarp mcp` over stdio, the SDK's own
 * client, one workspace in a temp dir. FLOW is the table: one row per tool call, in the order the
 * calls depend on each other (a session before issue_report, travel before return, edits before
 * history and milestones). Every tool the server lists must have rows here, at least one that
 * succeeds and one that fails — a tool added without its cases fails the first test.
 */

type Body = Record<string, unknown>;

interface Row {
  tool: string;
  /** What the row proves, for failure messages. */
  why: string;
  /**
   * `ok`: a normal result. `{ code }`: an `isError` result carrying that TimewarpError code.
   * `fail`: a normal result that reports a domain failure, as the tool's contract says
   * (ReverseOp's `success: false`, skill_run's `status: FAIL`, skill_list's `valid: false`).
   */
  expect: "ok" | "fail" | { code: string };
  before?: () => void | Promise<void>;
  args?: () => Record<string, unknown>;
  check?: (body: Body) => void | Promise<void>;
  after?: () => void;
}

/** A memory run under .timewarp/memory/runs/<id>: README.md edited, then one test run with these counts (null: no result). */
function writeMemoryRun(
  root: string,
  id: string,
  counts: { passed: number; failed: number } | null,
): void {
  const dir = join(root, ".timewarp", "memory", "runs", id);
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, "goal.json"),
    JSON.stringify({ objective: "Translate README.md to Chinese (run)", whitelist: ["README.md"] }),
  );
  const events = [
    { run_id: id, step: 0, phase: "modify", tool: "edit", where: "README.md", source: "patch" },
    {
      run_id: id,
      step: 1,
      phase: "test",
      tool: "shell",
      cmd: "pytest tests/test_docs.py",
      ...(counts !== null
        ? { result: { framework: "pytest", ...counts, skipped: 0, exit_code: null } }
        : {}),
    },
  ];
  writeFileSync(join(dir, "events.jsonl"), events.map((e) => JSON.stringify(e)).join("\n"));
}

const A_TS = [
  "const x = 1;",
  "const y = 2;",
  "const x = 1;",
  "// 4",
  "// 5",
  "// 6",
  "// 7",
  "// 8",
  "// 9",
  "// 10",
  "const w = 11;",
  "// 12",
  "",
].join("\n");
const TRANSCRIPT = join(REPO_ROOT, "examples", "transcripts", "claude-session.jsonl");
const SECRET = "ghp_9aZ3kLmN0pQrStUvWxYz1234567890AbCdEf";
const CODEX_RUN = "01a21998-a744-7621-8006-a65cb53a56f1";
const CODEX_ROLLOUT = join(
  REPO_ROOT,
  "test/fixtures/memory/import/codex",
  `rollout-2026-11-26T20-42-44-${CODEX_RUN}.jsonl`,
);

let tmp: { dir: string; cleanup: () => void };
let ws: string;
let client: Awaited<ReturnType<typeof connectMcp>>["client"];
let close: (() => Promise<void>) | undefined;

// state handed from one row to the next
let snapshotId = "";
let issueId = "";
let stateBytes = "";
const op: Record<string, string> = {};
let proposal: { id: string; snapshotIds: string[] } | undefined;
let jobId = "";
let failedJobId = "";
const STALE_JOB = "20200101_000000_1_stal";

const file = (rel: string) => join(ws, rel);
const read = (rel: string) => readFileSync(file(rel), "utf8");
const write = (rel: string, text: string) => {
  mkdirSync(join(file(rel), ".."), { recursive: true });
  writeFileSync(file(rel), text);
};
const idOf = (body: Body, key = "snapshotId") => {
  const id = body[key];
  expect(id, key).toMatch(/^[0-9a-z]{10}$/);
  return String(id);
};
const corruptMilestone = () => write(".timewarp/history/milestones/milestone_900.json", "{ nope");
const removeCorruptMilestone = () =>
  rmSync(file(".timewarp/history/milestones/milestone_900.json"));

const FLOW: Row[] = [
  // ── status, friction issues, travel / return / recover ─────────────────────────────────────
  {
    tool: "timewarp_status",
    why: "a fresh workspace is in the present with no session",
    expect: "ok",
    check: (b) => {
      expect(b).toMatchObject({
        workspace_root: realpathSync(ws),
        initialized: true,
        mode: "present",
        session_id: null,
        current_snapshot_id: null,
        lock: null,
      });
      expect(b.transition ?? null).toBeNull();
    },
  },
  {
    tool: "issue_report",
    why: "no session snapshot yet: fail immediately (seed §10)",
    expect: { code: "NO_SESSION_SNAPSHOT" },
    args: () => ({ task_context: "t", symptom: "s", success_criteria: "c" }),
  },
  {
    tool: "timewarp_status",
    why: "after `timewarp session start` the status names the session and its snapshot",
    expect: "ok",
    before: () => {
      const r = runCli(
        ["session", "start", "--session-id", "s-all", "--transcript", TRANSCRIPT, "--json"],
        { cwd: ws },
      );
      expect(r.status, r.stderr).toBe(0);
      snapshotId = String((r.json() as Body).snapshot_id);
      write("notes.txt", "present\n");
    },
    check: (b) =>
      expect(b).toMatchObject({
        mode: "present",
        session_id: "s-all",
        session_snapshot_id: snapshotId,
      }),
  },
  {
    tool: "issue_report",
    why: "links the session snapshot, exports the redacted chat and the experiment template",
    expect: "ok",
    args: () => ({
      task_context: "fix slugify",
      symptom: "three retries",
      success_criteria: "the accented test passes first time",
      chat_summary: "regexes instead of NFD",
    }),
    check: (b) => {
      expect(b).toMatchObject({ ok: true, snapshot_id: snapshotId, session_id: "s-all" });
      issueId = String(b.issue_id);
      expect(issueId).toMatch(/^i_\d{8}_\d{6}_[0-9a-z]{6}$/);
      const chat = readFileSync(String(b.chat_path), "utf8");
      expect(chat).toContain("Crème brûlée");
      expect(chat).not.toContain(SECRET);
      expect(existsSync(String(b.experiment_path))).toBe(true);
    },
  },
  {
    tool: "issue_report",
    why: "success_criteria is required to be non-empty",
    expect: { code: "INVALID_INPUT" },
    args: () => ({ task_context: "t", symptom: "s", success_criteria: "" }),
  },
  {
    tool: "issue_report",
    why: "an unknown session id has no snapshot",
    expect: { code: "NO_SESSION_SNAPSHOT" },
    args: () => ({ task_context: "t", symptom: "s", success_criteria: "c", session_id: "nobody" }),
  },
  {
    tool: "timewarp_issue_list",
    why: "the reported issue is listed, open",
    expect: "ok",
    check: (b) =>
      expect(b).toEqual({
        issues: [
          expect.objectContaining({
            issue_id: issueId,
            status: "open",
            snapshot_id: snapshotId,
            symptom: "three retries",
          }),
        ],
        corrupt: [],
      }),
  },
  {
    tool: "timewarp_issue_get",
    why: "the issue's fields and the paths of its three files",
    expect: "ok",
    args: () => ({ issue_id: issueId }),
    check: (b) => {
      expect(b).toMatchObject({
        issue_id: issueId,
        success_criteria: "the accented test passes first time",
        chat_summary: "regexes instead of NFD",
        snapshot_id: snapshotId,
      });
      expect(JSON.parse(readFileSync(String(b.issue_path), "utf8"))).toMatchObject({
        issue_id: issueId,
      });
      expect(String(b.experiment_path)).toMatch(/experiment\.md$/);
    },
  },
  {
    tool: "timewarp_issue_get",
    why: "arguments the input schema rejects are INVALID_INPUT naming the field, not a bare SDK message",
    expect: { code: "INVALID_INPUT" },
    args: () => ({}),
    check: (b) => {
      expect(b).toMatchObject({ error: { data: { tool: "timewarp_issue_get" } } });
      expect(JSON.stringify(b)).toContain("issue_id");
    },
  },
  {
    tool: "GetEditHistory",
    why: "a limit below the schema's minimum is INVALID_INPUT",
    expect: { code: "INVALID_INPUT" },
    args: () => ({ limit: 0 }),
  },
  {
    tool: "timewarp_issue_get",
    why: "a malformed issue id",
    expect: { code: "INVALID_ISSUE_ID" },
    args: () => ({ issue_id: "nope" }),
  },
  {
    tool: "timewarp_issue_get",
    why: "a well-formed id with no issue folder",
    expect: { code: "ISSUE_NOT_FOUND" },
    args: () => ({ issue_id: "i_20200101_000000_zzzzzz" }),
  },
  {
    tool: "timewarp_travel",
    why: "an unknown snapshot",
    expect: { code: "SNAPSHOT_NOT_FOUND" },
    args: () => ({ snapshot_id: "s_20200101_000000_zzzzzz" }),
  },
  {
    tool: "timewarp_return",
    why: "return while in the present",
    expect: { code: "NOT_IN_PAST" },
  },
  {
    tool: "timewarp_travel",
    why: "restores the session snapshot and backs the present up",
    expect: "ok",
    args: () => ({ snapshot_id: snapshotId }),
    check: (b) => {
      expect(b).toMatchObject({ mode: "past", snapshot_id: snapshotId });
      // what neither the snapshot nor the backup captured is reported, as the CLI does
      expect(b).toMatchObject({ untouched: [], left_alone: [] });
      expect(read("notes.txt")).toBe("past\n");
      expect(statSync(String(b.backup_path)).isDirectory()).toBe(true);
    },
  },
  {
    tool: "timewarp_status",
    why: "in the past at the snapshot",
    expect: "ok",
    check: (b) => expect(b).toMatchObject({ mode: "past", current_snapshot_id: snapshotId }),
  },
  {
    tool: "timewarp_travel",
    why: "travel from the past",
    expect: { code: "NESTED_TRAVEL" },
    args: () => ({ snapshot_id: snapshotId }),
  },
  {
    tool: "timewarp_return",
    why: "brings the present back and keeps the experiment as a patch",
    expect: "ok",
    before: () => write("notes.txt", "experiment\n"),
    args: () => ({ save_patch: issueId }),
    check: (b) => {
      expect(b).toMatchObject({ mode: "present", snapshot_id: snapshotId, patch_files: 1 });
      expect(readFileSync(String(b.patch_path), "utf8")).toContain("-past\n+experiment");
      expect(read("notes.txt")).toBe("present\n");
    },
  },
  {
    tool: "timewarp_recover",
    why: "nothing was interrupted",
    expect: { code: "NOTHING_TO_RECOVER" },
  },
  {
    tool: "timewarp_status",
    why: "a travel killed (-9) after its restore left a journal",
    expect: "ok",
    before: () => {
      const r = runCli(["travel", snapshotId, "--json"], {
        cwd: ws,
        env: { TIMEWARP_CRASH_AT: "travel:restored:1" },
      });
      expect(r.status, "the travel must have died").not.toBe(0);
    },
    check: (b) =>
      expect(b).toMatchObject({
        mode: "present",
        // The whole journal, the writer's pid included, as state.json holds it.
        transition: {
          kind: "travel",
          phase: "restore",
          snapshot_id: snapshotId,
          pid: expect.any(Number),
        },
      }),
  },
  {
    tool: "timewarp_travel",
    why: "every command but recover refuses while a journal is open",
    expect: { code: "TRANSITION_INTERRUPTED" },
    args: () => ({ snapshot_id: snapshotId }),
  },
  {
    tool: "timewarp_issue_list",
    why: "listing issues also waits for recover",
    expect: { code: "TRANSITION_INTERRUPTED" },
  },
  {
    tool: "timewarp_recover",
    why: "finishes the interrupted travel: fully in the past",
    expect: "ok",
    check: (b) => {
      expect(b).toMatchObject({
        outcome: "travel_finished",
        mode: "past",
        snapshot_id: snapshotId,
        transition: { kind: "travel", snapshot_id: snapshotId },
      });
      expect(read("notes.txt")).toBe("past\n");
    },
  },
  {
    tool: "timewarp_return",
    why: "the backup the killed travel made brings the present back",
    expect: "ok",
    check: (b) => {
      expect(b).toMatchObject({ mode: "present", patch_path: null });
      expect(read("notes.txt")).toBe("present\n");
    },
  },
  {
    tool: "timewarp_status",
    why: "a hand-broken state.json",
    expect: { code: "CORRUPT_FILE" },
    before: () => {
      stateBytes = read(".timewarp/state.json");
      write(".timewarp/state.json", '{"mode":"sideways"}');
    },
    after: () => write(".timewarp/state.json", stateBytes),
  },

  // ── the edit ledger ────────────────────────────────────────────────────────────────────────
  {
    tool: "ApplyEditBlock",
    why: "the search block occurs twice",
    expect: { code: "EDIT_BLOCK_AMBIGUOUS" },
    before: () => write("src/a.ts", A_TS),
    args: () => ({ path: "src/a.ts", searchBlock: "const x = 1;", replaceBlock: "const x = 3;" }),
    check: (b) => {
      expect(b).toMatchObject({ error: { data: { candidates: [1, 3] } } });
      expect(read("src/a.ts")).toBe(A_TS);
    },
  },
  {
    tool: "ApplyEditBlock",
    why: "the search block occurs nowhere",
    expect: { code: "EDIT_BLOCK_NOT_FOUND" },
    args: () => ({ path: "src/a.ts", searchBlock: "const z = 9;", replaceBlock: "" }),
  },
  {
    tool: "ApplyEditBlock",
    why: "replaces the one occurrence and records it",
    expect: "ok",
    args: () => ({ path: "src/a.ts", searchBlock: "const y = 2;", replaceBlock: "const y = 20;" }),
    check: (b) => {
      expect(b).toMatchObject({ success: true, affectedFiles: ["src/a.ts"] });
      op.edit = idOf(b);
      expect(read("src/a.ts")).toBe(A_TS.replace("const y = 2;", "const y = 20;"));
    },
  },
  {
    tool: "ApplyWholeFileEdit",
    why: "both content and contentBase64",
    expect: { code: "INVALID_INPUT" },
    args: () => ({ path: "docs/new.md", content: "a", contentBase64: "Yg==" }),
    check: () => expect(existsSync(file("docs/new.md"))).toBe(false),
  },
  {
    tool: "ApplyWholeFileEdit",
    why: "a path outside the workspace",
    expect: { code: "UNSAFE_PATH" },
    args: () => ({ path: "../escape.txt", content: "x" }),
    check: () => expect(existsSync(join(ws, "..", "escape.txt"))).toBe(false),
  },
  {
    tool: "ApplyWholeFileEdit",
    why: "creates a file from base64 bytes",
    expect: "ok",
    args: () => ({
      path: "docs/new.md",
      contentBase64: Buffer.from("hello\n").toString("base64"),
    }),
    check: (b) => {
      expect(b).toMatchObject({ success: true, previewDiff: expect.stringContaining("+hello") });
      op.whole = idOf(b);
      expect(read("docs/new.md")).toBe("hello\n");
    },
  },
  {
    tool: "ApplyRangedEdit",
    why: "a range past the end of the file",
    expect: { code: "RANGE_INVALID" },
    args: () => ({ path: "src/a.ts", startLine: 20, endLine: 21, content: "x" }),
  },
  {
    tool: "ApplyRangedEdit",
    why: "dryRun previews without writing or recording",
    expect: "ok",
    args: () => ({
      path: "src/a.ts",
      startLine: 11,
      endLine: 11,
      content: "const w = 110;",
      dryRun: true,
    }),
    check: (b) => {
      expect(b).toMatchObject({ success: true, dryRun: true });
      expect(b.previewDiff).toContain("-const w = 11;\n+const w = 110;");
      expect(b.snapshotId).toBeUndefined();
      expect(read("src/a.ts")).toContain("const w = 11;\n");
    },
  },
  {
    tool: "ApplyRangedEdit",
    why: "replaces line 11 and records it",
    expect: "ok",
    args: () => ({ path: "src/a.ts", startLine: 11, endLine: 11, content: "const w = 110;" }),
    check: (b) => {
      op.ranged = idOf(b);
      expect(read("src/a.ts").split("\n")[10]).toBe("const w = 110;");
    },
  },
  {
    tool: "ApplyUnifiedDiff",
    why: "a hunk whose context is not in the file: nothing changes",
    expect: { code: "DIFF_APPLY_CONFLICT" },
    args: () => ({
      diff: "--- a/docs/new.md\n+++ b/docs/new.md\n@@ -1 +1 @@\n-goodbye\n+hello world\n",
    }),
    check: (b) => {
      expect(JSON.stringify(b)).toContain("docs/new.md");
      expect(read("docs/new.md")).toBe("hello\n");
    },
  },
  {
    tool: "ApplyUnifiedDiff",
    why: "applies a diff as one recorded operation",
    expect: "ok",
    args: () => ({
      diff: "--- a/docs/new.md\n+++ b/docs/new.md\n@@ -1 +1 @@\n-hello\n+hello world\n",
    }),
    check: (b) => {
      expect(b).toMatchObject({ success: true, affectedFiles: ["docs/new.md"] });
      op.diff = idOf(b);
      expect(read("docs/new.md")).toBe("hello world\n");
    },
  },
  {
    tool: "CreateDirectory",
    why: "a file is in the way",
    expect: { code: "NOT_A_DIRECTORY" },
    args: () => ({ path: "docs/new.md" }),
  },
  {
    tool: "CreateDirectory",
    why: "creates the directory and its parents",
    expect: "ok",
    args: () => ({ path: "build/out" }),
    check: (b) => {
      expect(b).toMatchObject({ success: true });
      op.mkdir = idOf(b);
      expect(statSync(file("build/out")).isDirectory()).toBe(true);
    },
  },
  {
    tool: "Delete",
    why: "a path that does not exist",
    expect: { code: "NOT_FOUND" },
    args: () => ({ path: "nope.txt" }),
  },
  {
    tool: "Delete",
    why: "deletes a directory with its contents",
    expect: "ok",
    args: () => ({ path: "build" }),
    check: (b) => {
      expect(b).toMatchObject({ success: true });
      op.delete = idOf(b);
      expect(existsSync(file("build"))).toBe(false);
    },
  },
  {
    tool: "ReadSnapshotDiff",
    why: "the diff the edit block made",
    expect: "ok",
    args: () => ({ snapshotId: op.edit }),
    check: (b) => {
      expect(b).toMatchObject({
        success: true,
        snapshot: { id: op.edit, tool: "ApplyEditBlock", affectedFiles: ["src/a.ts"] },
      });
      expect(b.diff).toContain("-const y = 2;\n+const y = 20;");
    },
  },
  {
    tool: "ReadSnapshotDiff",
    why: "an unknown operation",
    expect: { code: "OPERATION_NOT_FOUND" },
    args: () => ({ snapshotId: "zzzzzzzzzz" }),
  },
  {
    tool: "GetEditHistory",
    why: "newest first, filtered by a glob",
    expect: "ok",
    args: () => ({ fileFilter: "src/**", includeDiffs: true }),
    check: (b) => {
      expect(b).toMatchObject({
        success: true,
        history: [
          { id: op.ranged, tool: "ApplyRangedEdit", diff: expect.stringContaining("+const w") },
          { id: op.edit, tool: "ApplyEditBlock" },
        ],
        pagination: { total: 2, hasMore: false },
      });
      expect(b.history).toHaveLength(2);
    },
  },
  {
    tool: "GetEditHistory",
    why: "pages through every operation with the cursor",
    expect: "ok",
    args: () => ({ limit: 4 }),
    check: async (b) => {
      const all = [op.delete, op.mkdir, op.diff, op.ranged, op.whole, op.edit];
      expect(b).toMatchObject({ pagination: { total: 6, hasMore: true } });
      const first = (b.history as { id: string }[]).map((h) => h.id);
      const cursor = (b.pagination as { nextCursor?: string }).nextCursor;
      expect(cursor).toBeTypeOf("string");
      const next = await call("GetEditHistory", { limit: 4, cursor });
      expect(next.isError).toBe(false);
      const rest = (next.body.history as { id: string }[]).map((h) => h.id);
      expect([...first, ...rest]).toEqual(all);
    },
  },
  {
    tool: "GetEditHistory",
    why: "since is not an ISO time",
    expect: { code: "INVALID_INPUT" },
    args: () => ({ since: "yesterday" }),
  },
  {
    tool: "GetEditHistory",
    why: "a cursor this history never issued",
    expect: { code: "INVALID_INPUT" },
    args: () => ({ cursor: "bogus" }),
  },
  {
    tool: "ReverseOp",
    why: "the file changed since: a conflict is success:false, nothing written",
    expect: "fail",
    before: () => write("src/a.ts", read("src/a.ts").replace("const y = 20;", "const y = 21;")),
    args: () => ({ snapshotId: op.edit }),
    check: (b) => {
      expect(b).toMatchObject({
        success: false,
        conflicts: [expect.stringContaining("src/a.ts")],
      });
      expect(read("src/a.ts")).toContain("const y = 21;\n");
    },
    after: () => write("src/a.ts", read("src/a.ts").replace("const y = 21;", "const y = 20;")),
  },
  {
    tool: "ReverseOp",
    why: "an unknown operation",
    expect: { code: "OPERATION_NOT_FOUND" },
    args: () => ({ snapshotId: "zzzzzzzzzz" }),
  },
  {
    tool: "ReverseOp",
    why: "an unknown milestone",
    expect: { code: "MILESTONE_NOT_FOUND" },
    args: () => ({ snapshotId: "milestone_999" }),
  },
  {
    tool: "ReverseOp",
    why: "undoes the diff, recorded as an operation of its own",
    expect: "ok",
    args: () => ({ snapshotId: op.diff }),
    check: (b) => {
      expect(b).toMatchObject({ success: true, affectedFiles: ["docs/new.md"] });
      op.revert = idOf(b, "newSnapshotId");
      expect(read("docs/new.md")).toBe("hello\n");
    },
  },
  {
    tool: "CreateMilestone",
    why: "no operations",
    expect: { code: "INVALID_INPUT" },
    args: () => ({ title: "t", description: "d", snapshotIds: [] }),
  },
  {
    tool: "CreateMilestone",
    why: "an unknown operation",
    expect: { code: "OPERATION_NOT_FOUND" },
    args: () => ({ title: "t", description: "d", snapshotIds: ["zzzzzzzzzz"] }),
  },
  {
    tool: "CreateMilestone",
    why: "groups the two src edits with their net line counts",
    expect: "ok",
    args: () => ({
      title: "tune a.ts",
      description: "y and w",
      snapshotIds: [op.ranged, op.edit],
      tags: ["src"],
    }),
    check: (b) =>
      expect(b).toEqual({
        success: true,
        milestoneId: "milestone_001",
        summary: {
          totalOperations: 2,
          affectedFiles: ["src/a.ts"],
          linesAdded: 2,
          linesRemoved: 2,
        },
      }),
  },
  {
    tool: "GetMilestones",
    why: "the milestone with its combined diff, by tag",
    expect: "ok",
    args: () => ({ includeDiffs: true, tags: ["src"] }),
    check: (b) => {
      expect(b).toMatchObject({
        success: true,
        milestones: [
          { id: "milestone_001", title: "tune a.ts", snapshotIds: [op.edit, op.ranged] },
        ],
      });
      const [m] = b.milestones as { combinedDiff?: string }[];
      expect(m?.combinedDiff).toContain("+const y = 20;");
      expect(m?.combinedDiff).toContain("+const w = 110;");
    },
  },
  {
    tool: "GetMilestones",
    why: "a tag no milestone has",
    expect: "ok",
    args: () => ({ tags: ["nope"] }),
    check: (b) => expect(b).toEqual({ success: true, milestones: [], corrupt: [] }),
  },
  {
    tool: "GetMilestones",
    why: "a hand-broken milestone file is named in corrupt; the others are still listed",
    expect: "ok",
    before: corruptMilestone,
    check: (b) => {
      expect(b).toMatchObject({ success: true, milestones: [{ id: "milestone_001" }] });
      expect(b.corrupt).toEqual([
        {
          id: "milestone_900",
          code: "CORRUPT_FILE",
          message: expect.stringContaining("not valid JSON"),
          file: realpathSync(file(".timewarp/history/milestones/milestone_900.json")),
        },
      ]);
    },
    after: removeCorruptMilestone,
  },
  {
    tool: "GetMilestones",
    why: "tags that are not a list",
    expect: { code: "INVALID_INPUT" },
    args: () => ({ tags: "src" }),
  },
  {
    tool: "timewarp_milestone_proposals",
    why: "a hand-broken milestone file",
    expect: { code: "CORRUPT_FILE" },
    before: corruptMilestone,
    after: removeCorruptMilestone,
  },
  {
    tool: "timewarp_milestone_proposals",
    why: "proposes exactly the operations not in a milestone yet",
    expect: "ok",
    check: (b) => {
      const proposals = b.proposals as { id: string; snapshotIds: string[] }[];
      expect(proposals.length).toBeGreaterThan(0);
      expect(proposals.flatMap((p) => p.snapshotIds).sort()).toEqual(
        [op.whole, op.diff, op.mkdir, op.delete, op.revert].sort(),
      );
      proposal = proposals[0];
    },
  },
  {
    tool: "timewarp_milestone_accept",
    why: "a proposal id that is not offered",
    expect: { code: "INVALID_INPUT" },
    args: () => ({ proposalId: "p_nope" }),
  },
  {
    tool: "timewarp_milestone_accept",
    why: "turns the first proposal into a milestone",
    expect: "ok",
    args: () => ({ proposalId: proposal?.id ?? "", title: "accepted" }),
    check: (b) =>
      expect(b).toMatchObject({
        success: true,
        milestoneId: "milestone_002",
        summary: { totalOperations: proposal?.snapshotIds.length },
      }),
  },
  {
    tool: "timewarp_milestone_proposals",
    why: "the accepted operations are no longer proposed",
    expect: "ok",
    check: (b) => {
      const offered = (b.proposals as { snapshotIds: string[] }[]).flatMap((p) => p.snapshotIds);
      for (const id of proposal?.snapshotIds ?? []) expect(offered).not.toContain(id);
    },
  },

  // ── memory ─────────────────────────────────────────────────────────────────────────────────
  {
    tool: "guard_check",
    why: "no goal.json yet",
    expect: { code: "GOAL_INVALID" },
    args: () => ({ paths: ["README.md"] }),
  },
  {
    tool: "guard_check",
    why: "an edit to a blacklisted file: rollback",
    expect: "ok",
    before: () => writeTranslationMemory(ws),
    args: () => ({ paths: [file("requirements.txt")], tool: "Edit" }),
    check: (b) => {
      expect(b).toMatchObject({
        action: "rollback",
        goal_file: file(".timewarp/memory/goal.json"),
      });
      expect(b.drift_score).toBeGreaterThan(0);
      expect((b.reasons as string[]).join(" ")).toContain("requirements");
    },
  },
  {
    tool: "guard_check",
    why: "an edit inside the whitelist: ok",
    expect: "ok",
    args: () => ({ paths: ["docs/guide.md"], tool: "Write", content: "# guide" }),
    check: (b) => expect(b).toMatchObject({ action: "ok", drift_score: 0 }),
  },
  {
    tool: "guard_check",
    why: "a run that does not exist",
    expect: { code: "RUN_INVALID" },
    args: () => ({ paths: ["README.md"], run: "no-such-run" }),
  },
  {
    tool: "memory_retrieve",
    why: "finds the card and renders the guided view for a novice",
    expect: "ok",
    args: () => ({ objective: "translate the README into Chinese", user: "nina" }),
    check: (b) => {
      expect(b).toMatchObject({
        view: "guided",
        reason: "self_report=novice",
        cards: [{ pattern_id: "pc_translate_readme_chinese", uses: 1 }],
        library_size: 1,
      });
      expect((b.cards as { text: string }[])[0]?.text).toContain("### Steps");
    },
  },
  {
    tool: "memory_retrieve",
    why: "nothing relevant is an empty list, not an error",
    expect: "ok",
    args: () => ({ objective: "tune the postgres vacuum settings" }),
    check: (b) => expect(b).toMatchObject({ cards: [], library_size: 1, view: "terse" }),
  },
  {
    tool: "memory_card",
    why: "a run that does not exist",
    expect: { code: "RUN_INVALID" },
    args: () => ({ run: "no-such-run" }),
  },
  {
    tool: "memory_card",
    why: "a test with no known result: verdict unknown, no card, and why",
    expect: "fail",
    before: () => writeMemoryRun(ws, "docs-unknown", null),
    args: () => ({ run: "docs-unknown" }),
    check: (b) => {
      expect(b).toMatchObject({
        verdict: { outcome: "unknown", high_value: false },
        card: null,
        made_because: null,
      });
      expect(b.skipped).toContain("has no known result");
    },
  },
  {
    tool: "memory_card",
    why: "the tests passed after the last edit: success, and a card",
    expect: "ok",
    before: () => writeMemoryRun(ws, "docs-passed", { passed: 3, failed: 0 }),
    args: () => ({ run: "docs-passed" }),
    check: (b) =>
      expect(b).toMatchObject({
        verdict: { outcome: "success" },
        card: { pattern_id: "pc_translate_readme_chinese" }, // merged into the library's card
        made_because: "success",
        skipped: null,
      }),
  },
  {
    tool: "memory_retrieve",
    why: "a user id that is a path",
    expect: { code: "INVALID_INPUT" },
    args: () => ({ objective: "translate", user: "../etc" }),
  },
  {
    tool: "memory_import",
    why: "a real Codex rollout becomes a run directory with its steps",
    expect: "ok",
    args: () => ({ file: CODEX_ROLLOUT }),
    check: (b) => {
      expect(b).toMatchObject({
        runs: [{ run_id: CODEX_RUN, format: "codex", steps: 8, edits: 3, shell: 2, errors: 3 }],
        warnings: [],
      });
      expect(existsSync(join(ws, ".timewarp/memory/runs", CODEX_RUN, "raw/trajectory.jsonl"))).toBe(
        true,
      );
    },
  },
  {
    tool: "memory_import",
    why: "the same run again is refused without force",
    expect: { code: "RUN_EXISTS" },
    args: () => ({ file: CODEX_ROLLOUT }),
  },
  {
    tool: "memory_import",
    why: "a file in no known format",
    expect: { code: "IMPORT_FORMAT_UNKNOWN" },
    args: () => ({ file: join(REPO_ROOT, "package.json") }),
  },

  // ── SkillPilot (a real tclsh) ──────────────────────────────────────────────────────────────
  {
    tool: "skill_list",
    why: "the package's subskills, valid, with versions",
    expect: "ok",
    check: (b) => {
      const skills = b.skills as { name: string }[];
      expect(skills).toEqual(
        expect.arrayContaining([
          expect.objectContaining({
            name: "summary_health",
            source: "package",
            version: "1.0.0",
            valid: true,
            issues: [],
          }),
          expect.objectContaining({ name: "missing_report", valid: true }),
        ]),
      );
    },
  },
  {
    tool: "skill_list",
    why: "a workspace subskill with a broken contract is listed as invalid, with its issues",
    expect: "fail",
    before: () => write("subskills/broken_skill/contract.yaml", "name: [\n"),
    check: (b) => {
      const broken = (b.skills as { name: string; issues: string[] }[]).find(
        (s) => s.name === "broken_skill",
      );
      expect(broken).toMatchObject({ source: "workspace", valid: false, version: null });
      expect(broken?.issues.length).toBeGreaterThan(0);
    },
  },
  {
    tool: "skill_run",
    why: "an unknown subskill, before any run directory exists",
    expect: { code: "SKILL_NOT_FOUND" },
    args: () => ({ skill: "no_such_skill", design: "AAA" }),
    check: () => expect(existsSync(file(".skillpilot/runs"))).toBe(false),
  },
  {
    tool: "skill_run",
    why: "summary_health on AAA passes in tclsh, with metrics",
    expect: "ok",
    args: () => ({ skill: "summary_health", design: "AAA" }),
    check: (b) => {
      expect(b).toMatchObject({
        status: "PASS",
        error_type: "OK",
        skill: { name: "summary_health" },
        metrics: { cells: 1842 },
        design: { enc_path: file("AAA.enc") },
      });
      jobId = String(b.job_id);
      const summary = JSON.parse(
        readFileSync(join(String((b.evidence as Body).run_dir), "summary.json"), "utf8"),
      );
      expect(summary).toMatchObject({ job_id: jobId, status: "PASS" });
    },
  },
  {
    tool: "skill_run",
    why: "a required report is missing: a FAIL summary, not a tool error",
    expect: "fail",
    args: () => ({ skill: "missing_report", design: "./AAA.enc" }),
    check: (b) => {
      expect(b).toMatchObject({ status: "FAIL", error_type: "OUTPUT_MISSING" });
      expect(existsSync(String((b.evidence as Body).debug_bundle_dir))).toBe(true);
      failedJobId = String(b.job_id);
    },
  },
  {
    tool: "skill_show",
    why: "the job's manifest and summary",
    expect: "ok",
    args: () => ({ job_id: jobId }),
    check: (b) =>
      expect(b).toMatchObject({
        job_id: jobId,
        manifest: { job_id: jobId, status: "PASS" },
        summary: { status: "PASS", metrics: { cells: 1842 } },
      }),
  },
  {
    tool: "skill_show",
    why: "an unknown job",
    expect: { code: "JOB_NOT_FOUND" },
    args: () => ({ job_id: "nope" }),
  },
  {
    tool: "skill_compare",
    why: "a job against itself: every metric the same, with a zero delta",
    expect: "ok",
    args: () => ({ job_a: jobId, job_b: jobId }),
    check: (b) => {
      expect(b).toMatchObject({ skill: "summary_health", forced: false });
      expect(b.metrics).toEqual(
        expect.arrayContaining([
          { key: "cells", a: 1842, b: 1842, change: "same", delta: 0, relative: 0 },
        ]),
      );
      expect((b.counts as Body).changed).toBe(0);
    },
  },
  {
    tool: "skill_compare",
    why: "jobs of two skills are refused without force",
    expect: { code: "SKILL_MISMATCH" },
    args: () => ({ job_a: jobId, job_b: failedJobId }),
  },
  {
    tool: "skill_compare",
    why: "forced across two skills: the failed job has no metrics, so each is removed",
    expect: "ok",
    args: () => ({ job_a: jobId, job_b: failedJobId, force: true }),
    check: (b) => {
      expect(b.forced).toBe(true);
      expect((b.jobs as Body[]).map((j) => j.error_type)).toEqual(["OK", "OUTPUT_MISSING"]);
      expect((b.counts as Body).removed).toBeGreaterThan(0);
    },
  },
  {
    tool: "skill_compare",
    why: "an unknown job",
    expect: { code: "JOB_NOT_FOUND" },
    args: () => ({ job_a: jobId, job_b: "20200101_000000_1_abcd" }),
  },
  {
    tool: "skill_resume",
    why: "a RUNNING job whose runner and session are both gone is closed cleanly (RUNNER_GONE)",
    expect: "ok",
    before: () => {
      // the PASS job's run dir as a runner killed -9 would have left it: RUNNING, no summary
      const from = join(ws, ".skillpilot/runs", jobId);
      const to = join(ws, ".skillpilot/runs", STALE_JOB);
      cpSync(from, to, { recursive: true });
      const manifest = JSON.parse(readFileSync(join(to, "job_manifest.json"), "utf8"));
      const deadPid = spawnSync("true").pid;
      const { error_type: _e, finished_at: _f, ...rest } = manifest;
      writeFileSync(
        join(to, "job_manifest.json"),
        JSON.stringify({
          ...rest,
          job_id: STALE_JOB,
          status: "RUNNING",
          runtime: { ...manifest.runtime, pid: deadPid },
        }),
      );
      rmSync(join(to, "summary.json"));
      rmSync(join(to, "session", "runner.json"), { force: true });
    },
    args: () => ({ job_id: STALE_JOB }),
    check: (b) => {
      expect(b).toMatchObject({
        outcome: "closed",
        status: "FAIL",
        error_type: "INTERNAL_ERROR",
        detail_code: "RUNNER_GONE",
      });
      expect(existsSync(String((b.evidence as Body).debug_bundle_dir))).toBe(true);
    },
  },
  {
    tool: "skill_resume",
    why: "a PASS job is not resumable",
    expect: { code: "JOB_NOT_RESUMABLE" },
    args: () => ({ job_id: jobId }),
  },
  // ── turns and rewind ────────────────────────────────────────────────────────────────────────
  {
    tool: "timewarp_turn_list",
    why: "two prompts: each turn lists what changed after it, the shell's edit included",
    expect: "ok",
    before: () => {
      const prompt = (text: string) =>
        runCli(["hook", "user-prompt-submit", "--agent", "claude-code"], {
          cwd: ws,
          input: JSON.stringify({ session_id: "s-turns", cwd: ws, prompt: text }),
        });
      expect(prompt("first").status).toBe(0);
      write("turns.txt", "made in turn 1\n");
      expect(prompt("second").status).toBe(0);
    },
    check: (b) => {
      expect(b.session_id).toBe("s-turns");
      const turns = b.turns as { turn: number; prompt: string; files_changed: unknown[] }[];
      expect(turns.map((t) => [t.turn, t.prompt])).toEqual([
        [1, "first"],
        [2, "second"],
      ]);
      expect(turns[0]?.files_changed).toEqual([{ path: "turns.txt", change: "added" }]);
    },
  },
  {
    tool: "timewarp_turn_list",
    why: "a session id that cannot be one",
    expect: { code: "INVALID_INPUT" },
    args: () => ({ session_id: "../x" }),
  },
  {
    tool: "timewarp_rewind",
    why: "back to before turn 1: the file made after it goes, verified",
    expect: "ok",
    args: () => ({ turn: 1 }),
    check: (b) => {
      expect(b).toMatchObject({ turn: 1, dry_run: false, verified: { ok: true } });
      expect(b.changes).toEqual([{ path: "turns.txt", change: "deleted" }]);
      expect(existsSync(file("turns.txt"))).toBe(false);
    },
  },
  {
    tool: "timewarp_rewind",
    why: "a turn that was never recorded",
    expect: { code: "TURN_NOT_FOUND" },
    args: () => ({ turn: 9 }),
  },
  {
    tool: "timewarp_rewind",
    why: "undo: the file is back",
    expect: "ok",
    args: () => ({ undo: true }),
    check: () => expect(read("turns.txt")).toBe("made in turn 1\n"),
  },
  {
    tool: "timewarp_rewind",
    why: "nothing left to undo",
    expect: { code: "NOTHING_TO_UNDO" },
    args: () => ({ undo: true }),
  },
];

async function call(name: string, args: Record<string, unknown> = {}) {
  const r = await client.callTool({ name, arguments: args });
  const text = (r.content as { type: string; text?: string }[]).map((c) => c.text ?? "").join("");
  const error = mcpError(r);
  return {
    isError: r.isError === true,
    structured: r.structuredContent,
    // an error's body as the CLI's --json prints it
    body: (r.structuredContent ?? (error === undefined ? {} : { error })) as Body,
    text,
  };
}

const rowKind = (row: Row) => (typeof row.expect === "string" ? row.expect : "error");

beforeAll(async () => {
  tmp = makeTempDir("tw-mcp-all-");
  ws = tmp.dir;
  copyDesign(ws);
  write("notes.txt", "past\n");
  writeFastSkillConfig(ws);
  ({ client, close } = await connectMcp(ws));
}, 60_000);

afterAll(async () => {
  await close?.();
  tmp?.cleanup();
});

describe("every MCP tool over the real stdio server", () => {
  it("lists exactly the tools the table covers, each with a description and both schemas", async () => {
    const { tools } = await client.listTools();
    const listed = tools.map((t) => t.name).sort();
    expect(listed).toEqual([...new Set(FLOW.map((r) => r.tool))].sort());
    for (const t of tools) {
      expect(t.description?.trim().length ?? 0, t.name).toBeGreaterThan(0);
      expect(t.inputSchema, t.name).toMatchObject({ type: "object" });
      expect(t.outputSchema, t.name).toMatchObject({ type: "object" });
      expect(Object.keys(t.outputSchema?.properties ?? {}).length, t.name).toBeGreaterThan(0);
    }
  });

  it("calls every tool in one ordered flow: each succeeds and fails at least once", async () => {
    const seen = new Map<string, Set<string>>();
    for (const [i, row] of FLOW.entries()) {
      const label = `#${i} ${row.tool}: ${row.why}`;
      await row.before?.();
      const r = await call(row.tool, row.args?.() ?? {});
      if (typeof row.expect === "object") {
        expect(r.isError, `${label} → ${r.text}`).toBe(true);
        expect(r.body, label).toMatchObject({ error: { code: row.expect.code } });
        // never structured content: it would have to match the tool's output schema (issue 17)
        expect(r.structured, label).toBeUndefined();
        expect(r.text, label).toMatch(new RegExp(`^${row.expect.code}: `));
      } else {
        expect(r.isError, `${label} → ${r.text}`).toBe(false);
        expect(JSON.parse(r.text), label).toEqual(r.body);
      }
      await row.check?.(r.body);
      row.after?.();
      const kinds = seen.get(row.tool) ?? new Set<string>();
      kinds.add(rowKind(row));
      seen.set(row.tool, kinds);
    }
    // every tool was shown to work and shown to refuse (an error code, or a domain failure)
    for (const [tool, kinds] of seen) {
      expect(kinds.has("ok"), `${tool} has a successful call`).toBe(true);
      expect(kinds.has("error") || kinds.has("fail"), `${tool} has an error case`).toBe(true);
    }
  }, 90_000);
});
