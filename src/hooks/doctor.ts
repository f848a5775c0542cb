import { readFileSync, realpathSync } from "node:fs";
import { homedir } from "node:os";
import { join, resolve } from "node:path";
import { parse as parseToml } from "@decimalturn/toml-patch";
import {
  type Clock,
  errnoCode,
  readEvents,
  toTimewarpError,
  workspacePaths,
} from "../core/index.ts";
import { runningWatchDaemon } from "../store/index.ts";
import { listSessions } from "../timemachine/index.ts";
import { isTimewarpHandler } from "./agent-wiring.ts";
import { reviewCodexHooks } from "./codex-trust.ts";
import { readHookServer } from "./hook-client.ts";
import { INSTALL_AGENTS, type InstallAgent } from "./hook-events.ts";
import { readInstallAssets, readInstallRecord } from "./install-agent.ts";
import { installSpecs } from "./plan-install.ts";
import { findOnPath, programState } from "./program-path.ts";

export type CheckStatus = "ok" | "warn" | "fail";

/** One finding: what was checked, how it stands, one line, and the command that fixes it. */
export interface DoctorCheck {
  id: string;
  status: CheckStatus;
  message: string;
  fix?: string;
}

export interface DoctorAgentReport {
  agent: InstallAgent;
  installed_at: string | null;
  /** When a session from this agent last arrived (ISO), null: never (as far as timewarp can tell). */
  last_session_at: string | null;
  checks: DoctorCheck[];
}

export interface DoctorDaemonReport {
  status: CheckStatus;
  running: boolean;
  pid: number | null;
  serving_hooks: boolean;
  hooks_answered: number | null;
  message: string;
  fix?: string;
}

export interface DoctorFailure {
  ts: string;
  event: string;
  /** Absent in events written before `hook.failed` named its agent. */
  agent?: string;
  message: string;
}

export interface DoctorReport {
  /** False when any check fails (warnings do not count). */
  ok: boolean;
  root: string;
  /** The PATH bare program names were looked up on (this process's, not the agent's). */
  path: string;
  agents: DoctorAgentReport[];
  daemon: DoctorDaemonReport;
  /** The last `hook.failed` events, newest first. */
  recent_failures: DoctorFailure[];
}

export interface DoctorOptions {
  root: string;
  env: NodeJS.ProcessEnv;
  clock: Clock;
  /** How many `hook.failed` events to list (default 5). */
  failures?: number;
}

/**
 * The part of `.timewarp/install/<agent>.json` the doctor reads (install-agent.ts owns the
 * file and its full schema): which command the install wired, and when.
 */
/** The program each agent is started as, for "start a session" fixes. */
const AGENT_PROGRAM: Record<InstallAgent, string> = {
  "claude-code": "claude",
  codex: "codex",
  gemini: "gemini",
  opencode: "opencode",
};

/**
 * `timewarp doctor`: for each agent installed in the workspace at `root`, whether the programs
 * its configuration starts resolve and run, whether timewarp's hooks are still in its config as
 * the install wrote them, whether Codex will run them (project trust), when a session from it
 * last arrived; and whether the watch daemon runs and serves hooks, and the recent
 * `hook.failed` events. Reads only; every finding carries the command that fixes it.
 */
export function diagnose(options: DoctorOptions): DoctorReport {
  const { root, env } = options;
  const sessions = sessionArrivals(root);
  const installed = installedAgents(root);
  const agents = installed.map((item) => {
    if ("error" in item)
      return {
        agent: item.agent,
        installed_at: null,
        last_session_at: null,
        checks: [
          {
            id: "install-record",
            status: "fail" as const,
            message: `.timewarp/install/${item.agent}.json does not read: ${item.error}`,
            fix: `timewarp install ${item.agent}`,
          },
        ],
      };
    const last = lastSessionOf(item.agent, sessions, installed.length);
    const checks: DoctorCheck[] = [
      ...programChecks(root, item.agent, item.command, env),
      ...configChecks(root, item.agent, item.command),
      ...(item.agent === "codex" ? [codexTrustCheck(root, env, last.at, item.installed_at)] : []),
      sessionCheck(root, item.agent, last, options.clock),
    ];
    return { agent: item.agent, installed_at: item.installed_at, last_session_at: last.at, checks };
  });
  const daemon = daemonReport(root, env);
  return {
    ok: agents.every((a) => a.checks.every((c) => c.status !== "fail")) && daemon.status !== "fail",
    root,
    path: env.PATH ?? "",
    agents,
    daemon,
    recent_failures: recentFailures(root, options.failures ?? 5),
  };
}

