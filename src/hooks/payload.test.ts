import { describe, expect, it } from "vitest";
import { detectAgent, parseHookPayload } from "./payload.ts";

describe("parseHookPayload", () => {
  it("keeps unknown fields (agents add them release after release)", () => {
    const r = parseHookPayload(
      JSON.stringify({
        session_id: "s",
        tool_name: "Edit",
        permission_mode: "plan",
        extra: { a: 1 },
      }),
      "pre-tool-use",
    );
    expect(r.ok && r.value.permission_mode).toBe("plan");
  });

  it("names what is wrong: empty, not JSON, missing session_id, tool event without tool_name", () => {
    expect(parseHookPayload("", "session-start")).toEqual({
      ok: false,
      issues: ["stdin: empty (expected a JSON hook payload)"],
    });
    const notJson = parseHookPayload("{", "session-start");
    expect(!notJson.ok && notJson.issues[0]).toMatch(/^stdin: not valid JSON/);
    const noId = parseHookPayload("{}", "session-end");
    expect(!noId.ok && noId.issues[0]).toMatch(/^session_id:/);
    expect(parseHookPayload('{"session_id":"s"}', "post-tool-use")).toEqual({
      ok: false,
      issues: ["tool_name: required for post-tool-use"],
    });
  });

  it("tells Gemini CLI and Codex from Claude Code", () => {
    expect(detectAgent({ session_id: "s", hook_event_name: "BeforeTool" })).toBe("gemini");
    expect(detectAgent({ session_id: "s", tool_name: "apply_patch" })).toBe("codex");
    expect(detectAgent({ session_id: "s", hook_event_name: "PreToolUse", tool_name: "Edit" })).toBe(
      "claude-code",
    );
  });
});
