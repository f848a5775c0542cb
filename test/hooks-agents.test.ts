import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { makeTempDir } from "./helpers/cli.ts";
import { hook, imageText, ledgerRecords } from "./hooks-helpers.ts";

let dir: string;
let cleanup: () => void;
beforeEach(() => {
  ({ dir, cleanup } = makeTempDir("tw-hooks-agents-"));
  mkdirSync(join(dir, "pkg"));
  writeFileSync(join(dir, "pkg", "a.py"), "def f():\n    return 1\n");
  writeFileSync(join(dir, "pkg", "old.py"), "GONE = True\n");
});
afterEach(() => cleanup());

describe("timewarp hook (Gemini CLI and Codex payloads, real CLI)", () => {
  it("Gemini CLI: BeforeTool/AfterTool of write_file (no tool_use_id, relative path) record the edit", () => {
    // Gemini sends no tool_use_id: the two events pair through their identical tool_input.
    const call = {
      session_id: "gemini-7f3c",
      transcript_path: join(dir, "chat.json"),
      cwd: join(dir, "pkg"),
      timestamp: "2026-11-23T08:00:00.000Z",
      tool_name: "write_file",
      tool_input: { file_path: "a.py", content: "def f():\n    return 2\n" },
    };
    // Gemini CLI tells its hooks the project root; the agent's cwd is a subdirectory of it.
    const env = { GEMINI_PROJECT_DIR: dir };
    expect(
      hook("pre-tool-use", { ...call, hook_event_name: "BeforeTool" }, dir, { env }).status,
    ).toBe(0);
    writeFileSync(join(dir, "pkg", "a.py"), "def f():\n    return 2\n");
    const post = hook(
      "post-tool-use",
      {
        ...call,
        hook_event_name: "AfterTool",
        tool_response: { llmContent: "ok", returnDisplay: "ok" },
      },
      dir,
      { env },
    );
    expect(post.status).toBe(0);
    const [record, ...rest] = ledgerRecords(dir);
    expect(rest).toEqual([]);
    expect(record?.tool).toBe("write_file");
    expect(record?.affectedFiles).toEqual(["pkg/a.py"]);
    expect(imageText(dir, record?.files[0]?.before ?? null)).toBe("def f():\n    return 1\n");
    expect(imageText(dir, record?.files[0]?.after ?? null)).toBe("def f():\n    return 2\n");
  });

  it("Gemini CLI: a drift warning goes to the user at BeforeTool and to the model at the matching AfterTool, once", () => {
    mkdirSync(join(dir, ".timewarp", "memory"), { recursive: true });
    writeFileSync(
      join(dir, ".timewarp", "memory", "goal.json"),
      JSON.stringify({
        objective: "x",
        whitelist: ["docs/**"],
        checkpoints: [],
        weights: { scope: 0.5, plan: 1, test: 0.2, evidence: 0.1 },
        thresholds: { warn: 0.4, rollback: 0.9 },
      }),
    );
    const gemini = { args: ["--agent", "gemini"] };
    const call = {
      session_id: "g2",
      cwd: dir,
      tool_name: "replace",
      tool_input: { file_path: "pkg/a.py", old_string: "1", new_string: "3" },
    };
    const run = hook("pre-tool-use", { ...call, hook_event_name: "BeforeTool" }, dir, gemini);
    expect(run.status).toBe(0);
    const out = JSON.parse(run.stdout) as { systemMessage: string };
    expect(out.systemMessage).toContain("pkg/a.py is not in the whitelist");
    writeFileSync(join(dir, "pkg", "a.py"), "def f():\n    return 3\n");
    // Another call's AfterTool (no capture of its own) gets nothing of this warning.
    const other = hook(
      "post-tool-use",
      { ...call, hook_event_name: "AfterTool", tool_input: { file_path: "pkg/b.py" } },
      dir,
      gemini,
    );
    expect(other.stdout).not.toContain("whitelist");
    const after = { ...call, hook_event_name: "AfterTool", tool_response: { llmContent: "ok" } };
    const post = hook("post-tool-use", after, dir, gemini);
    expect(post.status).toBe(0);
    // BeforeTool has no context field: AfterTool's additionalContext is how the model learns it;
    // the user saw the systemMessage already.
    expect(JSON.parse(post.stdout)).toEqual({
      hookSpecificOutput: {
        hookEventName: "AfterTool",
        additionalContext: expect.stringContaining("pkg/a.py is not in the whitelist"),
      },
    });
    expect(ledgerRecords(dir).map((r) => r.affectedFiles)).toEqual([["pkg/a.py"]]);
    // Delivered once: the same call's AfterTool again says nothing more.
    expect(hook("post-tool-use", after, dir, gemini).stdout).not.toContain("whitelist");
  });

  it("a rollback denies the call in each agent's JSON decision form, exit 0 (Gemini CLI, Codex)", () => {
    mkdirSync(join(dir, ".timewarp", "memory"), { recursive: true });
    writeFileSync(
      join(dir, ".timewarp", "memory", "goal.json"),
      JSON.stringify({ objective: "x", whitelist: ["pkg/**"], blacklist: ["pkg/old.py"] }),
    );
    const gemini = hook(
      "pre-tool-use",
      {
        session_id: "g3",
        cwd: dir,
        hook_event_name: "BeforeTool",
        tool_name: "write_file",
        tool_input: { file_path: "pkg/old.py", content: "GONE = False\n" },
      },
      dir,
    );
    // Exit 2 shows in Gemini CLI as "Hook(s) … failed" (issue 17); the decision blocks cleanly.
    expect(gemini.status).toBe(0);
    expect(gemini.stderr).toBe("");
    const g = JSON.parse(gemini.stdout) as { decision: string; reason: string };
    expect(g.decision).toBe("deny");
    expect(g.reason).toContain("pkg/old.py");
    const codex = hook(
      "pre-tool-use",
      {
        session_id: "019a8c3e-codex",
        cwd: dir,
        turn_id: "t1",
        hook_event_name: "PreToolUse",
        tool_name: "apply_patch",
        tool_use_id: "call_B1",
        tool_input: {
          command: "*** Begin Patch\n*** Delete File: pkg/old.py\n*** End Patch\n",
        },
      },
      dir,
    );
    expect(codex.status).toBe(0);
    expect(JSON.parse(codex.stdout)).toEqual({
      hookSpecificOutput: {
        hookEventName: "PreToolUse",
        permissionDecision: "deny",
        permissionDecisionReason: expect.stringContaining("pkg/old.py"),
      },
    });
  });

  it("Codex: apply_patch with update + add + delete records one operation, every file with its exact images", () => {
    const patch = [
      "*** Begin Patch",
      "*** Update File: pkg/a.py",
      "@@ def f():",
      "-    return 1",
      "+    return 42",
      "*** Add File: pkg/new.py",
      "+NEW = 1",
      "*** Delete File: pkg/old.py",
      "*** End Patch",
      "",
    ].join("\n");
    const call = {
      session_id: "019a8c3e-codex",
      transcript_path: null,
      cwd: dir,
      model: "gpt-5-codex",
      turn_id: "t1",
      tool_name: "apply_patch",
      tool_use_id: "call_Qx1",
      tool_input: { command: patch },
    };
    expect(hook("pre-tool-use", { ...call, hook_event_name: "PreToolUse" }, dir).status).toBe(0);
    writeFileSync(join(dir, "pkg", "a.py"), "def f():\n    return 42\n");
    writeFileSync(join(dir, "pkg", "new.py"), "NEW = 1\n");
    rmSync(join(dir, "pkg", "old.py"));
    expect(
      hook(
        "post-tool-use",
        { ...call, hook_event_name: "PostToolUse", tool_response: "Success" },
        dir,
      ).status,
    ).toBe(0);
    // one call, one operation: one revert undoes the whole patch
    const records = ledgerRecords(dir);
    expect(records).toHaveLength(1);
    expect(records[0]?.tool).toBe("apply_patch");
    const byFile = new Map(records[0]?.files.map((f) => [f.newPath ?? f.oldPath, f]));
    expect([...byFile.keys()].sort()).toEqual(["pkg/a.py", "pkg/new.py", "pkg/old.py"]);
    const a = byFile.get("pkg/a.py");
    expect(imageText(dir, a?.before ?? null)).toBe("def f():\n    return 1\n");
    expect(imageText(dir, a?.after ?? null)).toBe("def f():\n    return 42\n");
    expect(byFile.get("pkg/new.py")?.before).toBeNull();
    const old = byFile.get("pkg/old.py");
    expect(old?.after).toBeNull();
    expect(imageText(dir, old?.before ?? null)).toBe("GONE = True\n");
    // The shell tool Codex reports as Bash is rescanned like Claude Code's.
    expect(readFileSync(join(dir, "pkg", "new.py"), "utf8")).toBe("NEW = 1\n");
  });
});
