import { createHash } from "node:crypto";
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmdirSync,
  rmSync,
} from "node:fs";
import { dirname, join, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { z } from "zod";
import {
  type Clock,
  ErrorCode,
  errnoCode,
  fromSystemError,
  readJsonFile,
  TimewarpError,
  workspacePaths,
  writeFileAtomic,
  writeJsonAtomic,
} from "../core/index.ts";
import { stopWatchDaemon } from "../store/index.ts";
import { hookCommand } from "./agent-wiring.ts";
import type { InstallAgent } from "./hook-events.ts";
import { type FileSpec, type InstallAssets, installSpecs } from "./plan-install.ts";
import { findOnPath, programState } from "./program-path.ts";

export interface InstallOptions {
  /** The project to wire (`--cwd`). */
  root: string;
  agent: InstallAgent;
  /**
   * How the agent starts timewarp (e.g. `npx timewarp`, `timewarp` from the agent's PATH).
   * Default: this timewarp's own program by its absolute path (`ownCommand`); uninstall's
   * default is the command the install recorded.
   */
  command?: string;
  /**
   * The path this process was started as (the CLI passes `process.argv[1]`): when it is npm's
   * `timewarp` link beside a `timewarp-hook`, the default command names that link, which
   * survives an upgrade in place; otherwise the package's own `bin/`.
   */
  invokedAs?: string;
  dryRun?: boolean;
  /**
   * Where the install was asked from (the CLI's working directory). A git repository there that
   * lies below `root` means the nearest `.timewarp/` above it took the workspace (a stray one in
   * `/tmp` or `~`): the install refuses rather than wire the agent into that ancestor (`~/.codex/`
   * is Codex's own user config) and leave the project unguarded.
   */
  from?: string;
  clock: Clock;
  /** Where to look for the programs the wiring starts (default: this process's environment). */
  env?: NodeJS.ProcessEnv;
}

export interface InstallFileReport {
  path: string;
  action: "created" | "updated" | "deleted" | "restored" | "unchanged";
  /** What changed inside the file: `+hooks.PreToolUse`, `+mcpServers.timewarp`, `-block`, … */
  changes: string[];
}

export interface InstallReport {
  agent: InstallAgent;
  operation: "install" | "uninstall";
  dry_run: boolean;
  /** False: the project already was as asked (a second run changes nothing). */
  changed: boolean;
  files: InstallFileReport[];
  /** The command that undoes an install. */
  undo: string | null;
  /**
   * An uninstall that left no agent installed in the workspace stopped its watch daemon (which
   * serves the hooks too): nothing is left to ask it (issue 17). Always false for an install.
   */
  daemon_stopped: boolean;
  notes: string[];
}

/** `.timewarp/install/<agent>.json`: what an install found and wrote, so uninstall restores it. */
const InstallRecordSchema = z.object({
  schema_version: z.literal(1),
  agent: z.string(),
  command: z.string(),
  installed_at: z.string(),
  files: z.array(
    z.object({
      path: z.string(),
      /** The bytes before the first install (null: the file did not exist). */
      original_b64: z.string().nullable(),
      /** sha1 of what the install wrote; uninstall restores the original only while it still matches. */
      installed_sha1: z.string(),
    }),
  ),
  /** Project-relative directories the install created (`.claude/skills/…`); uninstall removes them when empty. */
  created_dirs: z.array(z.string()).default([]),
});
type InstallRecord = z.infer<typeof InstallRecordSchema>;

const NOTES: Record<InstallAgent, string[]> = {
  "claude-code": [
    "Start Claude Code in this project; approve the `timewarp` MCP server from .mcp.json when asked.",
  ],
  gemini: [
    "Gemini CLI reads hooks from .gemini/settings.json (hooks need a Gemini CLI release with hooks support); check with /hooks.",
  ],
  codex: [
    "Codex loads a project's .codex/ only when the project is trusted, and runs a new or changed hook only once trusted: start Codex here, trust the folder, then trust the hooks with /hooks (`codex exec --trust` trusts the folder, not the hooks: they would not run, without a word). `timewarp doctor` tells.",
    "Headless (`codex exec`, approvals never), Codex refuses an MCP tool call that needs an approval: to let the agent call timewarp's tools, run it with -c 'mcp_servers.timewarp.default_tools_approval_mode=\"approve\"'.",
  ],
  opencode: [
    "Restart OpenCode: it loads .opencode/plugins/*.js and the MCP server from opencode.json at startup.",
  ],
};

/** A path a hook's command line (run by a shell) and the MCP entries carry without quoting. */
const PLAIN_PATH = /^[A-Za-z0-9_./+@:-]+$/;

/**
 * The command the wiring starts by default: this timewarp's own program, by its absolute path,
 * so that a hook does not depend on the agent's PATH (a `timewarp-hook` missing there exits 127,
 * which the agents take as a non-blocking error: the guard is off without a word; issue 17).
 * `invokedAs` first when it is npm's `timewarp` link with `timewarp-hook` beside it, else the
 * package's `bin/timewarp.cjs` (whose sibling is `bin/timewarp-hook`). Windows, and a path a
 * shell would need quoted, keep `timewarp` from PATH (with a note). Throws INVALID_INPUT when
 * neither program is there to run: wiring them would switch the guard off.
 */
function ownCommand(invokedAs?: string): { command: string; notes: string[] } {
  if (process.platform === "win32") return { command: "timewarp", notes: [] };
  const bin = fileURLToPath(new URL("../../bin/", import.meta.url));
  const candidates = [
    ...(invokedAs !== undefined && /(?:^|\/)timewarp(?:\.cjs)?$/.test(invokedAs)
      ? [resolve(invokedAs)]
      : []),
    realpathOr(join(bin, "timewarp.cjs")),
  ];
  const usable = candidates.find(
    (c) => programState(c) === "ok" && programState(join(dirname(c), "timewarp-hook")) === "ok",
  );
  if (usable === undefined)
    throw new TimewarpError(
      ErrorCode.INVALID_INPUT,
      `no runnable timewarp program to wire: expected executable files timewarp and timewarp-hook in ${[...new Set(candidates.map((c) => dirname(c)))].join(" or ")}; reinstall timewarp (npm i -g timewarp) or pass --command — nothing was changed`,
      { data: { candidates } },
    );
  if (!PLAIN_PATH.test(usable))
    return {
      command: "timewarp",
      notes: [
        `timewarp lives at a path a hook's command line would need quoted (${usable}): the wiring runs \`timewarp\` and \`timewarp-hook\` from the agent's PATH instead; or install again with --command.`,
      ],
    };
  const notes = [
    "The wiring names this timewarp by its full path: after moving or reinstalling timewarp elsewhere, run this install again (it updates the path).",
  ];
  if (usable.includes("/_npx/"))
    notes.push(
      `This timewarp runs from npx's cache (${dirname(usable)}), which npm may clear: install timewarp (npm i -g timewarp, or as a dev dependency) and run this install again.`,
    );
  return { command: usable, notes };
}

function realpathOr(file: string): string {
  try {
    return realpathSync(file);
  } catch {
    return file;
  }
}

/** The files in the package an install copies. */
export function readInstallAssets(): InstallAssets {
  const plugins = fileURLToPath(new URL("../../plugins/", import.meta.url));
  return {
    skill: readFileSync(
      join(plugins, "claude-code", "skills", "timewarp-optimize", "SKILL.md"),
      "utf8",
    ),
    opencodePlugin: readFileSync(join(plugins, "opencode", "timewarp.js"), "utf8"),
  };
}

/** The parent directories of `rel` that do not exist yet (project-relative, outermost first). */
function missingDirs(root: string, rel: string): string[] {
  const parts = rel.split("/").slice(0, -1);
  const out: string[] = [];
  for (let i = 1; i <= parts.length; i++) {
    const dir = parts.slice(0, i).join("/");
    if (!existsSync(join(root, dir))) out.push(dir);
  }
  return out;
}

const sha1 = (text: string): string => createHash("sha1").update(text).digest("hex");

function readText(abs: string): string | null {
  try {
    return readFileSync(abs, "utf8");
  } catch (error) {
    if (errnoCode(error) === "ENOENT") return null;
    throw fromSystemError(error, `reading ${abs}`);
  }
}

function recordPath(root: string, agent: InstallAgent): string {
  return join(workspacePaths(root).data, "install", `${agent}.json`);
}

/** Whether any agent's install record is left in the workspace. */
function anyInstallLeft(root: string): boolean {
  try {
    return readdirSync(dirname(recordPath(root, "claude-code"))).some((n) => n.endsWith(".json"));
  } catch (error) {
    if (errnoCode(error) === "ENOENT") return false;
    throw fromSystemError(error, `listing ${dirname(recordPath(root, "claude-code"))}`);
  }
}

/** The record of `agent`'s install in the workspace, null when it is not installed there. */
export function readInstallRecord(root: string, agent: InstallAgent): InstallRecord | null {
  const path = recordPath(root, agent);
  return readText(path) === null ? null : readJsonFile(path, InstallRecordSchema);
}

function writeText(abs: string, text: string | null): void {
  if (text === null) {
    rmSync(abs, { force: true });
    return;
  }
  mkdirSync(dirname(abs), { recursive: true });
  writeFileAtomic(abs, text);
}

/**
 * What uninstall should bring back. A re-install over a file still as the last install left it
 * keeps that install's original; over a file the user changed since, the original becomes the
 * user's current file without timewarp's entries (their new keys must survive an uninstall).
 */
function originalOf(
  spec: FileSpec,
  current: string | null,
  previous: InstallRecord["files"][number] | undefined,
): string | null {
  if (current === null) return null;
  if (previous === undefined) return Buffer.from(current).toString("base64");
  if (sha1(current) === previous.installed_sha1) return previous.original_b64;
  const without = spec.uninstall(current).text;
  return without === null ? null : Buffer.from(without).toString("base64");
}

/**
 * Wire timewarp into a project for one agent: merge hooks and the MCP server into the agent's
 * settings (keeping every key of the user's), copy the skill or plugin module. Idempotent: a
 * second run finds nothing to change, writes nothing and says so. Everything is planned (and an
 * invalid settings file refused) before the first write; each file is written atomically.
 */
export function installAgent(options: InstallOptions): InstallReport {
  const repo = options.from === undefined ? null : gitRepositoryOf(options.from);
  const root = resolve(options.root);
  if (repo !== null && repo !== root && repo.startsWith(`${root}${sep}`))
    throw new TimewarpError(
      ErrorCode.INVALID_INPUT,
      `${repo} is a git repository inside the workspace ${root} (the nearest .timewarp/ above it): the install would wire ${options.agent} into ${root}, not into ${repo}. Make the repository a workspace of its own (\`timewarp init --here\` there), or run the install from ${root} if that workspace is meant — nothing was changed`,
      { data: { repository: repo, workspace: root } },
    );
  const own = options.command === undefined ? ownCommand(options.invokedAs) : null;
  const command = options.command ?? own?.command ?? "timewarp";
  const env = options.env ?? process.env;
  const broken = unrunnablePaths(options.agent, command);
  if (broken.length > 0)
    throw new TimewarpError(
      ErrorCode.INVALID_INPUT,
      `${broken.join(" and ")} ${broken.length > 1 ? "are" : "is"} not an executable file: every hook would fail (exit 126/127), which the agent takes as a non-blocking error, so the guard would be off; fix the path or pass another --command — nothing was changed`,
      { data: { programs: broken } },
    );
  const specs = installSpecs(options.agent, command, readInstallAssets());
  const planned = specs.map((spec) => {
    const abs = join(options.root, spec.path);
    const current = readText(abs);
    const next = spec.install(current);
    return { spec, abs, current, next };
  });
  const files: InstallFileReport[] = planned.map(({ spec, current, next }) => ({
    path: spec.path,
    action: next.text === current ? "unchanged" : current === null ? "created" : "updated",
    changes: next.changes.filter((c) => c !== "created"),
  }));
  const changed = files.some((f) => f.action !== "unchanged");
  if (changed && options.dryRun !== true) {
    const previous = readInstallRecord(options.root, options.agent);
    const record: InstallRecord = {
      schema_version: 1,
      agent: options.agent,
      command,
      installed_at: options.clock.now().toISOString(),
      files: planned.map(({ spec, current, next }) => {
        return {
          path: spec.path,
          original_b64: originalOf(
            spec,
            current,
            previous?.files.find((f) => f.path === spec.path),
          ),
          installed_sha1: sha1(next.text),
        };
      }),
      created_dirs: [
        ...new Set([
          ...(previous?.created_dirs ?? []),
          ...planned.flatMap(({ spec }) => missingDirs(options.root, spec.path)),
        ]),
      ],
    };
    // The record goes first: a crash between files leaves a record whose hashes do not match,
    // and uninstall then removes timewarp's entries structurally instead of restoring bytes.
    mkdirSync(dirname(recordPath(options.root, options.agent)), { recursive: true });
    writeJsonAtomic(recordPath(options.root, options.agent), record);
    for (const p of planned) if (p.next.text !== p.current) writeText(p.abs, p.next.text);
  }
  return {
    agent: options.agent,
    operation: "install",
    dry_run: options.dryRun === true,
    changed,
    files,
    undo: `timewarp install --uninstall ${options.agent}`,
    daemon_stopped: false,
    notes: [
      ...(changed ? NOTES[options.agent] : []),
      ...(changed ? (own?.notes ?? []) : []),
      ...missingPrograms(options.agent, command, env).map(
        (program) =>
          `\`${program}\` is not on this PATH: the agent cannot start it unless its own PATH has it (npm i -g timewarp installs \`timewarp\` and \`timewarp-hook\`; or install again with --command "npx timewarp").`,
      ),
    ],
  };
}

/** The nearest directory at or above `start` holding `.git` (a repository or a worktree), or null. */
function gitRepositoryOf(start: string): string | null {
  for (let dir = resolve(start); ; dir = dirname(dir)) {
    if (existsSync(join(dir, ".git"))) return dir;
    if (dirname(dir) === dir) return null;
  }
}

/** The programs the wiring starts (the MCP server's, and the hooks' when they are not the same). */
function wiredPrograms(agent: InstallAgent, command: string): string[] {
  const first = (line: string) => line.split(" ").find((s) => s !== "") ?? line;
  const programs = new Set([first(command)]);
  // OpenCode's module runs timewarp-hook when it is there and the CLI when it is not.
  if (agent !== "opencode")
    programs.add(first(hookCommand({ command, event: "session-start", agent })));
  return [...programs];
}

/** Programs wired by their path that are not executable files here: an install refuses them. */
function unrunnablePaths(agent: InstallAgent, command: string): string[] {
  if (process.platform === "win32") return []; // PATHEXT and friends: not judged
  return wiredPrograms(agent, command).filter((p) => p.includes("/") && programState(p) !== "ok");
}

/**
 * The programs wired by name that are not on `env`'s PATH: worth a note, not an error, since
 * the agent's PATH may differ.
 */
function missingPrograms(agent: InstallAgent, command: string, env: NodeJS.ProcessEnv): string[] {
  if (process.platform === "win32") return [];
  return wiredPrograms(agent, command).filter(
    (program) => !program.includes("/") && findOnPath(program, env.PATH ?? "") === null,
  );
}

/**
 * Undo an install: a file still exactly as the install left it gets its original bytes back (or
 * is deleted if the install created it); a file edited since loses only timewarp's entries.
 * When that undid something and no agent's install record is left, the workspace's watch daemon
 * is stopped as `timewarp watch stop` does (`daemon_stopped`): left running, it would serve no
 * hook and hold its watches until its idle timeout (issue 17).
 */
export function uninstallAgent(options: InstallOptions): InstallReport {
  const record = readInstallRecord(options.root, options.agent);
  const command = options.command ?? record?.command ?? "timewarp";
  const specs = installSpecs(options.agent, command, readInstallAssets());
  const files: InstallFileReport[] = [];
  const writes: { abs: string; text: string | null }[] = [];
  for (const spec of specs) {
    const abs = join(options.root, spec.path);
    const current = readText(abs);
    if (current === null) {
      files.push({ path: spec.path, action: "unchanged", changes: [] });
      continue;
    }
    const entry = record?.files.find((f) => f.path === spec.path);
    if (entry !== undefined && sha1(current) === entry.installed_sha1) {
      const original =
        entry.original_b64 === null
          ? null
          : Buffer.from(entry.original_b64, "base64").toString("utf8");
      if (original === current) {
        files.push({ path: spec.path, action: "unchanged", changes: [] });
        continue;
      }
      writes.push({ abs, text: original });
      files.push({
        path: spec.path,
        action: original === null ? "deleted" : "restored",
        changes: ["as before the install"],
      });
      continue;
    }
    const next = spec.uninstall(current);
    if (next.text === current) {
      files.push({ path: spec.path, action: "unchanged", changes: [] });
      continue;
    }
    writes.push({ abs, text: next.text });
    files.push({
      path: spec.path,
      action: next.text === null ? "deleted" : "updated",
      changes: next.changes,
    });
  }
  const changed = files.some((f) => f.action !== "unchanged");
  if (options.dryRun !== true) {
    for (const w of writes) writeText(w.abs, w.text);
    // Deepest first, and only while empty: a directory the user has since put files in stays.
    const dirs = [...(record?.created_dirs ?? [])].sort((a, b) => b.length - a.length);
    for (const d of dirs) {
      try {
        rmdirSync(join(options.root, d));
      } catch {
        // not empty, or already gone
      }
    }
    if (record !== null) rmSync(recordPath(options.root, options.agent), { force: true });
  }
  const daemonStopped =
    options.dryRun !== true &&
    (changed || record !== null) &&
    !anyInstallLeft(options.root) &&
    stopWatchDaemon(options.root);
  return {
    agent: options.agent,
    operation: "uninstall",
    dry_run: options.dryRun === true,
    changed,
    files,
    undo: null,
    daemon_stopped: daemonStopped,
    notes: daemonStopped
      ? [
          "No agent is installed here any more: the watch daemon was stopped (`timewarp watch start` starts it again).",
        ]
      : [],
  };
}
