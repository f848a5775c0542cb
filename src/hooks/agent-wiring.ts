import { AGENT_EVENT_NAMES } from "./hook-outcome.ts";
import { HOOK_REPLY_WAIT_MS } from "./hook-protocol.ts";
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
 * The command line a hook runs. For timewarp itself (`timewarp`, or a path to it or to the
 * package's `bin/timewarp.cjs`): its sibling `timewarp-hook <event> --agent <agent>`, the POSIX
 * shell client that spares each hook Node's start when the watch daemon serves hooks and hands
 * every other case to `timewarp hook`. Any other launcher (`npx timewarp`, `node …/timewarp.cjs`),
 * and Windows, where there is no POSIX shell to count on: `<command> hook <event> --agent <agent>`.
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
  return shell && TIMEWARP_PROGRAM.test(command)
    ? `${command.replace(/(?:\.cjs)?$/, "-hook")} ${event} --agent ${agent}`
    : `${command} hook ${event} --agent ${agent}`;
}

/** `timewarp` itself: the name npm links, or a path to it or to the package's own bin. */
const TIMEWARP_PROGRAM = /^(?:\S*\/)?timewarp(?:\.cjs)?$/;

/** The event a hook command line of timewarp's runs (`… hook <event> …`, `timewarp-hook <event> …`). */
export function hookEventOf(command: string): string | null {
  return /(?: hook|(?:^|\/)timewarp-hook) (\S+)/.exec(command)?.[1] ?? null;
}

/**
 * How long the agents let a hook run, in seconds: longer than the shell and Node clients wait
 * for the daemon (`HOOK_REPLY_WAIT_MS`, 130 s), with room for the client's own start. The other
 * way round (the client giving up before the agent's old 30 s) would leave a slow hook run in
 * the client's process (no daemon: a full rescan of a large tree, a cold start) killed by the
 * agent mid-record, its edit lost with nothing but the agent's "hook error"; this way every
 * hook ends with its own answer, and a daemon that stopped answering is a failure, exit 0. A
 * ceiling, not an expectation: a hook takes tens of milliseconds.
 */
const HOOK_TIMEOUT_S = Math.ceil(HOOK_REPLY_WAIT_MS / 1000) + 20;

/**
 * Codex clamps SessionEnd hooks to 3 s and warns on every start when the setting says more
 * (codex-rs hooks/src/engine/discovery.rs; issue 17). A session end takes milliseconds; one
 * the daemon claimed still finishes there when Codex stops waiting.
 */
const CODEX_SESSION_END_TIMEOUT_S = 3;

/** The `timeout` of one handler: seconds (Claude Code, Codex) or milliseconds (Gemini CLI). */
function hookTimeout(agent: HookFileAgent, event: HookEvent): number {
  if (agent === "gemini") return HOOK_TIMEOUT_S * 1000;
  if (agent === "codex" && event === "session-end") return CODEX_SESSION_END_TIMEOUT_S;
  return HOOK_TIMEOUT_S;
}

/**
 * The hooks table timewarp adds for `agent` (pure). Tool events carry the matcher of the agent's
 * edit and shell tools; lifecycle events match everything. Timeouts: `hookTimeout`.
 */
export function hooksFor(
  agent: HookFileAgent,
  command: string,
  options: { shellClient?: boolean } = {},
): HooksTable {
  const table: HooksTable = {};
  const events: HookEvent[] = [
    "session-start",
    "pre-tool-use",
    "post-tool-use",
    "session-end",
    "user-prompt-submit",
  ];
  for (const event of events) {
    const tool = event === "pre-tool-use" || event === "post-tool-use";
    const handler: HookHandler = {
      type: "command",
      command: hookCommand({ command, event, agent, ...options }),
      ...(agent === "gemini" ? { name: `timewarp-${event}` } : {}),
      timeout: hookTimeout(agent, event),
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
    /(?: hook|(?:^|\/)timewarp-hook) (session-start|pre-tool-use|post-tool-use|session-end|user-prompt-submit) --agent (claude-code|gemini|codex|opencode)$/.test(
      command,
    )
  );
}
