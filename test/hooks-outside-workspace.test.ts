import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { makeTempDir } from "./helpers/cli.ts";
import { hook, ledgerRecords, writeGoal } from "./hooks-helpers.ts";

// An edit tool aimed outside the workspace, with a goal set: the agent's own files (Claude
// Code's plans under ~/.claude, scratch files in the temp dir) pass unscored; anything else is outside the goal's reach and
// is blocked as such, never warned about as an edit "of unknown location".
let dir: string;
let home: string;
let cleanups: (() => void)[];
beforeEach(() => {
  const ws = makeTempDir("tw-hooks-outside-");
  const h = makeTempDir("tw-hooks-home-");
  dir = ws.dir;
  home = h.dir;
  cleanups = [ws.cleanup, h.cleanup];
  mkdirSync(join(dir, "src"));
  writeFileSync(join(dir, "src", "app.ts"), "export const a = 1;\n");
  writeGoal(dir);
});
afterEach(() => {
  for (const c of cleanups) c();
});

const write = (file_path: string, id: string) => ({
  session_id: "s-outside",
  cwd: dir,
  hook_event_name: "PreToolUse",
  tool_name: "Write",
  tool_use_id: id,
  tool_input: { file_path, content: "# plan\n" },
});

describe("edits outside the workspace, with a goal (real CLI)", () => {
  it("an agent's own plan file passes without a warning; another project's file is blocked as outside", () => {
    const env = { HOME: home };
    const plan = hook("pre-tool-use", write(join(home, ".claude", "plans", "p.md"), "t1"), dir, {
      args: ["--agent", "claude-code"],
      env,
    });
    expect(plan.status).toBe(0);
    expect(plan.stdout).toBe("");
    expect(plan.stderr).toBe("");

    // not under HOME's agent folders nor the temp dir (scratch files there pass too)
    const elsewhere = "/srv/other-project/x.ts";
    const blocked = hook("pre-tool-use", write(elsewhere, "t2"), dir, {
      args: ["--agent", "claude-code"],
      env,
    });
    expect(blocked.status).toBe(0);
    const decision = JSON.parse(blocked.stdout).hookSpecificOutput;
    expect(decision.permissionDecision).toBe("deny");
    expect(decision.permissionDecisionReason).toContain(`${elsewhere} is outside the workspace`);
    expect(decision.permissionDecisionReason).not.toContain("unknown");
    // nothing outside the workspace is recorded
    expect(ledgerRecords(dir)).toEqual([]);
  });
});
