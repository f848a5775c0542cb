import type { HookAgent, HookEvent } from "./payload.ts";

/**
 * What a hook decided. `warn` lets the tool run and tells the agent why; `block` stops it (only
 * PreToolUse blocks); `failed` is an internal failure, which never blocks the agent.
 */
export type HookOutcome =
  | { kind: "ok"; summary: string }
  | { kind: "warn"; summary: string; reason: string }
  | { kind: "block"; summary: string; reason: string }
  | { kind: "failed"; summary: string; message: string };

/** What the hook process prints and how it exits. */
export interface HookResponse {
  exitCode: 0 | 2;
  stdout: string;
  stderr: string;
}

/** Each agent's own name for each hook event (settings keys, `hookEventName` in answers). */
export const AGENT_EVENT_NAMES: Record<HookAgent, Record<HookEvent, string>> = {
  "claude-code": {
    "session-start": "SessionStart",
    "pre-tool-use": "PreToolUse",
    "post-tool-use": "PostToolUse",
    "session-end": "SessionEnd",
    "user-prompt-submit": "UserPromptSubmit",
  },
  codex: {
    "session-start": "SessionStart",
    "pre-tool-use": "PreToolUse",
    "post-tool-use": "PostToolUse",
    "session-end": "SessionEnd",
    "user-prompt-submit": "UserPromptSubmit",
  },
  gemini: {
    "session-start": "SessionStart",
    "pre-tool-use": "BeforeTool",
    "post-tool-use": "AfterTool",
    "session-end": "SessionEnd",
    "user-prompt-submit": "BeforeAgent",
  },
  opencode: {
    "session-start": "session.created",
    "pre-tool-use": "tool.execute.before",
    "post-tool-use": "tool.execute.after",
    "session-end": "session.deleted",
    "user-prompt-submit": "chat.message",
  },
};

/**
 * Turn an outcome into the agent's protocol (pure). A block is each agent's JSON decision on
 * stdout with exit 0 (issue 17): Claude Code and Codex read PreToolUse's
 * `hookSpecificOutput.permissionDecision: "deny"` and hand `permissionDecisionReason` to the
 * model; Gemini CLI reads `{decision: "deny", reason}`. Exit 2 with the reason on stderr blocks
 * too, but the agents show it as a failed hook ("PreToolUse:Edit hook error: …", "Hook(s) …
 * failed"), which reads as timewarp malfunctioning; it stays only for a caller that has no JSON
 * form (no agent named, an event other than PreToolUse). A warning goes out as JSON on stdout:
 * Claude Code and Codex inject `hookSpecificOutput.additionalContext` into the model's context;
 * Gemini CLI shows `systemMessage` (its BeforeTool has no context field: the AfterTool hook
 * delivers the warning to the model). A failure exits 0 with the message on stderr: a broken
 * recorder must never stop the agent.
 */
export function formatHookResponse(
  outcome: HookOutcome,
  options: { agent: HookAgent; event: HookEvent; json: boolean },
): HookResponse {
  if (options.json) {
    // `--json`: the CLI contract (one document), for scripts and the OpenCode plugin.
    const exitCode = outcome.kind === "block" ? 2 : 0;
    return {
      exitCode,
      stdout: `${JSON.stringify({ event: options.event, ...outcome })}\n`,
      stderr: "",
    };
  }
  switch (outcome.kind) {
    case "ok":
      return { exitCode: 0, stdout: "", stderr: "" };
    case "block": {
      const decision = blockDecision(options.agent, options.event, outcome.reason);
      return decision === null
        ? { exitCode: 2, stdout: "", stderr: `${outcome.reason}\n` }
        : { exitCode: 0, stdout: `${JSON.stringify(decision)}\n`, stderr: "" };
    }
    case "failed":
      return { exitCode: 0, stdout: "", stderr: `timewarp hook: ${outcome.message}\n` };
    case "warn": {
      const hookEventName = AGENT_EVENT_NAMES[options.agent][options.event];
      // Gemini CLI: the user sees BeforeTool's systemMessage; the model gets the warning from
      // AfterTool's additionalContext (PostToolUse hands on what PreToolUse left in the capture).
      const body =
        options.agent === "gemini" && options.event === "pre-tool-use"
          ? {
              systemMessage: outcome.reason,
              hookSpecificOutput: { hookEventName, additionalContext: outcome.reason },
            }
          : { hookSpecificOutput: { hookEventName, additionalContext: outcome.reason } };
      return { exitCode: 0, stdout: `${JSON.stringify(body)}\n`, stderr: "" };
    }
  }
}

/** The agent's JSON "deny this tool call", or null where it has none. */
function blockDecision(agent: HookAgent, event: HookEvent, reason: string): object | null {
  if (event !== "pre-tool-use") return null;
  switch (agent) {
    case "claude-code":
    case "codex":
      return {
        hookSpecificOutput: {
          hookEventName: AGENT_EVENT_NAMES[agent][event],
          permissionDecision: "deny",
          permissionDecisionReason: reason,
        },
      };
    case "gemini":
      return { decision: "deny", reason };
    case "opencode":
      return null; // its plugin calls with --json
  }
}
