import { spawnSync } from "node:child_process";
import {
  chmodSync,
  existsSync,
  mkdirSync,
  readFileSync,
  realpathSync,
  writeFileSync,
} from "node:fs";
import { dirname, join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createProgram } from "../src/cli/main.ts";
import { isProcessAlive, systemClock } from "../src/core/index.ts";
import { HOOK_REPLY_WAIT_MS } from "../src/hooks/hook-protocol.ts";
import {
  HOOK_EVENTS,
  hooksFor,
  type InstallAgent,
  installAgent,
  uninstallAgent,
} from "../src/hooks/index.ts";
import { initWorkspace } from "../src/store/index.ts";
import { makeTempDir, REPO_ROOT, runCli } from "./helpers/cli.ts";

let dir: string;
let cleanup: () => void;
beforeEach(() => {
  ({ dir, cleanup } = makeTempDir("tw-install-"));
});
afterEach(() => cleanup());

// What an install wires by default: this checkout's own programs, by their absolute paths.
const OWN = realpathSync(join(REPO_ROOT, "bin", "timewarp.cjs"));
const OWN_HOOK = join(dirname(OWN), "timewarp-hook");

const read = (rel: string) => readFileSync(join(dir, rel), "utf8");
const install = (agent: InstallAgent, extra: { dryRun?: boolean; command?: string } = {}) =>
  installAgent({ root: dir, agent, clock: systemClock, ...extra });
const uninstall = (agent: InstallAgent) => uninstallAgent({ root: dir, agent, clock: systemClock });
// The install module itself is synchronous; the index loads it lazily (off the hook path).

function snapshotFiles(paths: string[]): Record<string, string | null> {
  return Object.fromEntries(paths.map((p) => [p, existsSync(join(dir, p)) ? read(p) : null]));
}

describe("timewarp install (real CLI)", () => {
  it("claude-code: writes hooks, .mcp.json and the skill; a second run changes nothing and says so", async () => {
    const first = runCli(["install", "claude-code", "--json"], { cwd: dir });
    expect(first.status).toBe(0);
    const report = first.json() as {
      changed: boolean;
      files: { path: string; action: string }[];
      undo: string;
    };
    expect(report.changed).toBe(true);
    expect(report.files.map((f) => [f.path, f.action])).toEqual([
      [".claude/settings.json", "created"],
      [".mcp.json", "created"],
      [".claude/skills/timewarp-optimize/SKILL.md", "created"],
    ]);
    expect(report.undo).toBe("timewarp install --uninstall claude-code");
    const settings = JSON.parse(read(".claude/settings.json")) as {
      hooks: Record<string, unknown>;
    };
    expect(settings.hooks).toEqual(hooksFor("claude-code", OWN));
    expect(JSON.parse(read(".mcp.json"))).toEqual({
      mcpServers: { timewarp: { command: OWN, args: ["mcp"] } },
    });
    const files = [
      ".claude/settings.json",
      ".mcp.json",
      ".claude/skills/timewarp-optimize/SKILL.md",
    ];
    const before = snapshotFiles(files);
    const second = runCli(["install", "claude-code"], { cwd: dir });
    expect(second.status).toBe(0);
    expect(second.stdout).toContain("nothing changed");
    expect(snapshotFiles(files)).toEqual(before);
    const undo = runCli(["install", "--uninstall", "claude-code"], { cwd: dir });
    expect(undo.status).toBe(0);
    expect(existsSync(join(dir, ".claude"))).toBe(false); // the directories it created, too
    expect(snapshotFiles(files)).toEqual({
      ".claude/settings.json": null,
      ".mcp.json": null,
      ".claude/skills/timewarp-optimize/SKILL.md": null,
    });
  });
});

