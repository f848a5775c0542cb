import { describe, expect, it } from "vitest";
import { formatHookResponse } from "./hook-outcome.ts";

const warn = { kind: "warn", summary: "s", reason: "out of scope" } as const;

describe("formatHookResponse", () => {
  it("blocks in each agent's JSON decision form with exit 0, not as a failed hook", () => {
    const block = { kind: "block", summary: "s", reason: "no" } as const;
    const opts = (agent: "claude-code" | "codex" | "gemini") =>
      ({ agent, event: "pre-tool-use", json: false }) as const;
    for (const agent of ["claude-code", "codex"] as const) {
      const r = formatHookResponse(block, opts(agent));
      expect(r.exitCode).toBe(0);
      expect(r.stderr).toBe("");
      expect(JSON.parse(r.stdout)).toEqual({
        hookSpecificOutput: {
          hookEventName: "PreToolUse",
          permissionDecision: "deny",
          permissionDecisionReason: "no",
        },
      });
    }
    const gem = formatHookResponse(block, opts("gemini"));
    expect(gem.exitCode).toBe(0);
    expect(JSON.parse(gem.stdout)).toEqual({ decision: "deny", reason: "no" });
    // No JSON form for this caller: exit 2 and the reason on stderr, which every agent reads.
    expect(
      formatHookResponse(block, { agent: "opencode", event: "pre-tool-use", json: false }),
    ).toEqual({ exitCode: 2, stdout: "", stderr: "no\n" });
  });

  it("warns in each agent's own JSON", () => {
    const cc = JSON.parse(
      formatHookResponse(warn, { agent: "claude-code", event: "pre-tool-use", json: false }).stdout,
    );
    expect(cc).toEqual({
      hookSpecificOutput: { hookEventName: "PreToolUse", additionalContext: "out of scope" },
    });
    const gem = JSON.parse(
      formatHookResponse(warn, { agent: "gemini", event: "pre-tool-use", json: false }).stdout,
    );
    expect(gem.systemMessage).toBe("out of scope");
    expect(gem.hookSpecificOutput.hookEventName).toBe("BeforeTool");
    // AfterTool hands a warning BeforeTool left to the model only: the user saw it already.
    const after = JSON.parse(
      formatHookResponse(warn, { agent: "gemini", event: "post-tool-use", json: false }).stdout,
    );
    expect(after).toEqual({
      hookSpecificOutput: { hookEventName: "AfterTool", additionalContext: "out of scope" },
    });
  });

  it("never blocks on a failure, and --json gives one document with the block's exit code", () => {
    const f = formatHookResponse(
      { kind: "failed", summary: "s", message: "disk full" },
      { agent: "codex", event: "post-tool-use", json: false },
    );
    expect(f).toEqual({ exitCode: 0, stdout: "", stderr: "timewarp hook: disk full\n" });
    const j = formatHookResponse(
      { kind: "block", summary: "s", reason: "no" },
      { agent: "opencode", event: "pre-tool-use", json: true },
    );
    expect(j.exitCode).toBe(2);
    expect(JSON.parse(j.stdout)).toEqual({
      event: "pre-tool-use",
      kind: "block",
      summary: "s",
      reason: "no",
    });
  });

  it("hands added context to the model at a session start or a prompt, in each agent's form", () => {
    const ok = { kind: "ok", summary: "s", context: "goal: x" } as const;
    const answer = (
      agent: "claude-code" | "codex" | "gemini" | "opencode",
      event: "session-start" | "user-prompt-submit" | "post-tool-use",
    ) => formatHookResponse(ok, { agent, event, json: false });
    expect(JSON.parse(answer("claude-code", "session-start").stdout)).toEqual({
      hookSpecificOutput: { hookEventName: "SessionStart", additionalContext: "goal: x" },
    });
    expect(JSON.parse(answer("codex", "user-prompt-submit").stdout)).toEqual({
      hookSpecificOutput: { hookEventName: "UserPromptSubmit", additionalContext: "goal: x" },
    });
    expect(JSON.parse(answer("gemini", "user-prompt-submit").stdout)).toEqual({
      hookSpecificOutput: { hookEventName: "BeforeAgent", additionalContext: "goal: x" },
    });
    // OpenCode's plugin reads `context` from --json; other events carry none
    expect(answer("opencode", "session-start").stdout).toBe("");
    expect(answer("claude-code", "post-tool-use").stdout).toBe("");
    expect(
      JSON.parse(
        formatHookResponse(ok, { agent: "opencode", event: "user-prompt-submit", json: true })
          .stdout,
      ),
    ).toMatchObject({ kind: "ok", context: "goal: x" });
    // no context: nothing on stdout (Claude Code and Codex hand a prompt hook's stdout to the model)
    expect(
      formatHookResponse(
        { kind: "ok", summary: "s" },
        { agent: "codex", event: "user-prompt-submit", json: false },
      ).stdout,
    ).toBe("");
  });
});
