import { AGENT_EVENT_NAMES, type HookAgent, type HookEvent } from "./hook-events.ts";

/**
 * What a hook decided. `warn` lets the tool run and tells the agent why; `block` stops it (only
 * PreToolUse blocks); `failed` is an internal failure, which never blocks the agent.
 */
export type HookOutcome =
  /** `context`: text for the model (a session start's or a prompt's memory offer), where the agent takes it. */
  | { kind: "ok"; summary: string; context?: string }
  | { kind: "warn"; summary: string; reason: string }
  | { kind: "block"; summary: string; reason: string }
  | { kind: "failed"; summary: string; message: string };

/** What the hook process prints and how it exits. */
export interface HookResponse {
  exitCode: 0 | 2;
  stdout: string;
  stderr: string;
}

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
    case "ok": {
      const body = contextAnswer(options.agent, options.event, outcome.context);
      return { exitCode: 0, stdout: body === null ? "" : `${JSON.stringify(body)}\n`, stderr: "" };
    }
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

/**
 * Added context on a session start or a user prompt, in the one form Claude Code 2.1, Codex 0.171
 * and Gemini CLI 0.61 all read at SessionStart and UserPromptSubmit / BeforeAgent:
 * `hookSpecificOutput.additionalContext` with the agent's own `hookEventName` (Codex's output
 * schema rejects any other field there). Null for other events and for OpenCode, whose plugin
 * calls with `--json` and reads `context` from the document.
 */
function contextAnswer(
  agent: HookAgent,
  event: HookEvent,
  context: string | undefined,
): object | null {
  if (context === undefined || context === "" || agent === "opencode") return null;
  if (event !== "session-start" && event !== "user-prompt-submit") return null;
  return {
    hookSpecificOutput: {
      hookEventName: AGENT_EVENT_NAMES[agent][event],
      additionalContext: context,
    },
  };
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