describe("install --uninstall and the watch daemon (real CLI, a real daemon)", () => {
  // vitest.config.ts sets TIMEWARP_WATCH=0 for the other suites: this one runs a daemon
  const env = { TIMEWARP_WATCH: "1" };
  const cli = (args: string[]) => {
    const r = runCli([...args, "--json", "-C", dir], { env });
    expect(r.status, r.stderr).toBe(0);
    return r.json() as Record<string, unknown>;
  };
  // a zombie (the daemon's parent, the CLI, is gone; nothing reaped it yet) is not alive
  const alive = isProcessAlive;

  it("probes the toolchain versions into the fingerprint cache the first session start reads; a dry run does not", async () => {
    const cache = join(dir, ".timewarp", "cache", "env-fingerprint.json");
    await install("claude-code", { dryRun: true });
    expect(existsSync(cache)).toBe(false);
    await install("claude-code");
    const warmed = JSON.parse(read(".timewarp/cache/env-fingerprint.json")) as {
      fingerprint: Record<string, string>;
    };
    expect(warmed.fingerprint.platform).toBe(process.platform);
    expect(warmed.fingerprint.node).toMatch(/^v\d+\./);
    const { startSession } = await import("../src/timemachine/index.ts");
    const started = await startSession({ root: dir, sessionId: "s1", clock: systemClock });
    expect(started.env_fingerprint).toEqual(warmed.fingerprint);
  });

  it("stops the daemon once no agent is installed in the workspace, not before", () => {
    initWorkspace(dir);
    cli(["install", "claude-code"]);
    cli(["install", "gemini"]);
    const started = cli(["watch", "start"]) as { running: boolean; pid: number };
    expect(started.running).toBe(true);
    try {
      // gemini is still installed: its hooks still ask the daemon
      const first = cli(["install", "--uninstall", "claude-code"]);
      expect(first.daemon_stopped).toBe(false);
      expect(alive(started.pid)).toBe(true);
      expect((cli(["watch", "status"]) as { running: boolean }).running).toBe(true);
      const last = cli(["install", "--uninstall", "gemini"]) as {
        daemon_stopped: boolean;
        notes: string[];
      };
      expect(last.daemon_stopped).toBe(true);
      expect(last.notes.join("\n")).toContain("watch daemon was stopped");
      expect(alive(started.pid)).toBe(false);
      expect((cli(["watch", "status"]) as { running: boolean }).running).toBe(false);
      // nothing left to uninstall, no daemon: nothing to stop
      expect(cli(["install", "--uninstall", "gemini"]).daemon_stopped).toBe(false);
    } finally {
      if (alive(started.pid)) process.kill(started.pid, "SIGTERM");
    }
  });
});