type InstalledAgent =
  | { agent: InstallAgent; command: string; installed_at: string }
  | { agent: InstallAgent; error: string };

function installedAgents(root: string): InstalledAgent[] {
  const out: InstalledAgent[] = [];
  for (const agent of INSTALL_AGENTS) {
    try {
      const record = readInstallRecord(root, agent);
      if (record !== null)
        out.push({ agent, command: record.command, installed_at: record.installed_at });
    } catch (error) {
      out.push({ agent, error: toTimewarpError(error).message });
    }
  }
  return out;
}

// ── programs ────────────────────────────────────────────────────────────────────────────────

const firstWord = (line: string): string => line.split(" ").find((s) => s !== "") ?? line;

/** The programs the agent's config files start (hooks and MCP server), as written there now. */
function wiredPrograms(root: string, agent: InstallAgent, command: string): string[] {
  const found = new Set<string>();
  const json = (rel: string): unknown => {
    try {
      return JSON.parse(readFileSync(join(root, rel), "utf8"));
    } catch {
      return undefined; // missing or broken: the config check reports it
    }
  };
  const handlersIn = (settings: unknown): void => {
    const hooks = (settings as { hooks?: unknown } | undefined)?.hooks;
    if (typeof hooks !== "object" || hooks === null) return;
    for (const groups of Object.values(hooks)) {
      if (!Array.isArray(groups)) continue;
      for (const group of groups) {
        const handlers = (group as { hooks?: unknown })?.hooks;
        if (!Array.isArray(handlers)) continue;
        for (const h of handlers)
          if (isTimewarpHandler(h)) found.add(firstWord((h as { command: string }).command));
      }
    }
  };
  const mcpIn = (value: unknown, path: string[]): void => {
    let at = value;
    for (const key of path) at = (at as Record<string, unknown> | undefined)?.[key];
    const program = Array.isArray(at) ? at[0] : at;
    if (typeof program === "string" && program !== "") found.add(program);
  };
  switch (agent) {
    case "claude-code":
      handlersIn(json(".claude/settings.json"));
      mcpIn(json(".mcp.json"), ["mcpServers", "timewarp", "command"]);
      break;
    case "gemini": {
      const settings = json(".gemini/settings.json");
      handlersIn(settings);
      mcpIn(settings, ["mcpServers", "timewarp", "command"]);
      break;
    }
    case "codex": {
      handlersIn(json(".codex/hooks.json"));
      try {
        const toml = parseToml(readFileSync(join(root, ".codex/config.toml"), "utf8"));
        mcpIn(toml, ["mcp_servers", "timewarp", "command"]);
      } catch {
        // missing or broken: the config check reports it
      }
      break;
    }
    case "opencode": {
      mcpIn(json("opencode.json"), ["mcp", "timewarp", "command"]);
      try {
        const plugin = readFileSync(join(root, ".opencode/plugins/timewarp.js"), "utf8");
        const argv = /const TIMEWARP_COMMAND = (\[[^\]]*\]);/.exec(plugin)?.[1];
        if (argv !== undefined) mcpIn(JSON.parse(argv), []);
      } catch {
        // missing or broken: the config check reports it
      }
      break;
    }
  }
  // Nothing readable in the config: judge what the install wired.
  if (found.size === 0) found.add(firstWord(command));
  return [...found];
}

/**
 * Each wired program: a path is checked where it points (relative ones from the project, where
 * the agents start hooks); a bare name is looked up on `env.PATH`, which may differ from the
 * agent's own PATH, so the message names the PATH used.
 */
