/**
 * hooks: the agent-hook surface — `timewarp hook <event>` for Claude Code, Gemini CLI and Codex
 * (and the OpenCode plugin, which speaks the same payloads) — and `timewarp install <agent>`,
 * which wires it into a project. Invariants: a hook never breaks the agent (an internal failure
 * exits 0 with a message and a `hook.failed` event; only a drift guard's rollback blocks), and
 * the hook path loads only what its event needs — which is why the install functions below load
 * their module on first call instead of with this index.
 */

import type { DoctorOptions, DoctorReport } from "./doctor.ts";
import type { InstallOptions, InstallReport } from "./install-agent.ts";

export { hooksFor } from "./agent-wiring.ts";
export type { DoctorReport } from "./doctor.ts";
export type { HookClientResult } from "./hook-client.ts";
export { callHookServer, readHookServer } from "./hook-client.ts";
export { runHookDaemon, runHookWorkerThread, watchRunCommand } from "./hook-daemon.ts";
export type { InstallAgent } from "./hook-events.ts";
export { HOOK_AGENTS, HOOK_EVENTS, INSTALL_AGENTS } from "./hook-events.ts";
export type { HookAnswer } from "./hook-protocol.ts";
export { COMMAND_EVENT, COMMAND_STOP_WAIT_MS, hookServerPaths } from "./hook-protocol.ts";
export { findWorkspaceRoot } from "./hook-root.ts";
export { serveHooks } from "./hook-server.ts";
export type { InstallReport } from "./install-agent.ts";
export { runHook } from "./run-hook.ts";
export { isServedCommand } from "./served-command.ts";
export { primeShellView } from "./shell-scan.ts";

/**
 * Wire timewarp into a project for one agent (hooks and MCP server merged into the agent's
 * settings, the skill or plugin module copied); idempotent, `dryRun` writes nothing. Throws
 * INVALID_INPUT, before writing anything, when a settings file it must merge into is not JSON.
 *
 * @example
 *   const report = await installAgent({ root: "/work/app", agent: "claude-code", clock: systemClock });
 *   report.changed; // false on a second run
 */
export async function installAgent(options: InstallOptions): Promise<InstallReport> {
  const report = (await import("./install-agent.ts")).installAgent(options);
  // The first session start then finds the toolchain versions cached instead of probing them.
  if (options.dryRun !== true) {
    const { warmEnvFingerprint } = await import("../timemachine/index.ts");
    await warmEnvFingerprint(options.root);
  }
  return report;
}

/** Undo `installAgent`: restore untouched files byte for byte, else remove only timewarp's entries. */
export async function uninstallAgent(options: InstallOptions): Promise<InstallReport> {
  return (await import("./install-agent.ts")).uninstallAgent(options);
}

/**
 * `timewarp doctor`: per installed agent, whether its wired programs run, its hooks are as
 * installed, Codex trusts them, and when its last session arrived; the watch daemon; the recent
 * `hook.failed` events. Reads only. `report.ok` is false when any check fails.
 *
 * @example
 *   const report = await diagnose({ root: "/work/app", env: process.env, clock: systemClock });
 *   report.agents[0]?.checks.filter((c) => c.status === "fail");
 */
export async function diagnose(options: DoctorOptions): Promise<DoctorReport> {
  return (await import("./doctor.ts")).diagnose(options);
}
