import { AGENT_EVENT_NAMES } from "./hook-outcome.ts";
import type { HookAgent, HookEvent } from "./payload.ts";

/** The agents `timewarp install` knows. */
export const INSTALL_AGENTS = ["claude-code", "opencode", "gemini", "codex"] as const;
export type InstallAgent = (typeof INSTALL_AGENTS)[number];

/** One hook handler, in the shape Claude Code, Gemini CLI and Codex share. */
export interface HookHandler {
  type: "command";
  command: string;
  /** Gemini CLI shows it in `/hooks`. */
  name?: string;
  /** Seconds (Claude Code, Codex) or milliseconds (Gemini CLI). */
  timeout?: number;
}

/** A matcher group: `{ matcher?, hooks: [handler] }` under an event name. */
export interface HookGroup {
  matcher?: string;
  hooks: HookHandler[];
}

/** `hooks` as the agents' settings files hold it: event name → matcher groups. */
export type HooksTable = Record<string, HookGroup[]>;

/** The tool names each agent's matchers must cover: its edit tools and its shell tool. */
const MATCHERS = {
  // Claude Code matchers are regexes over the tool name.
  "claude-code": "Edit|Write|MultiEdit|NotebookEdit|Bash",
  // Gemini CLI: a regex; anchored so `replace` does not match some `replace_*` MCP tool.
  gemini: "^(write_file|replace|run_shell_command)$",
  // Codex reports its shell tools as `Bash` and its edits as `apply_patch`.
  codex: "^(apply_patch|Bash)$",
} as const;

type HookFileAgent = keyof typeof MATCHERS;

/**
 * The command line a hook runs. For timewarp itself (`timewarp`, or a path to it): its sibling
 * `timewarp-hook <event> --agent <agent>`, the POSIX shell client that spares each hook Node's
 * start when the watch daemon serves hooks and hands every other case to `timewarp hook`. Any
 * other launcher (`npx timewarp`, `node …/timewarp.cjs`), and Windows, where there is no POSIX
 * shell to count on: `<command> hook <event> --agent <agent>`.
 */
export function hookCommand(options: {
  command: string;
  event: HookEvent;
  agent: HookAgent;
  /** Default: not on Windows. */
  shellClient?: boolean;
}): string {
  const { command, event, agent } = options;
  const shell = options.shellClient ?? process.platform !== "win32";
  return shell && /^(?:\S*\/)?timewarp$/.test(command)
    ? `${command}-hook ${event} --agent ${agent}`
    : `${command} hook ${event} --agent ${agent}`;
}

/** The event a hook command line of timewarp's runs (`… hook <event> …`, `timewarp-hook <event> …`). */
export function hookEventOf(command: string): string | null {
  return /(?: hook|(?:^|\/)timewarp-hook) (\S+)/.exec(command)?.[1] ?? null;
}

/**
 * The hooks table timewarp adds for `agent` (pure). Tool events carry the matcher of the agent's
 * edit and shell tools; lifecycle events match everything. Timeouts are generous ceilings, not
 * expectations (a hook takes tens of milliseconds): Claude Code and Codex count seconds, Gemini
 * CLI milliseconds.
 */
export function hooksFor(
  agent: HookFileAgent,
  command: string,
  options: { shellClient?: boolean } = {},
): HooksTable {
  const table: HooksTable = {};
  const events: HookEvent[] = ["session-start", "pre-tool-use", "post-tool-use", "session-end"];
  for (const event of events) {
    const tool = event === "pre-tool-use" || event === "post-tool-use";
    const handler: HookHandler = {
      type: "command",
      command: hookCommand({ command, event, agent, ...options }),
      ...(agent === "gemini" ? { name: `timewarp-${event}`, timeout: 30_000 } : { timeout: 30 }),
    };
    const groups = [tool ? { matcher: MATCHERS[agent], hooks: [handler] } : { hooks: [handler] }];
    table[AGENT_EVENT_NAMES[agent][event]] = groups;
    // Claude Code fires PostToolUseFailure instead of PostToolUse when a tool fails (a Bash
    // command that exits non-zero): the files a failing test run, `lint --fix` or codemod
    // changed must reach the ledger all the same, so it gets the same handler.
    if (agent === "claude-code" && event === "post-tool-use") table.PostToolUseFailure = groups;
  }
  return table;
}

/** The MCP server entry (`.mcp.json`, Gemini's `mcpServers`): `timewarp mcp` over stdio. */
export function mcpServerFor(command: string): { command: string; args: string[] } {
  const [bin = "timewarp", ...rest] = command.split(" ").filter((s) => s !== "");
  return { command: bin, args: [...rest, "mcp"] };
}

/** True for a handler timewarp wrote (any event, any agent, any command prefix). */
export function isTimewarpHandler(handler: unknown): boolean {
  if (typeof handler !== "object" || handler === null) return false;
  const command = (handler as { command?: unknown }).command;
  return (
    typeof command === "string" &&
    /(?: hook|(?:^|\/)timewarp-hook) (session-start|pre-tool-use|post-tool-use|session-end) --agent (claude-code|gemini|codex|opencode)$/.test(
      command,
    )
  );
}