function programChecks(
  root: string,
  agent: InstallAgent,
  command: string,
  env: NodeJS.ProcessEnv,
): DoctorCheck[] {
  const reinstall = `timewarp install ${agent}`;
  return wiredPrograms(root, agent, command).map((program): DoctorCheck => {
    const id = `program:${program}`;
    if (process.platform === "win32")
      return { id, status: "warn", message: `${program}: not checked on Windows` };
    if (program.includes("/")) {
      const abs = resolve(root, program);
      const state = programState(abs);
      if (state === "ok") return { id, status: "ok", message: "an executable file" };
      return {
        id,
        status: "fail",
        message: `${abs} is ${state}: every hook exits 126/127, which ${agent} ignores, so the guard is off`,
        fix: reinstall,
      };
    }
    const path = env.PATH ?? "";
    const found = findOnPath(program, path);
    if (found !== null) return { id, status: "ok", message: `${found} (on PATH)` };
    return {
      id,
      status: "fail",
      message: `${program} is not on PATH (${path === "" ? "empty" : path}): unless ${agent}'s own PATH has it, every hook exits 127 and the guard is off`,
      fix: reinstall,
    };
  });
}

// ── config ──────────────────────────────────────────────────────────────────────────────────

/**
 * Each file the install writes, checked by installing again in memory: when that would change
 * the file, timewarp's entries were removed or edited by hand (the user's own keys never count).
 */
function configChecks(root: string, agent: InstallAgent, command: string): DoctorCheck[] {
  const specs = installSpecs(agent, command, readInstallAssets());
  const fix = `timewarp install ${agent}`;
  return specs.map((spec): DoctorCheck => {
    const id = `config:${spec.path}`;
    let current: string | null;
    try {
      current = readFileSync(join(root, spec.path), "utf8");
    } catch (error) {
      if (errnoCode(error) !== "ENOENT")
        return {
          id,
          status: "fail",
          message: `${spec.path} does not read: ${toTimewarpError(error).message}`,
          fix,
        };
      current = null;
    }
    // The skill only helps the model; hooks, MCP server and plugin are the guard itself.
    const missingStatus: CheckStatus = spec.path.endsWith("/SKILL.md") ? "warn" : "fail";
    if (current === null)
      return { id, status: missingStatus, message: `${spec.path} is missing`, fix };
    let changes: string[];
    try {
      changes = spec.install(current).changes;
    } catch (error) {
      return { id, status: "fail", message: toTimewarpError(error).message, fix };
    }
    if (changes.length === 0)
      return { id, status: "ok", message: "timewarp's entries as installed" };
    return {
      id,
      status: missingStatus,
      message: `${spec.path}: timewarp's entries were removed or edited (${changes.join(" ")}; + missing, ~ changed)`,
      fix,
    };
  });
}

// ── Codex trust ─────────────────────────────────────────────────────────────────────────────

/**
 * Codex loads a project's `.codex/` only in a trusted project (`[projects."<dir>"] trust_level =
 * "trusted"` in `$CODEX_HOME/config.toml`) and runs a project hook only while the user's trust
 * in it holds (`hooks.state`, written by `/hooks`: `codex-trust.ts`); otherwise it runs none,
 * silently (issue 17). Both are read here as Codex reads them, so a re-install that changed the
 * hooks (timewarp moved: a new command path) shows as "changed since trusted" even though a
 * session arrived before it. A session that arrived after the install proves the hooks run
 * whatever this reading says.
 */
