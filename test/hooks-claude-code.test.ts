import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { workspacePaths } from "../src/core/index.ts";
import { readStatus } from "../src/timemachine/index.ts";
import { makeTempDir, runCli } from "./helpers/cli.ts";
import { events, hook, imageText, ledgerRecords } from "./hooks-helpers.ts";

// Payloads shaped as Claude Code sends them (hooks reference: common fields + per-event fields).
let dir: string;
let cleanup: () => void;
beforeEach(() => {
  ({ dir, cleanup } = makeTempDir("tw-hooks-cc-"));
  mkdirSync(join(dir, "src"));
  writeFileSync(join(dir, "src", "app.ts"), "export const greeting = 'hello';\n");
});
afterEach(() => cleanup());

const common = (extra: Record<string, unknown>) => ({
  session_id: "0b7e2c1a-5d0f-4c8e-9a47-3f2a1b6c9d10",
  transcript_path: "/home/u/.claude/projects/p/0b7e2c1a.jsonl",
  cwd: dir,
  permission_mode: "default",
  ...extra,
});

describe("timewarp hook (Claude Code payloads, real CLI)", () => {
  it("SessionStart takes the session snapshot and remembers the transcript for issue_report", () => {
    const run = hook(
      "session-start",
      common({ hook_event_name: "SessionStart", source: "startup", model: "x" }),
      dir,
    );
    expect(run.status).toBe(0);
    expect(run.stdout).toBe("");
    const status = readStatus(dir);
    expect(status.session_id).toBe("0b7e2c1a-5d0f-4c8e-9a47-3f2a1b6c9d10");
    expect(status.session_snapshot_id).toMatch(/^s_/);
    expect(readdirSync(workspacePaths(dir).snapshots)).toEqual([status.session_snapshot_id]);
    const session = JSON.parse(
      readFileSync(
        join(workspacePaths(dir).sessions, "0b7e2c1a-5d0f-4c8e-9a47-3f2a1b6c9d10.json"),
        "utf8",
      ),
    ) as { transcript_path: string; snapshot_id: string };
    expect(session.transcript_path).toBe("/home/u/.claude/projects/p/0b7e2c1a.jsonl");
    expect(session.snapshot_id).toBe(status.session_snapshot_id);
  });

  it("SessionEnd marks the session ended, drops its scratch and records session.ended", () => {
    const id = "0b7e2c1a-5d0f-4c8e-9a47-3f2a1b6c9d10";
    expect(
      hook("session-start", common({ hook_event_name: "SessionStart", source: "startup" }), dir)
        .status,
    ).toBe(0);
    // A PreToolUse whose PostToolUse never came leaves a pending pre-image behind.
    const pre = common({
      hook_event_name: "PreToolUse",
      tool_name: "Write",
      tool_input: { file_path: join(dir, "src", "app.ts"), content: "x" },
      tool_use_id: "toolu_1",
    });
    expect(hook("pre-tool-use", pre, dir).status).toBe(0);
    const pending = join(workspacePaths(dir).data, "hooks", "pending");
    expect(readdirSync(pending)).toHaveLength(1);
    const run = hook(
      "session-end",
      common({ hook_event_name: "SessionEnd", reason: "logout" }),
      dir,
    );
    expect(run.status).toBe(0);
    expect(readdirSync(pending)).toEqual([]);
    const session = JSON.parse(
      readFileSync(join(workspacePaths(dir).sessions, `${id}.json`), "utf8"),
    ) as { ended_at: string | null };
    expect(session.ended_at).toEqual(expect.any(String));
    expect(
      events(dir)
        .filter((e) => e.type === "session.ended")
        .map((e) => e.data),
    ).toEqual([{ session_id: id, reason: "logout" }]);
  });

  it("SessionStart again under the same id (`--continue`/`--resume`) keeps the session's snapshot and records the resume", () => {
    const id = "0b7e2c1a-5d0f-4c8e-9a47-3f2a1b6c9d10";
    const file = join(workspacePaths(dir).sessions, `${id}.json`);
    const record = () =>
      JSON.parse(readFileSync(file, "utf8")) as {
        snapshot_id: string;
        started_at: string;
        ended_at: string | null;
        resumed_at?: string[];
      };
    expect(hook("session-start", common({ source: "startup" }), dir).status).toBe(0);
    const first = readStatus(dir).session_snapshot_id as string;
    const startedAt = record().started_at;
    expect(hook("session-end", common({ reason: "prompt_input_exit" }), dir).status).toBe(0);
    expect(record().ended_at).toEqual(expect.any(String));
    writeFileSync(join(dir, "src", "app.ts"), "export const greeting = 'changed';\n");
    for (const source of ["resume", "startup"]) {
      const run = hook("session-start", common({ source }), dir, { args: ["--json"] });
      expect(run.status).toBe(0);
      expect((run.json() as { summary: string }).summary).toContain(`resumed: snapshot ${first}`);
    }
    // no new snapshot, and the first one is still there
    expect(readdirSync(workspacePaths(dir).snapshots)).toEqual([first]);
    expect(readStatus(dir)).toMatchObject({ session_id: id, session_snapshot_id: first });
    expect(record()).toMatchObject({ snapshot_id: first, started_at: startedAt, ended_at: null });
    expect(record().resumed_at).toHaveLength(2);
    expect(events(dir).filter((e) => e.type === "session.resumed")).toHaveLength(2);
  });

  it("SessionEnd for a session that never started (`claude mcp list`) writes nothing and leaves the others alone", () => {
    // in a directory without a store: none is made
    const end = (cwd: string) =>
      hook(
        "session-end",
        {
          session_id: "5f1d0c2e-never-started",
          cwd,
          hook_event_name: "SessionEnd",
          reason: "other",
        },
        cwd,
        { args: ["--json"] },
      );
    const bare = end(dir);
    expect(bare.status).toBe(0);
    expect(bare.stderr).toBe("");
    expect((bare.json() as { kind: string }).kind).toBe("ok");
    expect(readdirSync(dir).sort()).toEqual(["src"]);
    // beside a live session: its record, its scratch and the bus stay as they were
    expect(hook("session-start", common({ source: "startup" }), dir).status).toBe(0);
    const pre = common({
      tool_name: "Write",
      tool_input: { file_path: join(dir, "src", "app.ts"), content: "x" },
      tool_use_id: "toolu_1",
    });
    expect(hook("pre-tool-use", pre, dir).status).toBe(0);
    const pending = join(workspacePaths(dir).data, "hooks", "pending");
    const before = {
      sessions: readdirSync(workspacePaths(dir).sessions),
      pending: readdirSync(pending),
      events: events(dir).length,
    };
    const inWorkspace = end(dir);
    expect(inWorkspace.status).toBe(0);
    expect(inWorkspace.stderr).toBe("");
    expect({
      sessions: readdirSync(workspacePaths(dir).sessions),
      pending: readdirSync(pending),
      events: events(dir).length,
    }).toEqual(before);
    expect(readStatus(dir).session_id).toBe("0b7e2c1a-5d0f-4c8e-9a47-3f2a1b6c9d10");
  });

  it("Edit: PreToolUse keeps the pre-image, PostToolUse records the exact before/after in the ledger", () => {
    const before = readFileSync(join(dir, "src", "app.ts"), "utf8");
    const call = common({
      tool_name: "Edit",
      tool_use_id: "toolu_01ABC",
      tool_input: {
        file_path: join(dir, "src", "app.ts"),
        old_string: "hello",
        new_string: "bonjour",
      },
    });
    const pre = hook("pre-tool-use", { ...call, hook_event_name: "PreToolUse" }, dir);
    expect(pre.status).toBe(0);
    expect(pre.stderr).toBe("");
    // Claude Code's Edit tool runs between the two hooks.
    writeFileSync(join(dir, "src", "app.ts"), before.replace("hello", "bonjour"));
    const post = hook(
      "post-tool-use",
      {
        ...call,
        hook_event_name: "PostToolUse",
        tool_response: { filePath: join(dir, "src", "app.ts"), success: true },
      },
      dir,
    );
    expect(post.status).toBe(0);
    const [record, ...more] = ledgerRecords(dir);
    expect(more).toEqual([]);
    expect(record?.tool).toBe("Edit");
    expect(record?.affectedFiles).toEqual(["src/app.ts"]);
    expect(record?.context.sessionId).toBe("0b7e2c1a-5d0f-4c8e-9a47-3f2a1b6c9d10");
    expect(imageText(dir, record?.files[0]?.before ?? null)).toBe(before);
    expect(imageText(dir, record?.files[0]?.after ?? null)).toBe(
      "export const greeting = 'bonjour';\n",
    );
    expect(record?.diff).toContain("-export const greeting = 'hello';");
    // The pending capture was consumed.
    expect(
      readdirSync(
        join(workspacePaths(dir).data, "hooks", "pending", "0b7e2c1a-5d0f-4c8e-9a47-3f2a1b6c9d10"),
      ),
    ).toEqual([]);
  });

  it("Write of a new file records a creation (no pre-image)", () => {
    const call = common({
      tool_name: "Write",
      tool_use_id: "toolu_02",
      tool_input: { file_path: join(dir, "src", "new.ts"), content: "export {};\n" },
    });
    expect(hook("pre-tool-use", call, dir).status).toBe(0);
    writeFileSync(join(dir, "src", "new.ts"), "export {};\n");
    expect(hook("post-tool-use", call, dir).status).toBe(0);
    const [record] = ledgerRecords(dir);
    expect(record?.files[0]).toMatchObject({ oldPath: null, newPath: "src/new.ts", before: null });
    expect(imageText(dir, record?.files[0]?.after ?? null)).toBe("export {};\n");
  });

  it("a malformed payload exits 0 with a message and a hook.failed event, never a block", () => {
    mkdirSync(join(dir, ".timewarp"));
    const bad = hook("pre-tool-use", { cwd: dir, tool_name: "Edit" }, dir); // no session_id
    expect(bad.status).toBe(0);
    expect(bad.stderr).toContain("session_id");
    const notJson = runRaw("post-tool-use", "{not json", dir);
    expect(notJson.status).toBe(0);
    expect(notJson.stderr).toContain("not valid JSON");
    // A stale or foreign wiring (unknown event, unknown flag) must not block either: commander's
    // usage error would exit 2, which the agent reads as "block".
    const stale = runCli(["hook", "stop", "--matcher", "x"], { input: "{}", cwd: dir });
    expect(stale.status).toBe(0);
    expect(stale.stderr).toContain('unknown hook event "stop"');
    const failed = events(dir).filter((e) => e.type === "hook.failed");
    expect(failed.map((e) => e.data.event)).toEqual(["pre-tool-use", "post-tool-use", "stop"]);
  });
});

function runRaw(event: string, input: string, cwd: string) {
  return runCli(["hook", event], { input, cwd });
}
