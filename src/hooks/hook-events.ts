/**
 * The one list of hook events and agents: `timewarp hook <event> --agent <agent>` accepts these,
 * `timewarp install` wires them, and everything else (the CLI's help and checks, the settings
 * written, the answers' `hookEventName`, doctor) derives from here. The shipped copies that
 * cannot import it (plugins/claude-code/hooks/hooks.json, plugins/opencode/timewarp.js) are
 * checked against it by src/hooks/hook-events.test.ts; bin/timewarp-hook carries none (it
 * passes any plain name on, and the server or the CLI judges it).
 */

/** The hook events `timewarp hook <event>` accepts (each agent's own names map onto them). */
export const HOOK_EVENTS = [
  "session-start",
  "pre-tool-use",
  "post-tool-use",
  "session-end",
  // A user prompt: a turn checkpoint for `timewarp rewind`.
  "user-prompt-submit",
] as const;
export type HookEvent = (typeof HOOK_EVENTS)[number];

/** Which agent calls (`--agent`); it decides how a warning or a block is written back. */
export const HOOK_AGENTS = ["claude-code", "gemini", "codex", "opencode"] as const;
export type HookAgent = (typeof HOOK_AGENTS)[number];

/**
 * The same agents in the order `timewarp install`'s help and `timewarp doctor` list them
 * (hook-events.test.ts checks that none is missing).
 */
export const INSTALL_AGENTS = [
  "claude-code",
  "opencode",
  "gemini",
  "codex",
] as const satisfies readonly HookAgent[];
export type InstallAgent = (typeof INSTALL_AGENTS)[number];

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

export function isHookEvent(value: string): value is HookEvent {
  return (HOOK_EVENTS as readonly string[]).includes(value);
}

export function isHookAgent(value: string): value is HookAgent {
  return (HOOK_AGENTS as readonly string[]).includes(value);
}