function codexTrustCheck(
  root: string,
  env: NodeJS.ProcessEnv,
  lastSession: string | null,
  installedAt: string,
): DoctorCheck {
  const id = "trust";
  const fix = `cd ${shellQuote(root)} && codex`;
  const how =
    "start Codex here, trust the folder when asked, then review and trust the hooks with /hooks";
  const home = env.CODEX_HOME ?? join(env.HOME ?? homedir(), ".codex");
  const file = join(home, "config.toml");
  const names = [...new Set([root, realpathOr(root)])];
  let config: { projects?: unknown; hooks?: { state?: unknown } } = {};
  try {
    config = parseToml(readFileSync(file, "utf8")) as typeof config;
  } catch {
    config = {};
  }
  const projects = (config.projects ?? {}) as Record<string, { trust_level?: unknown }>;
  const since = lastSession !== null && lastSession >= installedAt;
  if (!names.some((n) => projects[n]?.trust_level === "trusted") && !since)
    return {
      id,
      status: "fail",
      message: `Codex runs project hooks only in a trusted project, and ${file} does not trust ${root}: ${how}`,
      fix,
    };
  let hooksJson: unknown = null;
  try {
    hooksJson = JSON.parse(readFileSync(join(root, ".codex", "hooks.json"), "utf8"));
  } catch {
    hooksJson = null; // the config check reports it
  }
  const reviews = reviewCodexHooks({
    hooksFiles: names.map((n) => join(n, ".codex", "hooks.json")),
    hooksJson,
    state: (config.hooks?.state ?? {}) as Record<string, unknown>,
  });
  const pending = reviews.filter((r) => r.status !== "trusted");
  if (reviews.length > 0 && pending.length === 0)
    return {
      id,
      status: "ok",
      message: `Codex trusts the project and timewarp's ${reviews.length} hooks (${file})`,
    };
  if (since)
    return {
      id,
      status: "ok",
      message: `Codex runs the hooks (a session arrived ${lastSession}, after the install)`,
    };
  if (reviews.length === 0)
    return {
      id,
      status: "fail",
      message: "no timewarp hook in .codex/hooks.json for Codex to trust",
      fix: "timewarp install codex",
    };
  const word: Record<string, string> = {
    untrusted: "never trusted",
    modified: "changed since trusted",
    disabled: "turned off in /hooks",
  };
  return {
    id,
    status: "fail",
    message: `Codex skips timewarp's hooks without a word until they are trusted again: ${pending.map((r) => `${r.event} ${word[r.status] ?? r.status}`).join(", ")}; ${how}`,
    fix,
  };
}

function realpathOr(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}

function shellQuote(s: string): string {
  return /^[A-Za-z0-9_./+@:-]+$/.test(s) ? s : `'${s.replace(/'/g, "'\\''")}'`;
}

// ── sessions ────────────────────────────────────────────────────────────────────────────────

interface SessionArrival {
  session_id: string;
  at: string;
  agent: InstallAgent | null;
}

/** The agent a session came from: its own word when a record or event names it, else its transcript's home. */
function agentOf(fields: Record<string, unknown>): InstallAgent | null {
  const named = fields.agent;
  if (typeof named === "string" && (INSTALL_AGENTS as readonly string[]).includes(named))
    return named as InstallAgent;
  const t = typeof fields.transcript_path === "string" ? fields.transcript_path : "";
  if (/[/\\]\.claude[/\\]/.test(t)) return "claude-code";
  if (/[/\\]\.codex[/\\]/.test(t)) return "codex";
  if (/[/\\]\.gemini[/\\]/.test(t)) return "gemini";
  if (/[/\\]opencode[/\\]/.test(t)) return "opencode";
  return null;
}

/** Every session arrival the workspace remembers: session records and `session.started` events. */
function sessionArrivals(root: string): { arrivals: SessionArrival[]; problem: string | null } {
  const paths = workspacePaths(root);
  const arrivals: SessionArrival[] = [];
  const agents = new Map<string, InstallAgent>();
  let problem: string | null = null;
  try {
    for (const s of listSessions(paths)) {
      const agent = agentOf(s as Record<string, unknown>);
      if (agent !== null) agents.set(s.session_id, agent);
      arrivals.push({ session_id: s.session_id, at: s.started_at, agent });
    }
  } catch (error) {
    problem = toTimewarpError(error).message;
  }
  for (const e of readEvents(paths.events).events) {
    if (e.type !== "session.started") continue;
    const id = e.data.session_id;
    arrivals.push({
      session_id: id,
      at: e.ts,
      agent: agentOf(e.data as Record<string, unknown>) ?? agents.get(id) ?? null,
    });
  }
  return { arrivals, problem };
}

