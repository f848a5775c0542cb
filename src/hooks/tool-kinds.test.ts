import { describe, expect, it } from "vitest";
import type { HookPayload } from "./payload.ts";
import { editTargets, isAgentStatePath, toolKind } from "./tool-kinds.ts";

const base = { session_id: "s1", cwd: "/w" } satisfies Partial<HookPayload>;

describe("toolKind", () => {
  it("knows the edit and shell tools of all three agents", () => {
    for (const t of [
      "Edit",
      "Write",
      "NotebookEdit",
      "MultiEdit",
      "apply_patch",
      "write_file",
      "replace",
    ])
      expect(toolKind(t)).toBe("edit");
    for (const t of ["Bash", "run_shell_command", "shell", "exec_command"])
      expect(toolKind(t)).toBe("shell");
    expect(toolKind("Read")).toBe("other");
    expect(toolKind(undefined)).toBe("other");
  });
});

describe("editTargets", () => {
  it("takes Claude Code's absolute file_path and NotebookEdit's notebook_path", () => {
    expect(
      editTargets({ ...base, tool_name: "Edit", tool_input: { file_path: "/w/src/a.ts" } }, "/w"),
    ).toEqual({
      paths: ["src/a.ts"],
      outside: [],
    });
    expect(
      editTargets(
        { ...base, tool_name: "NotebookEdit", tool_input: { notebook_path: "nb.ipynb" } },
        "/w",
      ).paths,
    ).toEqual(["nb.ipynb"]);
  });

  it("resolves Gemini's relative path against the payload cwd and reports paths outside", () => {
    const p = {
      ...base,
      cwd: "/w/sub",
      tool_name: "write_file",
      tool_input: { file_path: "x.txt" },
    };
    expect(editTargets(p, "/w").paths).toEqual(["sub/x.txt"]);
    const out = { ...base, tool_name: "replace", tool_input: { file_path: "/etc/passwd" } };
    expect(editTargets(out, "/w")).toEqual({ paths: [], outside: ["/etc/passwd"] });
  });

  it("parses the files of a Codex apply_patch, as an object field or as the raw text", () => {
    const patch =
      "*** Begin Patch\n*** Update File: a.txt\n*** Move to: b.txt\n@@\n-x\n+y\n*** Add File: c.txt\n+z\n*** End Patch\n";
    expect(
      editTargets({ ...base, tool_name: "apply_patch", tool_input: { command: patch } }, "/w")
        .paths,
    ).toEqual(["a.txt", "b.txt", "c.txt"]);
    expect(
      editTargets({ ...base, tool_name: "apply_patch", tool_input: patch }, "/w").paths,
    ).toHaveLength(3);
  });

  it("tells an agent's own files (plans, settings, scratch) from other paths outside the workspace", () => {
    const home = "/home/u";
    const temp = "/tmp";
    expect(isAgentStatePath("/home/u/.claude/plans/p.md", home, temp)).toBe(true);
    expect(isAgentStatePath("/home/u/.gemini/tmp/x", home, temp)).toBe(true);
    expect(isAgentStatePath("/home/u/.codex/sessions/a", home, temp)).toBe(true);
    expect(isAgentStatePath("/home/u/.config/opencode/x", home, temp)).toBe(true);
    expect(isAgentStatePath("/tmp/scratch.py", home, temp)).toBe(true);
    expect(isAgentStatePath("/home/u/.claude", home, temp)).toBe(false);
    expect(isAgentStatePath("/home/u/.claude-other/x", home, temp)).toBe(false);
    expect(isAgentStatePath("/home/u/.bashrc", home, temp)).toBe(false);
    expect(isAgentStatePath("/srv/project/x.ts", home, temp)).toBe(false);
  });
});