describe("installAgent / uninstallAgent", () => {
  it("merges into an existing .claude/settings.json keeping the user's keys and hooks; uninstall restores the bytes", async () => {
    mkdirSync(join(dir, ".claude"));
    const original = `{\n  "permissions": { "allow": ["Bash(npm test)"] },\n  "hooks": {\n    "PostToolUse": [{ "matcher": "Write", "hooks": [{ "type": "command", "command": "prettier --write" }] }]\n  }\n}\n`;
    writeFileSync(join(dir, ".claude", "settings.json"), original);
    const report = await install("claude-code");
    expect(report.files[0]).toMatchObject({ path: ".claude/settings.json", action: "updated" });
    expect(report.files[0]?.changes).toEqual([
      "+hooks.SessionStart",
      "+hooks.PreToolUse",
      "+hooks.PostToolUse",
      "+hooks.PostToolUseFailure",
      "+hooks.SessionEnd",
      "+hooks.UserPromptSubmit",
    ]);
    const merged = JSON.parse(read(".claude/settings.json")) as {
      permissions: unknown;
      hooks: { PostToolUse: { matcher: string; hooks: { command: string }[] }[] };
    };
    expect(merged.permissions).toEqual({ allow: ["Bash(npm test)"] });
    expect(merged.hooks.PostToolUse.map((g) => g.hooks[0]?.command)).toEqual([
      "prettier --write",
      `${OWN_HOOK} post-tool-use --agent claude-code`,
    ]);
    expect((await install("claude-code")).changed).toBe(false);
    await uninstall("claude-code");
    expect(read(".claude/settings.json")).toBe(original);
    expect(existsSync(join(dir, ".claude", "skills"))).toBe(false);
  });

  it("uninstall after the user edited the file removes only timewarp's entries", async () => {
    await install("claude-code");
    const edited = JSON.parse(read(".claude/settings.json")) as Record<string, unknown>;
    edited.model = "opus";
    writeFileSync(join(dir, ".claude", "settings.json"), JSON.stringify(edited));
    const report = await uninstall("claude-code");
    expect(report.files[0]).toMatchObject({ action: "updated" });
    expect(JSON.parse(read(".claude/settings.json"))).toEqual({ model: "opus" });
    expect(existsSync(join(dir, ".mcp.json"))).toBe(false);
  });

  it("says when the programs the wiring starts are not on PATH, and not when they are", async () => {
    const bin = join(dir, "bin");
    mkdirSync(bin);
    const notes = async (PATH: string, command?: string) =>
      (
        await installAgent({
          root: dir,
          agent: "claude-code",
          clock: systemClock,
          dryRun: true,
          env: { PATH },
          ...(command !== undefined ? { command } : {}),
        })
      ).notes.filter((n) => n.includes("is not on this PATH"));
    expect(await notes(bin, "timewarp")).toEqual([
      expect.stringMatching(/^`timewarp` is not on this PATH/),
      expect.stringMatching(/^`timewarp-hook` is not on this PATH/),
    ]);
    for (const name of ["timewarp", "timewarp-hook"]) {
      writeFileSync(join(bin, name), "#!/bin/sh\n");
      chmodSync(join(bin, name), name === "timewarp" ? 0o755 : 0o644); // not executable yet
    }
    expect(await notes(`/nowhere:${bin}`, "timewarp")).toEqual([
      expect.stringMatching(/^`timewarp-hook` is not on this PATH/),
    ]);
    chmodSync(join(bin, "timewarp-hook"), 0o755);
    expect(await notes(`/nowhere:${bin}`, "timewarp")).toEqual([]);
    // the default names this timewarp by its path: the PATH is not asked
    expect(await notes("")).toEqual([]);
    // a path is looked at as it is; a launcher is the one program
    expect(await notes("", join(bin, "timewarp"))).toEqual([]);
    expect(await notes(bin, "npx timewarp")).toEqual([
      expect.stringMatching(/^`npx` is not on this PATH/),
    ]);
  });

  it("wires this timewarp by its absolute path: hooks run from a PATH without it; a re-install updates an old bare wiring", () => {
    const r = runCli(["install", "claude-code", "--json"], { cwd: dir });
    expect(r.status, r.stderr).toBe(0);
    const settings = () =>
      JSON.parse(read(".claude/settings.json")) as {
        hooks: Record<string, { hooks: { command: string }[] }[]>;
      };
    const pre = settings().hooks.PreToolUse?.[0]?.hooks[0]?.command ?? "";
    expect(pre).toBe(`${OWN_HOOK} pre-tool-use --agent claude-code`);
    // The agent's PATH has node (bin/timewarp-hook runs the CLI with it) but no timewarp-hook:
    // a bare `timewarp-hook` would exit 127, which Claude Code takes as a non-blocking error.
    mkdirSync(join(dir, ".timewarp", "memory"), { recursive: true });
    writeFileSync(
      join(dir, ".timewarp", "memory", "goal.json"),
      JSON.stringify({ objective: "x", whitelist: ["src/**"], blacklist: ["package.json"] }),
    );
    const run = spawnSync("sh", ["-c", pre], {
      cwd: dir,
      input: JSON.stringify({
        session_id: "s-abs",
        cwd: dir,
        hook_event_name: "PreToolUse",
        tool_name: "Write",
        tool_use_id: "toolu_abs",
        tool_input: { file_path: join(dir, "package.json"), content: "{}" },
      }),
      encoding: "utf8",
      env: { ...process.env, PATH: `${dirname(process.execPath)}:/usr/bin:/bin` },
      timeout: 60_000,
    });
    expect(run.status, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout).hookSpecificOutput.permissionDecision).toBe("deny");
    // An older install wrote bare names: installing again puts the path in their place.
    writeFileSync(
      join(dir, ".claude", "settings.json"),
      read(".claude/settings.json").replaceAll(`${OWN_HOOK} `, "timewarp-hook "),
    );
    const again = runCli(["install", "claude-code", "--json"], { cwd: dir });
    expect(again.status, again.stderr).toBe(0);
    expect((again.json() as { files: { changes: string[] }[] }).files[0]?.changes).toContain(
      "~hooks.PreToolUse",
    );
    expect(settings().hooks).toEqual(hooksFor("claude-code", OWN));
    // Uninstall knows timewarp's handlers by their shape, whatever path they name.
    const mixed = settings();
    (mixed.hooks.PreToolUse?.[0]?.hooks ?? []).push({
      command: "timewarp-hook pre-tool-use --agent claude-code",
    });
    writeFileSync(join(dir, ".claude", "settings.json"), JSON.stringify(mixed));
    expect(runCli(["install", "--uninstall", "claude-code"], { cwd: dir }).status).toBe(0);
    expect(existsSync(join(dir, ".claude", "settings.json"))).toBe(false);
  });

  it("refuses to wire a program that is not there to run, writing nothing", () => {
    const r = runCli(
      ["install", "codex", "--command", join(dir, "nowhere", "timewarp"), "--json"],
      {
        cwd: dir,
      },
    );
    expect(r.status).not.toBe(0);
    const error = (r.json() as { error: { code: string; message: string } }).error;
    expect(error.code).toBe("INVALID_INPUT");
    expect(error.message).toContain(join(dir, "nowhere", "timewarp-hook"));
    expect(existsSync(join(dir, ".codex"))).toBe(false);
  });

  it("refuses a git repository that a .timewarp/ above it would take, until the repository is a workspace of its own", () => {
    // a stray workspace above the project (a /tmp/.timewarp, a ~/.timewarp)
    mkdirSync(join(dir, ".timewarp"));
    const repo = join(dir, "project");
    mkdirSync(repo);
    expect(spawnSync("git", ["init", "-q"], { cwd: repo }).status).toBe(0);
    const refused = runCli(["install", "codex", "--json"], { cwd: repo });
    expect(refused.status).not.toBe(0);
    const error = (refused.json() as { error: { code: string; message: string } }).error;
    expect(error.code).toBe("INVALID_INPUT");
    expect(error.message).toContain(`${repo} is a git repository inside the workspace ${dir}`);
    expect(error.message).toContain("timewarp init --here");
    expect(existsSync(join(dir, ".codex"))).toBe(false);
    expect(existsSync(join(repo, ".codex"))).toBe(false);
    // from the workspace's own root, it is what the user means
    expect(runCli(["install", "codex", "--json", "--dry-run"], { cwd: dir }).status).toBe(0);
    // the repository made a workspace of its own: the install goes there
    expect(runCli(["init", "--here"], { cwd: repo }).status).toBe(0);
    expect(runCli(["install", "codex", "--json"], { cwd: repo }).status).toBe(0);
    expect(existsSync(join(repo, ".codex", "hooks.json"))).toBe(true);
    expect(existsSync(join(dir, ".codex"))).toBe(false);
  });

  it("gemini: hooks and mcpServers merge into .gemini/settings.json beside the user's settings", async () => {
    mkdirSync(join(dir, ".gemini"));
    const original = JSON.stringify(
      { theme: "GitHub", mcpServers: { other: { command: "x" } } },
      null,
      2,
    );
    writeFileSync(join(dir, ".gemini", "settings.json"), original);
    const dry = await install("gemini", { dryRun: true });
    expect(dry.changed).toBe(true);
    expect(read(".gemini/settings.json")).toBe(original); // dry run wrote nothing
    await install("gemini");
    const s = JSON.parse(read(".gemini/settings.json")) as {
      theme: string;
      mcpServers: Record<string, unknown>;
      hooks: Record<string, { matcher?: string; hooks: { command: string; name: string }[] }[]>;
    };
    expect(s.theme).toBe("GitHub");
    expect(Object.keys(s.mcpServers)).toEqual(["other", "timewarp"]);
    expect(Object.keys(s.hooks)).toEqual([
      "SessionStart",
      "BeforeTool",
      "AfterTool",
      "SessionEnd",
      "BeforeAgent",
    ]);
    expect(s.hooks.BeforeTool?.[0]?.matcher).toBe("^(write_file|replace|run_shell_command)$");
    expect(s.hooks.BeforeTool?.[0]?.hooks[0]?.command).toBe(
      `${OWN_HOOK} pre-tool-use --agent gemini`,
    );
    const again = snapshotFiles([".gemini/settings.json"]);
    expect((await install("gemini")).changed).toBe(false);
    expect(snapshotFiles([".gemini/settings.json"])).toEqual(again);
    await uninstall("gemini");
    expect(read(".gemini/settings.json")).toBe(original);
  });

  it("codex: .codex/hooks.json plus a marked MCP block appended to the user's config.toml, and back", async () => {
    mkdirSync(join(dir, ".codex"));
    const toml = 'model = "gpt-5-codex"\n\n[features]\nweb_search = true\n';
    writeFileSync(join(dir, ".codex", "config.toml"), toml);
    const report = await install("codex");
    // what Codex needs besides the files: hook trust (exec --trust is not it), MCP approval
    expect(report.notes.join("\n")).toMatch(/trust the hooks with \/hooks \(`codex exec --trust`/);
    expect(report.notes.join("\n")).toContain("mcp_servers.timewarp.default_tools_approval_mode");
    const config = read(".codex/config.toml");
    expect(config.startsWith(toml)).toBe(true);
    expect(config).toContain(`[mcp_servers.timewarp]\ncommand = "${OWN}"\nargs = ["mcp"]\n`);
    const hooks = JSON.parse(read(".codex/hooks.json")) as {
      hooks: Record<string, { matcher?: string }[]>;
    };
    expect(hooks.hooks.PreToolUse?.[0]?.matcher).toBe("^(apply_patch|Bash)$");
    expect((await install("codex")).changed).toBe(false);
    // Edited since: the structural removal still takes out exactly the block.
    writeFileSync(
      join(dir, ".codex", "config.toml"),
      `${read(".codex/config.toml")}\n[profiles.fast]\nmodel = "o4-mini"\n`,
    );
    await uninstall("codex");
    expect(read(".codex/config.toml")).toBe(`${toml}\n[profiles.fast]\nmodel = "o4-mini"\n`);
    expect(existsSync(join(dir, ".codex", "hooks.json"))).toBe(false);
  });

  it("timeouts: each agent waits longer than the clients wait for the daemon; Codex's SessionEnd is 3 s", () => {
    const seconds = (agent: string, t: number | undefined) =>
      (t ?? 0) / (agent === "gemini" ? 1000 : 1);
    const files = {
      "claude-code": ".claude/settings.json",
      codex: ".codex/hooks.json",
      gemini: ".gemini/settings.json",
    } as const;
    for (const [agent, file] of Object.entries(files)) {
      expect(runCli(["install", agent, "--json"], { cwd: dir }).status).toBe(0);
      const { hooks } = JSON.parse(read(file)) as {
        hooks: Record<string, { hooks: { timeout?: number }[] }[]>;
      };
      for (const [event, groups] of Object.entries(hooks))
        for (const h of groups.flatMap((g) => g.hooks)) {
          // Codex clamps SessionEnd to 3 s and warns on every start about anything longer.
          if (agent === "codex" && event === "SessionEnd") expect(h.timeout).toBe(3);
          else expect(seconds(agent, h.timeout)).toBeGreaterThan(HOOK_REPLY_WAIT_MS / 1000);
        }
    }
  });

  /** The file as an independent TOML reader (Python's tomllib) reads it, or null without one. */
  function readToml(rel: string): unknown {
    const r = spawnSync(
      "python3",
      [
        "-c",
        "import json, sys, tomllib; print(json.dumps(tomllib.load(open(sys.argv[1], 'rb'))))",
        join(dir, rel),
      ],
      { encoding: "utf8" },
    );
    if (r.error !== undefined || /No module named/.test(r.stderr)) return null;
    if (r.status !== 0) throw new Error(`not TOML: ${r.stderr}`);
    return JSON.parse(r.stdout);
  }

  const USER_CONFIGS = {
    "an inline table": [
      "# my Codex config",
      'model = "gpt-5-codex"   # the default',
      'mcp_servers = { other = { command = "other-mcp", args = ["--stdio"] } }',
      "",
      "[profiles.fast]",
      'model = "o4-mini"',
      "",
    ],
    "dotted keys": [
      'model = "gpt-5-codex"',
      "# servers, the short way",
      'mcp_servers.other.command = "other-mcp"',
      'mcp_servers.other.args = ["--stdio"]',
      "",
    ],
    "a table with comments": [
      "# top comment",
      "[mcp_servers.other]",
      'command = "other-mcp" # keep me',
      'args = ["--stdio"]',
      "",
      "[profiles.fast]",
      'model = "o4-mini"',
      "",
    ],
  };

  it.each(Object.entries(USER_CONFIGS))(
    "codex: the MCP server merges into a config.toml with %s; comments kept, uninstall restores it byte for byte",
    (_name, lines) => {
      mkdirSync(join(dir, ".codex"));
      const original = lines.join("\n");
      writeFileSync(join(dir, ".codex", "config.toml"), original);
      const first = runCli(["install", "codex", "--json"], { cwd: dir });
      expect(first.status, first.stdout + first.stderr).toBe(0);
      const config = read(".codex/config.toml");
      for (const line of lines.filter((l) => l.includes("#"))) expect(config).toContain(line);
      const parsed = readToml(".codex/config.toml") as {
        mcp_servers: Record<string, unknown>;
      } | null;
      if (parsed !== null) {
        expect(parsed.mcp_servers).toEqual({
          other: { command: "other-mcp", args: ["--stdio"] },
          // the installing timewarp, by its absolute path
          timewarp: { command: expect.stringMatching(/^\/.*timewarp(\.cjs)?$/), args: ["mcp"] },
        });
      }
      const again = runCli(["install", "codex", "--json"], { cwd: dir });
      expect((again.json() as { changed: boolean }).changed).toBe(false);
      // untouched since: the original bytes come back
      const undo = runCli(["install", "--uninstall", "codex", "--json"], { cwd: dir });
      expect(undo.status, undo.stdout + undo.stderr).toBe(0);
      expect(read(".codex/config.toml")).toBe(original);

      // edited since: the structural removal takes out timewarp's entry and keeps the edit
      expect(runCli(["install", "codex"], { cwd: dir }).status).toBe(0);
      writeFileSync(
        join(dir, ".codex", "config.toml"),
        `approval_policy = "never"\n${read(".codex/config.toml")}`,
      );
      expect(runCli(["install", "--uninstall", "codex"], { cwd: dir }).status).toBe(0);
      expect(read(".codex/config.toml")).toBe(`approval_policy = "never"\n${original}`);
    },
    120_000,
  );

  it("codex: refuses to shadow a user's own [mcp_servers.timewarp], writing nothing", async () => {
    mkdirSync(join(dir, ".codex"));
    writeFileSync(join(dir, ".codex", "config.toml"), '[mcp_servers.timewarp]\ncommand = "tw"\n');
    await expect(install("codex")).rejects.toThrow(/already defines/);
    expect(existsSync(join(dir, ".codex", "hooks.json"))).toBe(false);
  });

  it("opencode: the plugin module (command filled in) and the MCP server in opencode.json", async () => {
    writeFileSync(
      join(dir, "opencode.json"),
      JSON.stringify({ model: "anthropic/claude-sonnet-4" }),
    );
    await install("opencode", { command: "npx timewarp" });
    const plugin = read(".opencode/plugins/timewarp.js");
    expect(plugin).toContain('const TIMEWARP_COMMAND = ["npx","timewarp"];');
    const config = JSON.parse(read("opencode.json")) as {
      model: string;
      mcp: Record<string, unknown>;
    };
    expect(config.model).toBe("anthropic/claude-sonnet-4");
    expect(config.mcp.timewarp).toEqual({
      type: "local",
      command: ["npx", "timewarp", "mcp"],
      enabled: true,
    });
    await uninstall("opencode");
    expect(read("opencode.json")).toBe(JSON.stringify({ model: "anthropic/claude-sonnet-4" }));
    expect(existsSync(join(dir, ".opencode", "plugins", "timewarp.js"))).toBe(false);
  });

  it("an invalid settings file is refused with INVALID_INPUT and nothing is written", async () => {
    mkdirSync(join(dir, ".claude"));
    writeFileSync(join(dir, ".claude", "settings.json"), "{ not json");
    await expect(install("claude-code")).rejects.toThrow(/not valid JSON/);
    expect(existsSync(join(dir, ".mcp.json"))).toBe(false);
  });
});