interface LastSession {
  at: string | null;
  /** The newest arrival no agent can be told for, when this agent has none of its own. */
  unattributed: string | null;
  problem: string | null;
}

function lastSessionOf(
  agent: InstallAgent,
  sessions: ReturnType<typeof sessionArrivals>,
  installedCount: number,
): LastSession {
  const newest = (list: SessionArrival[]) =>
    list.reduce<string | null>((max, s) => (max === null || s.at > max ? s.at : max), null);
  // With one agent installed, a session timewarp cannot attribute is that agent's.
  const own = sessions.arrivals.filter(
    (s) => s.agent === agent || (s.agent === null && installedCount === 1),
  );
  return {
    at: newest(own),
    unattributed: newest(sessions.arrivals.filter((s) => s.agent === null)),
    problem: sessions.problem,
  };
}

function sessionCheck(
  root: string,
  agent: InstallAgent,
  last: LastSession,
  clock: Clock,
): DoctorCheck {
  const id = "session";
  const fix = `cd ${shellQuote(root)} && ${AGENT_PROGRAM[agent]}`;
  const unreadable =
    last.problem === null ? "" : ` (a session record does not read: ${last.problem})`;
  if (last.at !== null)
    return {
      id,
      status: "ok",
      message: `last session arrived ${last.at} (${ago(clock.now(), last.at)})${unreadable}`,
    };
  const other =
    last.unattributed === null
      ? ""
      : `; the last session from an agent timewarp cannot tell arrived ${last.unattributed}`;
  return {
    id,
    status: "warn",
    message: `no session yet from ${agent}: its SessionStart hook has never reached timewarp${other}${unreadable}`,
    fix,
  };
}

function ago(now: Date, iso: string): string {
  const ms = now.getTime() - Date.parse(iso);
  if (!Number.isFinite(ms) || ms < 0) return "just now";
  const minutes = Math.floor(ms / 60_000);
  if (minutes < 1) return "under a minute ago";
  if (minutes < 120) return `${minutes} min ago`;
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return `${hours} h ago`;
  return `${Math.floor(hours / 24)} days ago`;
}

// ── daemon and failures ─────────────────────────────────────────────────────────────────────

function daemonReport(root: string, env: NodeJS.ProcessEnv): DoctorDaemonReport {
  const info = runningWatchDaemon(root);
  const server = info === null ? null : readHookServer(root);
  const off =
    env.TIMEWARP_WATCH === "0"
      ? " (TIMEWARP_WATCH=0 here: hooks started with it start no daemon)"
      : "";
  if (info === null)
    return {
      status: "warn",
      running: false,
      pid: null,
      serving_hooks: false,
      hooks_answered: null,
      message: `no watch daemon: every hook starts Node and scans walk the tree${off}`,
      fix: "timewarp watch start",
    };
  if (server === null)
    return {
      status: "warn",
      running: true,
      pid: info.pid,
      serving_hooks: false,
      hooks_answered: null,
      message: `watch daemon pid ${info.pid} runs but does not serve hooks (see \`timewarp watch status\` and its log)${env.TIMEWARP_HOOK_SERVER === "0" ? " (TIMEWARP_HOOK_SERVER=0 here)" : ""}`,
      fix: "timewarp watch stop && timewarp watch start",
    };
  return {
    status: "ok",
    running: true,
    pid: info.pid,
    serving_hooks: true,
    hooks_answered: server.served,
    message: `watch daemon pid ${info.pid} serves hooks (${server.served} answered)`,
  };
}

function recentFailures(root: string, limit: number): DoctorFailure[] {
  const out: DoctorFailure[] = [];
  const events = readEvents(workspacePaths(root).events).events;
  for (let i = events.length - 1; i >= 0 && out.length < limit; i--) {
    const e = events[i];
    if (e?.type !== "hook.failed") continue;
    const agent = (e.data as { agent?: unknown }).agent;
    out.push({
      ts: e.ts,
      event: e.data.event,
      ...(typeof agent === "string" ? { agent } : {}),
      message: e.data.message,
    });
  }
  return out;
}
