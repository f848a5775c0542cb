import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { makeTempDir, runCli } from "./helpers/cli.ts";
import { events, hook, imageText, ledgerRecords, writeGoal } from "./hooks-helpers.ts";

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

describe("timewarp hook (Claude Code payloads, real CLI): shell rescan and drift guards", () => {
  it("Bash: the stat-cache rescan catches what the shell changed and records it as one `shell` operation, undone by one revert", () => {
    writeFileSync(join(dir, "src", "old.ts"), "export const old = 1;\n");
    expect(hook("session-start", common({ source: "startup" }), dir).status).toBe(0);
    const command =
      "sed -i s/hello/hi/ src/app.ts && echo x > gen.txt && rm src/old.ts && make blob.bin";
    const call = common({
      tool_name: "Bash",
      tool_use_id: "toolu_03",
      tool_input: { command, description: "x" },
    });
    expect(hook("pre-tool-use", call, dir).status).toBe(0);
    writeFileSync(join(dir, "src", "app.ts"), "export const greeting = 'hi';\n");
    writeFileSync(join(dir, "gen.txt"), "x\n");
    rmSync(join(dir, "src", "old.ts"));
    writeFileSync(join(dir, "blob.bin"), Buffer.from([0, 1, 2, 0]));
    const post = hook(
      "post-tool-use",
      { ...call, tool_response: { stdout: "", stderr: "", interrupted: false } },
      dir,
    );
    expect(post.status).toBe(0);
    // one command, one operation with a multi-file diff (the binary file is listed, not recorded)
    const records = ledgerRecords(dir);
    expect(records.map((r) => [r.tool, [...r.affectedFiles].sort()])).toEqual([
      ["shell", ["gen.txt", "src/app.ts", "src/old.ts"]],
    ]);
    const op = records[0];
    const app = op?.files.find((f) => f.newPath === "src/app.ts");
    expect(imageText(dir, app?.before ?? null)).toBe("export const greeting = 'hello';\n");
    expect(imageText(dir, app?.after ?? null)).toBe("export const greeting = 'hi';\n");
    expect(op?.description).toBe(command);
    const shell = events(dir).find((e) => e.type === "shell.changed");
    expect(shell?.data.files).toEqual(["blob.bin", "gen.txt", "src/app.ts", "src/old.ts"]);
    expect(shell?.data.operations).toEqual([op?.id]);
    // `history show` names the tool once
    const show = runCli(["history", "show", op?.id as string, "-C", dir]);
    expect(show.status, show.stderr).toBe(0);
    expect(show.stdout).toContain(`shell: ${command}`);
    expect(show.stdout).not.toContain("shell: shell:");
    // one revert undoes the whole command
    const revert = runCli(["revert", op?.id as string, "--json", "-C", dir]);
    expect(revert.status, revert.stderr).toBe(0);
    expect(readFileSync(join(dir, "src", "app.ts"), "utf8")).toBe(
      "export const greeting = 'hello';\n",
    );
    expect(readFileSync(join(dir, "src", "old.ts"), "utf8")).toBe("export const old = 1;\n");
    expect(existsSync(join(dir, "gen.txt"))).toBe(false);
  });

  it("Bash that exits non-zero: PostToolUseFailure is wired to the same hook, and its edits are recorded", async () => {
    const { hooksFor } = await import("../src/hooks/index.ts");
    const wiring = hooksFor("claude-code", "timewarp");
    expect(wiring.PostToolUseFailure).toEqual(wiring.PostToolUse);
    expect(hook("session-start", common({ source: "startup" }), dir).status).toBe(0);
    const call = common({
      tool_name: "Bash",
      tool_use_id: "toolu_fail",
      tool_input: { command: "npx eslint --fix src && npm test", description: "lint, test" },
    });
    expect(hook("pre-tool-use", call, dir).status).toBe(0);
    writeFileSync(join(dir, "src", "app.ts"), 'export const greeting = "hello";\n');
    // Claude Code's failure payload: `error` instead of `tool_response`.
    const post = hook(
      "post-tool-use",
      { ...call, hook_event_name: "PostToolUseFailure", error: "Exit code 1", is_interrupt: false },
      dir,
    );
    expect(post.status).toBe(0);
    const records = ledgerRecords(dir);
    expect(records.map((r) => [r.tool, r.affectedFiles])).toEqual([["shell", ["src/app.ts"]]]);
    expect(imageText(dir, records[0]?.files[0]?.after ?? null)).toBe(
      'export const greeting = "hello";\n',
    );
  });

  it("drift guards: rollback denies the edit (PreToolUse JSON decision, exit 0); a warning passes with context", () => {
    writeGoal(dir);
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
    // Exit 0 with the decision: exit 2 would show as "PreToolUse:Write hook error" (issue 17).
    expect(blocked.status).toBe(0);
    expect(blocked.stderr).toBe("");
    const denied = JSON.parse(blocked.stdout) as {
      hookSpecificOutput: {
        hookEventName: string;
        permissionDecision: string;
        permissionDecisionReason: string;
      };
    };
    expect(denied.hookSpecificOutput.hookEventName).toBe("PreToolUse");
    expect(denied.hookSpecificOutput.permissionDecision).toBe("deny");
    expect(denied.hookSpecificOutput.permissionDecisionReason).toContain("package.json");
    expect(denied.hookSpecificOutput.permissionDecisionReason).toMatch(/blacklist/i);
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
    // A goal that weighs scope lightly: an edit outside the whitelist now only warns (a
    // blacklisted one is still denied, whatever the weights).
    writeGoal(dir, {
      weights: { scope: 0.5, plan: 1, test: 0.2, evidence: 0.1 },
      thresholds: { warn: 0.4, rollback: 0.9 },
    });
    const warned = hook(
      "pre-tool-use",
      common({
        tool_name: "Write",
        tool_use_id: "toolu_06",
        tool_input: { file_path: join(dir, "README.md"), content: "# x\n" },
      }),
      dir,
    );
    expect(warned.status).toBe(0);
    const out = JSON.parse(warned.stdout) as {
      hookSpecificOutput: { hookEventName: string; additionalContext: string };
    };
    expect(out.hookSpecificOutput.hookEventName).toBe("PreToolUse");
    expect(out.hookSpecificOutput.additionalContext).toContain("README.md is not in the whitelist");
    const guard = events(dir).filter((e) => e.type === "guard.checked");
    expect(guard.map((e) => e.data.action)).toEqual(["rollback", "ok", "warn"]);
  });

  it("drift guards: a Bash command that changed a blacklisted file is recorded, scored, and the model told how to undo it", () => {
    writeGoal(dir);
    writeFileSync(join(dir, "package.json"), "{}\n");
    expect(hook("session-start", common({ source: "startup" }), dir).status).toBe(0);
    const call = common({
      tool_name: "Bash",
      tool_use_id: "toolu_07",
      tool_input: { command: "npm pkg set x=1", description: "x" },
    });
    // PreToolUse cannot know what a command will touch: it passes
    expect(hook("pre-tool-use", call, dir).stdout).not.toMatch(/deny/);
    writeFileSync(join(dir, "package.json"), '{"x":"1"}\n');
    const post = hook("post-tool-use", { ...call, tool_response: { stdout: "" } }, dir);
    expect(post.status).toBe(0);
    const [op] = ledgerRecords(dir);
    expect(op?.affectedFiles).toEqual(["package.json"]);
    const out = JSON.parse(post.stdout) as {
      hookSpecificOutput: { hookEventName: string; additionalContext: string };
    };
    expect(out.hookSpecificOutput.hookEventName).toBe("PostToolUse");
    expect(out.hookSpecificOutput.additionalContext).toContain("package.json is blacklisted");
    expect(out.hookSpecificOutput.additionalContext).toContain(`timewarp revert ${op?.id}`);
    const guard = events(dir).filter((e) => e.type === "guard.checked");
    expect(guard.at(-1)?.data.action).toBe("rollback");
    // the undo it names puts the file back
    expect(runCli(["revert", op?.id as string, "-C", dir]).status).toBe(0);
    expect(readFileSync(join(dir, "package.json"), "utf8")).toBe("{}\n");
  });
});