describe("the wiring shipped in plugins/", () => {
  const plugin = (rel: string) => readFileSync(join(REPO_ROOT, "plugins", rel), "utf8");

  it("every JSON file parses, and hooks.json is exactly the Claude Code wiring", async () => {
    const manifest = JSON.parse(plugin("claude-code/.claude-plugin/plugin.json")) as {
      name: string;
      version: string;
    };
    expect(manifest.name).toBe("timewarp");
    const pkg = JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8")) as {
      version: string;
      files: string[];
    };
    expect(manifest.version).toBe(pkg.version);
    expect(pkg.files).toContain("plugins");
    expect(JSON.parse(plugin("claude-code/.mcp.json"))).toEqual({
      mcpServers: { timewarp: { command: "timewarp", args: ["mcp"] } },
    });
    const hooks = JSON.parse(plugin("claude-code/hooks/hooks.json")) as { hooks: unknown };
    expect(hooks.hooks).toEqual(hooksFor("claude-code", "timewarp"));
  });

  it("hooks.json names commands the CLI really has", async () => {
    const hooks = JSON.parse(plugin("claude-code/hooks/hooks.json")) as {
      hooks: Record<string, { hooks: { command: string }[] }[]>;
    };
    // timewarp-hook is a bin of the package, and what it cannot answer goes to `timewarp hook`
    const pkg = JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8")) as {
      bin: Record<string, string>;
    };
    expect(pkg.bin["timewarp-hook"]).toBe("bin/timewarp-hook");
    const program = createProgram();
    expect(program.commands.map((c) => c.name())).toContain("hook");
    const choices: readonly string[] = HOOK_EVENTS;
    for (const groups of Object.values(hooks.hooks))
      for (const g of groups)
        for (const h of g.hooks) {
          const [bin, event, flag, agent] = h.command.split(" ");
          expect([bin, flag, agent]).toEqual(["timewarp-hook", "--agent", "claude-code"]);
          expect(choices).toContain(event);
        }
  });

  it("the skill teaches the 7-step protocol with the MCP tool names", async () => {
    const skill = plugin("claude-code/skills/timewarp-optimize/SKILL.md");
    expect(skill).toMatch(/^---\nname: timewarp-optimize\ndescription: .+\n---\n/);
    for (const step of [
      "1. **Pick an issue.**",
      "2. **Travel**",
      "3. **Reproduce**",
      "4. **Propose a minimal fix**",
      "5. **Iterate**",
      "6. **Return**",
      "7. **Re-apply and validate**",
    ])
      expect(skill).toContain(step);
    for (const tool of [
      "timewarp_issue_list",
      "timewarp_issue_get",
      "timewarp_travel",
      "timewarp_return",
      "issue_report",
    ])
      expect(skill).toContain(tool);
  });
});
