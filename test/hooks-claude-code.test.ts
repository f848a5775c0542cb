import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
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

  it("Bash: the stat-cache rescan catches what the shell changed and records it as tool `shell`", () => {
    expect(hook("session-start", common({ source: "startup" }), dir).status).toBe(0);
    const call = common({
      tool_name: "Bash",
      tool_use_id: "toolu_03",
      tool_input: {
        command: "sed -i s/hello/hi/ src/app.ts && echo x > gen.txt && rm -f nothing",
        description: "x",
      },
    });
    expect(hook("pre-tool-use", call, dir).status).toBe(0);
    writeFileSync(join(dir, "src", "app.ts"), "export const greeting = 'hi';\n");
    writeFileSync(join(dir, "gen.txt"), "x\n");
    writeFileSync(join(dir, "blob.bin"), Buffer.from([0, 1, 2, 0]));
    const post = hook(
      "post-tool-use",
      { ...call, tool_response: { stdout: "", stderr: "", interrupted: false } },
      dir,
    );
    expect(post.status).toBe(0);
    const records = ledgerRecords(dir);
    expect(records.map((r) => [r.tool, r.affectedFiles])).toEqual(
      expect.arrayContaining([
        ["shell", ["src/app.ts"]],
        ["shell", ["gen.txt"]],
      ]),
    );
    expect(records).toHaveLength(2); // the binary file is listed, not put in the ledger
    const app = records.find((r) => r.affectedFiles[0] === "src/app.ts");
    expect(imageText(dir, app?.files[0]?.before ?? null)).toBe(
      "export const greeting = 'hello';\n",
    );
    expect(imageText(dir, app?.files[0]?.after ?? null)).toBe("export const greeting = 'hi';\n");
    expect(app?.description).toContain("sed -i s/hello/hi/");
    const shell = events(dir).find((e) => e.type === "shell.changed");
    expect(shell?.data.files).toEqual(["blob.bin", "gen.txt", "src/app.ts"]);
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

  it("drift guards: rollback blocks the edit (exit 2, reason on stderr); a warning passes with context", () => {
    mkdirSync(join(dir, ".timewarp", "memory"), { recursive: true });
    writeFileSync(
      join(dir, ".timewarp", "memory", "goal.json"),
      JSON.stringify({
        schema_version: 1,
        objective: "fix the greeting",
        whitelist: ["src/**"],
        blacklist: ["package.json"],
        checkpoints: [],
      }),
    );
    writeFileSync(join(dir, "package.json"), "{}\n");
    const blocked = hook(
      "pre-tool-use",
      common({
        tool_name: "Write",
        tool_use_id: "toolu_04",
        tool_input: { file_path: join(dir, "package.json"), content: '{"x":1}\n' },
      }),
      dir,
    );
    expect(blocked.status).toBe(2);
    expect(blocked.stderr).toContain("package.json");
    expect(blocked.stderr).toMatch(/blacklist/i);
    expect(
      existsSync(
        join(
          dir,
          ".timewarp",
          "hooks",
          "pending",
          "0b7e2c1a-5d0f-4c8e-9a47-3f2a1b6c9d10",
          "toolu_04.json",
        ),
      ),
    ).toBe(false);
    const inScope = hook(
      "pre-tool-use",
      common({
        tool_name: "Edit",
        tool_use_id: "toolu_05",
        tool_input: { file_path: join(dir, "src", "app.ts"), old_string: "a", new_string: "b" },
      }),
      dir,
    );
    expect(inScope.status).toBe(0);
    // A goal that weighs scope lightly: the same out-of-scope edit now only warns.
    writeFileSync(
      join(dir, ".timewarp", "memory", "goal.json"),
      JSON.stringify({
        objective: "fix the greeting",
        whitelist: ["src/**"],
        blacklist: ["package.json"],
        checkpoints: [],
        weights: { scope: 0.5, plan: 1, test: 0.2, evidence: 0.1 },
        thresholds: { warn: 0.4, rollback: 0.9 },
      }),
    );
    const warned = hook(
      "pre-tool-use",
      common({
        tool_name: "Write",
        tool_use_id: "toolu_06",
        tool_input: { file_path: join(dir, "package.json"), content: "{}\n" },
      }),
      dir,
    );
    expect(warned.status).toBe(0);
    const out = JSON.parse(warned.stdout) as {
      hookSpecificOutput: { hookEventName: string; additionalContext: string };
    };
    expect(out.hookSpecificOutput.hookEventName).toBe("PreToolUse");
    expect(out.hookSpecificOutput.additionalContext).toContain("package.json is blacklisted");
    const guard = events(dir).filter((e) => e.type === "guard.checked");
    expect(guard.map((e) => e.data.action)).toEqual(["rollback", "ok", "warn"]);
  });
});

function runRaw(event: string, input: string, cwd: string) {
  return runCli(["hook", event], { input, cwd });
}
