/**
 * hooks: the agent-hook surface — `timewarp hook <event>` for Claude Code, Gemini CLI and Codex
 * (and the OpenCode plugin, which speaks the same payloads) — and `timewarp install <agent>`,
 * which wires it into a project. Invariants: a hook never breaks the agent (an internal failure
 * exits 0 with a message and a `hook.failed` event; only a drift guard's rollback blocks), and
 * the hook path loads only what its event needs.
 */

export type { HookGroup, HookHandler, HooksTable, InstallAgent } from "./agent-wiring.ts";
export { hooksFor, INSTALL_AGENTS, mcpServerFor } from "./agent-wiring.ts";
export type { HookOutcome, HookResponse } from "./hook-outcome.ts";
export type { InstallFileReport, InstallOptions, InstallReport } from "./install-agent.ts";
export { installAgent, uninstallAgent } from "./install-agent.ts";
export type { HookAgent, HookEvent, HookPayload } from "./payload.ts";
export { HOOK_AGENTS, HOOK_EVENTS, HookPayloadSchema } from "./payload.ts";
export type { HookRun, RunHookOptions } from "./run-hook.ts";
export { runHook } from "./run-hook.ts";
