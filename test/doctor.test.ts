import { chmodSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { makeTempDir, runCli } from "./helpers/cli.ts";

interface Check {
  id: string;
  status: "ok" | "warn" | "fail";
  message: string;
  fix?: string;
}
interface Report {
  ok: boolean;
  root: string;
  path: string;
  agents: {
    agent: string;
    installed_at: string;
    last_session_at: string | null;
    checks: Check[];
  }[];
  daemon: { status: string; running: boolean; message: string; fix?: string };
  recent_failures: { ts: string; event: string; agent?: string; message: string }[];
}

let dir: string;
let project: string;
let programs: string;
let cleanup: () => void;

// The wiring points at programs of the test's own (never this checkout's bin/, which a test
// must not delete): a stand-in `timewarp` with its `timewarp-hook` beside it.
beforeEach(() => {
  ({ dir, cleanup } = makeTempDir("tw-doctor-"));
  project = join(dir, "project");
  programs = join(dir, "programs");
  mkdirSync(project);
  mkdirSync(programs);
  for (const name of ["timewarp", "timewarp-hook"]) {
    writeFileSync(join(programs, name), "#!/bin/sh\nexit 0\n");
    chmodSync(join(programs, name), 0o755);
  }
  const installed = runCli(
    ["install", "claude-code", "--command", join(programs, "timewarp"), "--json"],
    { cwd: project },
  );
  expect(installed.status).toBe(0);
});
afterEach(() => cleanup());

const doctor = (): { status: number | null; report: Report } => {
  const run = runCli(["doctor", "--json"], { cwd: project });
  return { status: run.status, report: run.json() as Report };
};
const checksOf = (report: Report): Check[] => report.agents[0]?.checks ?? [];
const check = (report: Report, id: string): Check | undefined =>
  checksOf(report).find((c) => c.id === id);

describe("timewarp doctor (real CLI)", () => {
  it("a fresh install: ok, with one warning that no session arrived yet; exit 0", () => {
    const { status, report } = doctor();
    expect(status).toBe(0);
    expect(report.ok).toBe(true);
    expect(Object.keys(report).sort()).toEqual([
      "agents",
      "daemon",
      "ok",
      "path",
      "recent_failures",
      "root",
    ]);
    expect(report.agents.map((a) => a.agent)).toEqual(["claude-code"]);
    const checks = checksOf(report);
    for (const c of checks)
      expect(Object.keys(c).every((k) => ["id", "status", "message", "fix"].includes(k))).toBe(
        true,
      );
    expect(checks.map((c) => c.id)).toEqual([
      `program:${join(programs, "timewarp-hook")}`,
      `program:${join(programs, "timewarp")}`,
      "config:.claude/settings.json",
      "config:.mcp.json",
      "config:.claude/skills/timewarp-optimize/SKILL.md",
      "session",
    ]);
    expect(checks.filter((c) => c.status !== "ok").map((c) => c.id)).toEqual(["session"]);
    expect(check(report, "session")).toMatchObject({
      status: "warn",
      fix: `cd ${project} && claude`,
    });
    expect(check(report, "session")?.message).toMatch(/no session yet/);
    expect(report.agents[0]?.last_session_at).toBeNull();
    // The tests run with TIMEWARP_WATCH=0: no daemon, a warning with its fix.
    expect(report.daemon).toMatchObject({
      status: "warn",
      running: false,
      fix: "timewarp watch start",
    });
    expect(report.recent_failures).toEqual([]);

    const text = runCli(["doctor"], { cwd: project });
    expect(text.status).toBe(0);
    expect(text.stdout).toMatch(/claude-code/);
    expect(text.stdout).toMatch(/warn\s+session\s+no session yet/);
    expect(text.stdout).toMatch(/fix: cd .* && claude/);
    expect(text.stdout).toMatch(/nothing failing, 2 warning/);
  });

  it("a session that arrived through the hook: its time, no warning", () => {
    const payload = {
      session_id: "s-doctor-1",
      cwd: project,
      hook_event_name: "SessionStart",
      transcript_path: join(dir, ".claude", "projects", "p", "s-doctor-1.jsonl"),
    };
    const hook = runCli(["hook", "session-start", "--agent", "claude-code"], {
      cwd: project,
      input: JSON.stringify(payload),
    });
    expect(hook.status).toBe(0);
    const { status, report } = doctor();
    expect(status).toBe(0);
    expect(check(report, "session")?.status).toBe("ok");
    expect(report.agents[0]?.last_session_at).toEqual(expect.any(String));
  });

  it("with two agents installed, a session is credited to the agent that started it, by its own word", () => {
    const gemini = runCli(
      ["install", "gemini", "--command", join(programs, "timewarp"), "--json"],
      { cwd: project },
    );
    expect(gemini.status).toBe(0);
    // no transcript path to guess from: only the hook's --agent says who came
    const hook = runCli(["hook", "session-start", "--agent", "gemini"], {
      cwd: project,
      input: JSON.stringify({ session_id: "s-doctor-2", cwd: project }),
    });
    expect(hook.status).toBe(0);
    const { report } = doctor();
    const sessionOf = (agent: string) =>
      report.agents.find((a) => a.agent === agent)?.checks.find((c) => c.id === "session");
    expect(sessionOf("gemini")?.status).toBe("ok");
    expect(sessionOf("claude-code")?.status).toBe("warn");
    const record = JSON.parse(
      readFileSync(join(project, ".timewarp", "sessions", "s-doctor-2.json"), "utf8"),
    ) as { agent?: string };
    expect(record.agent).toBe("gemini");
  });

  it("the wired hook program deleted: fail, fixed by installing again; exit 1", () => {
    rmSync(join(programs, "timewarp-hook"));
    const { status, report } = doctor();
    expect(status).toBe(1);
    expect(report.ok).toBe(false);
    const c = check(report, `program:${join(programs, "timewarp-hook")}`);
    expect(c).toMatchObject({ status: "fail", fix: "timewarp install claude-code" });
    expect(c?.message).toMatch(/is missing/);

    const text = runCli(["doctor"], { cwd: project });
    expect(text.status).toBe(1);
    expect(text.stdout).toMatch(/fail\s+program:.*timewarp-hook/);
    expect(text.stdout).toMatch(/fix: timewarp install claude-code/);
  });

  it("the wired program not executable: fail with the same fix", () => {
    chmodSync(join(programs, "timewarp"), 0o644);
    const { status, report } = doctor();
    expect(status).toBe(1);
    const c = check(report, `program:${join(programs, "timewarp")}`);
    expect(c).toMatchObject({ status: "fail", fix: "timewarp install claude-code" });
    expect(c?.message).toMatch(/not executable/);
  });

  it("a bare program name is looked up on PATH, and the PATH used is reported", () => {
    const again = runCli(["install", "claude-code", "--command", "timewarp", "--json"], {
      cwd: project,
    });
    expect(again.status).toBe(0);
    const onPath = runCli(["doctor", "--json"], {
      cwd: project,
      env: { PATH: `${programs}:${process.env.PATH ?? ""}` },
    });
    expect(onPath.status).toBe(0);
    const found = onPath.json() as Report;
    expect(check(found, "program:timewarp-hook")).toMatchObject({ status: "ok" });
    expect(check(found, "program:timewarp-hook")?.message).toContain(
      join(programs, "timewarp-hook"),
    );

    // Only node's own directory (tsx's `#!/usr/bin/env node` needs it), which has no timewarp.
    const nodeOnly = dirname(process.execPath);
    const bare = runCli(["doctor", "--json"], { cwd: project, env: { PATH: nodeOnly } });
    const report = bare.json() as Report;
    expect(bare.status).toBe(1);
    expect(report.path).toBe(nodeOnly);
    const c = check(report, "program:timewarp-hook");
    expect(c).toMatchObject({ status: "fail", fix: "timewarp install claude-code" });
    expect(c?.message).toContain(`not on PATH (${nodeOnly})`);
  });

  it("a hook removed from the settings by hand: fail", () => {
    const file = join(project, ".claude", "settings.json");
    const settings = JSON.parse(readFileSync(file, "utf8")) as { hooks: Record<string, unknown> };
    delete settings.hooks.PreToolUse;
    writeFileSync(file, JSON.stringify(settings, null, 2));
    const { status, report } = doctor();
    expect(status).toBe(1);
    const c = check(report, "config:.claude/settings.json");
    expect(c).toMatchObject({ status: "fail", fix: "timewarp install claude-code" });
    expect(c?.message).toMatch(/\+hooks\.PreToolUse/);
    // the others stay ok
    expect(check(report, "config:.mcp.json")?.status).toBe("ok");
  });

  it("recent hook.failed events are listed, newest first, with their message; at most 5", () => {
    for (let i = 0; i < 6; i++) {
      const hook = runCli(["hook", "post-tool-use", "--agent", "claude-code"], {
        cwd: project,
        input: `not json ${i}`,
      });
      expect(hook.status).toBe(0); // a hook never breaks the agent
    }
    const { status, report } = doctor();
    expect(status).toBe(0); // failures are listed, not a failing check
    expect(report.recent_failures).toHaveLength(5);
    for (const f of report.recent_failures)
      expect(f).toMatchObject({ event: "post-tool-use", agent: "claude-code" });
    expect(report.recent_failures[0]?.message).toEqual(expect.any(String));
    expect(report.recent_failures[0]?.message).not.toBe("");

    const text = runCli(["doctor"], { cwd: project });
    expect(text.stdout).toMatch(/recent hook failures \(last 5\)/);
    expect(text.stdout).toMatch(/post-tool-use \[claude-code\]: /);
  });

  it("codex: the project's and the hooks' trust read as Codex reads them, a re-install included", async () => {
    const { codexHookHash } = await import("../src/hooks/codex-trust.ts");
    const codexHome = join(dir, "codex-home");
    mkdirSync(codexHome);
    const env = { CODEX_HOME: codexHome };
    const install = (command: string) =>
      expect(
        runCli(["install", "codex", "--command", command, "--json"], { cwd: project }).status,
      ).toBe(0);
    const trust = () =>
      (runCli(["doctor", "--json"], { cwd: project, env }).json() as Report).agents
        .find((a) => a.agent === "codex")
        ?.checks.find((c) => c.id === "trust");
    const config = (withHooks: boolean) => {
      const hooks = JSON.parse(readFileSync(join(project, ".codex", "hooks.json"), "utf8")) as {
        hooks: Record<
          string,
          { matcher?: string; hooks: { command: string; timeout: number }[] }[]
        >;
      };
      const lines = [`[projects."${project}"]`, `trust_level = "trusted"`, ""];
      if (withHooks)
        for (const [event, groups] of Object.entries(hooks.hooks)) {
          const label = event.replace(/([a-z])([A-Z])/g, "$1_$2").toLowerCase();
          const [group] = groups;
          const [handler] = group?.hooks ?? [];
          if (group === undefined || handler === undefined) continue;
          lines.push(
            `[hooks.state."${project}/.codex/hooks.json:${label}:0:0"]`,
            `trusted_hash = "${codexHookHash(event, group.matcher, handler)}"`,
            "",
          );
        }
      writeFileSync(join(codexHome, "config.toml"), lines.join("\n"));
    };
    install(join(programs, "timewarp"));
    const untrusted = trust();
    expect(untrusted).toMatchObject({ status: "fail", fix: `cd ${project} && codex` });
    expect(untrusted?.message).toMatch(/does not trust/);
    // `codex exec --trust` trusts the folder only: Codex still skips every hook
    config(false);
    const folderOnly = trust();
    expect(folderOnly?.status).toBe("fail");
    expect(folderOnly?.message).toMatch(
      /SessionStart never trusted, PreToolUse never trusted, PostToolUse never trusted, SessionEnd never trusted, UserPromptSubmit never trusted/,
    );
    // /hooks → trust all
    config(true);
    const trusted = trust();
    expect(trusted?.status).toBe("ok");
    expect(trusted?.message).toMatch(/trusts the project and timewarp's 5 hooks/);
    // a session arrives; then timewarp moves and is installed again: new commands, new hashes
    const hook = runCli(["hook", "session-start", "--agent", "codex"], {
      cwd: project,
      input: JSON.stringify({ session_id: "s-codex-1", cwd: project, turn_id: "t" }),
    });
    expect(hook.status).toBe(0);
    const moved = join(dir, "moved");
    mkdirSync(moved);
    for (const name of ["timewarp", "timewarp-hook"]) {
      writeFileSync(join(moved, name), "#!/bin/sh\nexit 0\n");
      chmodSync(join(moved, name), 0o755);
    }
    install(join(moved, "timewarp"));
    const reinstalled = trust();
    expect(reinstalled?.status).toBe("fail");
    expect(reinstalled?.message).toMatch(/SessionStart changed since trusted/);
  }, 120_000);

  it("a workspace with nothing installed: ok, no agents", () => {
    const other = join(dir, "other");
    mkdirSync(other);
    const run = runCli(["doctor", "--json"], { cwd: other });
    expect(run.status).toBe(0);
    expect(run.json()).toMatchObject({ ok: true, agents: [], recent_failures: [] });
    expect(runCli(["doctor"], { cwd: other }).stdout).toMatch(/no agent installed here/);
  });

  it("--help explains the exit codes and shows an example", () => {
    const help = runCli(["doctor", "--help"]);
    expect(help.status).toBe(0);
    expect(help.stdout).toMatch(/1 when any check fails/);
    expect(help.stdout).toMatch(
      /Examples:\n {2}# .*\n {2}\$ timewarp install claude-code && timewarp doctor/,
    );
  });
});
