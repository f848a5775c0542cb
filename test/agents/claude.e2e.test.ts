/**
 * Claude Code, the real pinned client (`claude -p`), with timewarp installed the way a user
 * installs it, against a scripted model (`mock-anthropic.ts`): the issue-17 scenario end to end
 * (edit, shell edits, a failing shell command, a blocked edit, a warned edit, a blocked MCP edit),
 * then the ledger, the session record and the uninstall; then the hooks' cost, printed.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import {
  type AgentRun,
  type AgentWorkspace,
  agentWorkspace,
  bodyText,
  COMMITTED_FILES,
  clientBin,
  ledgerOperations,
  type ModelRequest,
  pinnedVersion,
  revertAll,
  runAgent,
  SEEDED_CARD_ID,
  startModelServer,
  timewarpJson,
  turnsOf,
  uninstallDiffers,
} from "./harness.ts";
import {
  type AnthropicStep,
  anthropicScript,
  toolResult,
  toolUseId,
  turnOf,
} from "./mock-anthropic.ts";

const VERSION = pinnedVersion("@anthropic-ai/claude-code");

/** What `timewarp install claude-code` writes, and uninstall must give back byte for byte. */
const CONFIG_FILES = [
  ".claude/settings.json",
  ".mcp.json",
  ".claude/skills/timewarp-optimize/SKILL.md",
  // not timewarp's: install and uninstall must leave it alone
  ".claude/settings.local.json",
];
/** The agent's own config paths: left out of "the tree is the commit's again". */
const AGENT_PATHS = [".claude/", ".mcp.json"];

/**
 * What a Claude Code user already has in the project before installing timewarp: a permission
 * rule and a hook of their own, an MCP server of their own, and the approvals Claude Code keeps
 * in `.claude/settings.local.json` (the user approved `timewarp` from `.mcp.json` and declined
 * their `docs` server, which would not start here).
 */
function prepare(root: string): void {
  mkdirSync(join(root, ".claude"), { recursive: true });
  writeFileSync(
    join(root, ".claude", "settings.json"),
    `${JSON.stringify(
      {
        permissions: { allow: ["Bash(npm test:*)"] },
        hooks: {
          PostToolUse: [{ matcher: "Write", hooks: [{ type: "command", command: "true" }] }],
        },
      },
      null,
      2,
    )}\n`,
  );
  writeFileSync(
    join(root, ".mcp.json"),
    `${JSON.stringify({ mcpServers: { docs: { command: "docs-mcp-server", args: ["--stdio"] } } }, null, 2)}\n`,
  );
  // Not timewarp's file: Claude Code's record of the user's answer to "use these project MCP
  // servers?" (the interactive client asks; `claude -p` 2.1.332 starts them without asking).
  writeFileSync(
    join(root, ".claude", "settings.local.json"),
    `${JSON.stringify({ enabledMcpjsonServers: ["timewarp"], disabledMcpjsonServers: ["docs"] }, null, 2)}\n`,
  );
}

/**
 * The environment `claude -p` runs with. Every switch is one a user has:
 * - ANTHROPIC_BASE_URL / ANTHROPIC_API_KEY: the scripted model on 127.0.0.1, with a dummy key;
 * - CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC, DISABLE_AUTOUPDATER, DISABLE_TELEMETRY,
 *   DISABLE_ERROR_REPORTING: no update check, telemetry or error reports (the machine is offline);
 * - IS_SANDBOX=1: Claude Code refuses `--permission-mode bypassPermissions` as root unless told
 *   it runs in a sandbox (CI containers run as root);
 * - any ANTHROPIC_* / CLAUDE_CODE* the test runner inherited (say, from a Claude Code session
 *   running the suite) is dropped, so the client talks to the mock and nothing else.
 */
function claudeEnv(ws: AgentWorkspace, url: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const key of Object.keys(process.env))
    if (/^(ANTHROPIC_|CLAUDE_?CODE|CLAUDE_CONFIG_DIR)/.test(key)) env[key] = undefined;
  return {
    ...env,
    ...ws.env,
    ANTHROPIC_BASE_URL: url,
    ANTHROPIC_API_KEY: "sk-ant-test-not-a-key",
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
    DISABLE_AUTOUPDATER: "1",
    DISABLE_TELEMETRY: "1",
    DISABLE_ERROR_REPORTING: "1",
    IS_SANDBOX: "1",
  };
}

/**
 * `claude -p` as a headless user runs it: `--permission-mode bypassPermissions` auto-approves
 * every tool (no one is there to answer a prompt; timewarp's hooks still run and still deny).
 */
async function runClaude(
  ws: AgentWorkspace,
  steps: AnthropicStep[],
  onStep?: (step: number, req: ModelRequest) => void,
): Promise<{ run: AgentRun; main: ModelRequest[]; auxiliary: ModelRequest[]; spawnedAt: number }> {
  const script = anthropicScript(steps, onStep === undefined ? {} : { onStep });
  const server = await startModelServer(script.respond);
  try {
    const spawnedAt = Date.now();
    const run = await runAgent(
      clientBin("claude"),
      ["-p", "fix the greeting in src/greet.ts", "--permission-mode", "bypassPermissions"],
      { cwd: ws.root, env: claudeEnv(ws, server.url), timeoutMs: 120_000 },
    );
    return { run, main: script.main, auxiliary: script.auxiliary, spawnedAt };
  } finally {
    await server.close();
  }
}

const workspaces: AgentWorkspace[] = [];
afterAll(() => {
  for (const ws of workspaces.splice(0)) ws.cleanup();
});

const read = (ws: AgentWorkspace, path: string): string =>
  readFileSync(join(ws.root, path), "utf8");

interface SessionListing {
  session_id: string;
  transcript_path: string | null;
  agent?: string | null;
  pid: number | null;
  ended_at?: string | null;
  live: boolean;
}

describe(`Claude Code ${VERSION} (claude -p) with timewarp`, () => {
  it("records, guards and undoes every edit; the session ends clean; uninstall restores the config", async () => {
    const ws = agentWorkspace("claude-code", { configFiles: CONFIG_FILES, prepare });
    workspaces.push(ws);
    // The edit after a blacklisted one only warns: an edit outside the whitelist scores 0.5
    // (warn under the default thresholds), a blacklisted one still 1 (blocked).
    const goalFile = join(ws.root, ".timewarp", "memory", "goal.json");
    writeFileSync(
      goalFile,
      JSON.stringify({ ...JSON.parse(readFileSync(goalFile, "utf8")), whitelist_scope: 0.5 }),
    );

    // The install merged into the user's files and wired absolute programs with timeouts.
    const settings = JSON.parse(read(ws, ".claude/settings.json")) as {
      permissions: unknown;
      hooks: Record<string, { matcher?: string; hooks: { command: string; timeout?: number }[] }[]>;
    };
    expect(settings.permissions).toEqual({ allow: ["Bash(npm test:*)"] });
    expect(Object.keys(settings.hooks).sort()).toEqual(
      [
        "PostToolUse",
        "PostToolUseFailure",
        "PreToolUse",
        "SessionEnd",
        "SessionStart",
        "UserPromptSubmit",
      ].sort(),
    );
    const handlers = Object.values(settings.hooks).flatMap((groups) =>
      groups.flatMap((g) => g.hooks),
    );
    expect(handlers).toContainEqual({ type: "command", command: "true" });
    for (const h of handlers.filter((x) => x.command !== "true")) {
      expect(h.command).toMatch(
        /^\/\S+\/timewarp-hook (session|pre|post|user-prompt)-\S+ --agent claude-code$/,
      );
      expect(h.timeout).toBeGreaterThan(60);
    }
    const mcp = JSON.parse(read(ws, ".mcp.json")) as {
      mcpServers: Record<string, { command: string }>;
    };
    expect(Object.keys(mcp.mcpServers).sort()).toEqual(["docs", "timewarp"]);
    expect(mcp.mcpServers.timewarp?.command).toMatch(/^\//);

    const at = (p: string) => join(ws.root, p);
    const steps: AnthropicStep[] = [
      // 0. Claude Code edits only files read in the session: read the three first.
      {
        tools: [
          { name: "Read", input: { file_path: at("src/greet.ts") } },
          { name: "Read", input: { file_path: at("package.json") } },
          { name: "Read", input: { file_path: at("README.md") } },
        ],
      },
      // 1. its own edit tool
      {
        tools: [
          {
            name: "Edit",
            input: {
              file_path: at("src/greet.ts"),
              old_string: 'return "Hello " + name;',
              new_string: 'return "Hello, " + name + "!";',
            },
          },
        ],
      },
      // 2. a shell edit
      {
        tools: [
          {
            name: "Bash",
            input: {
              command:
                "sed -i 's/VERSION = 1/VERSION = 2/' src/util.ts && printf 'export const NEW = 1;\\n' > src/new.ts",
              description: "Bump VERSION and add a module",
            },
          },
        ],
      },
      // 3. a shell command that edits and exits non-zero (PostToolUseFailure)
      {
        tools: [
          {
            name: "Bash",
            input: {
              command: "echo 'export const EXTRA = 3;' >> src/util.ts; exit 3",
              description: "Append and fail",
            },
          },
        ],
      },
      // 4. a blacklisted edit: blocked
      {
        tools: [
          {
            name: "Edit",
            input: {
              file_path: at("package.json"),
              old_string: '"version": "1.0.0"',
              new_string: '"version": "2.0.0"',
            },
          },
        ],
      },
      // 5. outside the whitelist: warned, lands
      {
        tools: [
          {
            name: "Edit",
            input: {
              file_path: at("README.md"),
              old_string: "# fixture\n",
              new_string: "# fixture\n\nGreets people.\n",
            },
          },
        ],
      },
      // 6. timewarp's own MCP edit tool on the blacklisted file: blocked
      {
        tools: [
          {
            name: "mcp__timewarp__ApplyEditBlock",
            input: {
              path: "package.json",
              searchBlock: '"version": "1.0.0"',
              replaceBlock: '"version": "3.0.0"',
            },
          },
        ],
      },
      // 7. beyond the brief: a shell edit of the blacklisted file cannot be stopped before it
      // runs; it is recorded, and the model is told with the command that undoes it
      {
        tools: [
          {
            name: "Bash",
            input: {
              command: "sed -i 's/1.0.0/1.0.1/' package.json",
              description: "Bump the patch version",
            },
          },
        ],
      },
      // 8. the end
      { text: "Done: the greeting is fixed." },
    ];
    // The workspace as each main-loop request finds it (after the previous step's tools ran).
    const seen = new Map<number, Record<string, string>>();
    const { run, main } = await runClaude(ws, steps, (n) => {
      if (!seen.has(n))
        seen.set(n, {
          "package.json": read(ws, "package.json"),
          "README.md": read(ws, "README.md"),
        });
    });
    const diagnosis = `exit ${run.status} ${run.signal ?? ""}\nstdout: ${run.stdout}\nstderr: ${run.stderr}`;
    expect(run.status, diagnosis).toBe(0);
    expect(run.stdout).toContain("Done: the greeting is fixed.");
    expect([...new Set(main.map(turnOf))], diagnosis).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8]);
    // 0: memory's offer (issue 18) reached the model with the first prompt: the goal line and
    // the card seeded before the session, its id and its text, once.
    const first = bodyText(main[0] as ModelRequest);
    expect(first).toContain(SEEDED_CARD_ID);
    expect(first).toContain("put a comma after Hello");
    expect(first).toContain("goal: fix the greeting in src/greet.ts");
    expect(first.split(`[${SEEDED_CARD_ID}]`).length - 1).toBe(1);

    /** The request of turn `n`, and what it says about the one tool call of step `n - 1`. */
    const request = (n: number): ModelRequest => {
      const r = main.find((q) => turnOf(q) === n);
      if (r === undefined) throw new Error(`no main-loop request for turn ${n}`);
      return r;
    };
    const resultOf = (step: number) => {
      const r = toolResult(request(step + 1), toolUseId(step, 0));
      if (r === null) throw new Error(`no tool result for step ${step}`);
      return r;
    };

    // 1-3: the edit and the shell commands ran (the failing one reported as failed).
    expect(resultOf(1).isError).toBe(false);
    expect(resultOf(2).isError).toBe(false);
    expect(resultOf(3)).toMatchObject({
      isError: true,
      text: expect.stringContaining("Exit code 3"),
    });
    expect(read(ws, "src/greet.ts")).toContain('return "Hello, " + name + "!";');
    expect(read(ws, "src/util.ts")).toBe("export const VERSION = 2;\nexport const EXTRA = 3;\n");
    expect(read(ws, "src/new.ts")).toBe("export const NEW = 1;\n");

    // 4: blocked before it ran; the model's next request carries timewarp's reason.
    expect(seen.get(5)?.["package.json"]).toBe(COMMITTED_FILES["package.json"]);
    expect(resultOf(4)).toMatchObject({ isError: true });
    expect(resultOf(4).text).toContain("timewarp blocked this Edit on package.json");
    expect(resultOf(4).text).toContain('package.json is blacklisted by "package.json"');
    // A JSON deny: Claude Code words an exit-2 block as "hook error: [<command>]: <stderr>".
    expect(resultOf(4).text).not.toMatch(/hook error: \[/);

    // 5: landed, and the warning reached the model with the next request (not before).
    expect(seen.get(6)?.["README.md"]).toBe("# fixture\n\nGreets people.\n");
    expect(resultOf(5).isError).toBe(false);
    const warning = "timewarp drift warning for README.md";
    expect(bodyText(request(5))).not.toContain(warning);
    expect(bodyText(request(6))).toContain(warning);
    expect(bodyText(request(6))).toContain("README.md is not in the whitelist [src/**]");

    // 6: the MCP edit met the goal too: refused, nothing written, the model told why.
    expect(seen.get(7)?.["package.json"]).toBe(COMMITTED_FILES["package.json"]);
    expect(resultOf(6).text).toContain("GUARD_BLOCKED");
    expect(resultOf(6).text).toContain('package.json is blacklisted by "package.json"');

    // 7: the shell edit landed; the model's next request says so, with the undo.
    const violation = bodyText(request(8));
    expect(violation).toContain("timewarp drift violation: this command changed package.json");
    expect(violation).toMatch(/undo it with `timewarp revert \w+`/);
    expect(read(ws, "package.json")).toContain('"version": "1.0.1"');

    // The ledger holds every change the agent made, one operation per tool call, newest first.
    const ops = ledgerOperations(ws);
    expect(ops.map((o) => [o.tool, o.affectedFiles])).toEqual([
      ["shell", ["package.json"]],
      ["Edit", ["README.md"]],
      ["shell", ["src/util.ts"]],
      ["shell", ["src/new.ts", "src/util.ts"]],
      ["Edit", ["src/greet.ts"]],
    ]);
    expect(ops[2]?.description).toContain("exit 3");
    expect(ops[3]?.description).toContain("sed -i");

    // No hook failed inside timewarp.
    const events = read(ws, ".timewarp/events.jsonl")
      .split("\n")
      .filter((l) => l !== "")
      .map((l) => JSON.parse(l) as { type: string; data: Record<string, unknown> });
    expect(events.filter((e) => e.type === "hook.failed")).toEqual([]);

    // The session: recorded under the client's own id and pid, ended, its scratch gone.
    const sessionId = main[0]?.headers["x-claude-code-session-id"];
    expect(typeof sessionId).toBe("string");
    const { sessions } = timewarpJson<{ sessions: SessionListing[] }>(
      ["session", "list"],
      ws.root,
      ws.env,
    );
    expect(sessions).toEqual([
      expect.objectContaining({
        session_id: sessionId,
        agent: "claude-code",
        pid: run.pid,
        transcript_path: expect.stringContaining(ws.home),
        ended_at: expect.any(String),
        live: false,
      }),
    ]);
    expect(existsSync(sessions[0]?.transcript_path ?? "")).toBe(true);
    expect(events.some((e) => e.type === "session.ended" && e.data.session_id === sessionId)).toBe(
      true,
    );
    expect(existsSync(join(ws.root, ".timewarp", "hooks", "pending", String(sessionId)))).toBe(
      false,
    );

    // `timewarp doctor` sees the install, the session and the daemon that served the hooks.
    const doctor = timewarpJson<{
      agents: { agent: string; last_session_at: string | null; checks: { status: string }[] }[];
      daemon: { serving_hooks: boolean; hooks_answered: number };
      recent_failures: unknown[];
    }>(["doctor"], ws.root, ws.env);
    expect(doctor.agents).toEqual([
      expect.objectContaining({ agent: "claude-code", last_session_at: expect.any(String) }),
    ]);
    expect(doctor.agents[0]?.checks.filter((c) => c.status !== "ok")).toEqual([]);
    expect(doctor.daemon.serving_hooks).toBe(true);
    expect(doctor.daemon.hooks_answered).toBeGreaterThan(0);
    expect(doctor.recent_failures).toEqual([]);

    // An issue report exports this session's chat from Claude Code's own transcript.
    const issue = timewarpJson<{ session_id: string; chat_path: string; chat_entries: number }>(
      ["issue", "report", "--task-context", "t", "--symptom", "s", "--success-criteria", "c"],
      ws.root,
      ws.env,
    );
    expect(issue.session_id).toBe(sessionId);
    expect(readFileSync(issue.chat_path, "utf8")).toContain(
      "timewarp blocked this Edit on package.json",
    );

    // Reverting every operation, newest first, gives back the committed tree.
    expect(revertAll(ws, AGENT_PATHS)).toEqual([]);
    for (const [path, text] of Object.entries(COMMITTED_FILES)) expect(read(ws, path)).toBe(text);
    expect(existsSync(join(ws.root, "src", "new.ts"))).toBe(false);

    // The hooks were served by the watch daemon; uninstall stops it and restores the config.
    expect(timewarpJson<{ running: boolean }>(["watch", "status"], ws.root, ws.env).running).toBe(
      true,
    );
    // the prompt took a turn checkpoint (the agent's own prompt hook), which rewind lists
    expect(turnsOf(ws).length).toBeGreaterThanOrEqual(1);
    expect(uninstallDiffers(ws, "claude-code")).toEqual([]);
    expect(existsSync(join(ws.root, ".claude", "skills"))).toBe(false);
    expect(timewarpJson<{ running: boolean }>(["watch", "status"], ws.root, ws.env).running).toBe(
      false,
    );
  });

  it("prints what the hooks cost inside the client (timings are printed, never asserted)", async () => {
    // The same tool calls in two workspaces: timewarp installed, and the same events wired to a
    // no-op hook (`true`, same matchers; the same .mcp.json, so only the hooks differ).
    const tw = agentWorkspace("claude-code", { configFiles: [] });
    const noop = agentWorkspace("claude-code", { configFiles: [] });
    workspaces.push(tw, noop);
    const settingsFile = join(noop.root, ".claude", "settings.json");
    writeFileSync(
      settingsFile,
      readFileSync(settingsFile, "utf8").replace(
        /"command": "[^"]*timewarp-hook [^"]*"/g,
        '"command": "true"',
      ),
    );
    expect(readFileSync(settingsFile, "utf8")).not.toContain("timewarp");

    const EDITS = 5;
    /** Alternating new-file writes (the edit tool) and shell writes, then the end. */
    const stepsFor = (ws: AgentWorkspace, run: number): AnthropicStep[] => [
      ...Array.from({ length: EDITS }, (_, i): AnthropicStep[] => [
        {
          tools: [
            {
              name: "Write",
              input: {
                file_path: join(ws.root, "src", `w${run}_${i}.ts`),
                content: `export const w = ${i};\n`,
              },
            },
          ],
        },
        {
          tools: [
            {
              name: "Bash",
              input: { command: `printf 'export const s = ${i};\\n' > src/s${run}_${i}.ts` },
            },
          ],
        },
      ]).flat(),
      { text: "done" },
    ];
    const samples = {
      timewarp: { edit: [] as number[], shell: [] as number[], first: [] as number[] },
      noop: { edit: [] as number[], shell: [] as number[], first: [] as number[] },
    };
    for (let run = 0; run < 3; run++) {
      for (const [name, ws] of [
        ["timewarp", tw],
        ["noop", noop],
      ] as const) {
        const r = await runClaude(ws, stepsFor(ws, run));
        expect(r.run.status, r.run.stderr).toBe(0);
        // one request per turn (a retried turn would skew the gaps)
        const byTurn = r.main.filter(
          (q, i, all) => all.findIndex((x) => turnOf(x) === turnOf(q)) === i,
        );
        expect(byTurn.map(turnOf)).toEqual(Array.from({ length: 2 * EDITS + 1 }, (_, i) => i));
        samples[name].first.push((byTurn[0]?.at ?? 0) - r.spawnedAt);
        // the time from answering turn n (a tool call) to the request of turn n + 1: the tool
        // with its PreToolUse and PostToolUse hooks, inside the client
        for (let n = 0; n + 1 < byTurn.length; n++) {
          const gap = (byTurn[n + 1]?.at ?? 0) - (byTurn[n]?.at ?? 0);
          samples[name][n % 2 === 0 ? "edit" : "shell"].push(gap);
        }
      }
    }
    const median = (xs: number[]): number => {
      const s = [...xs].sort((a, b) => a - b);
      const mid = Math.floor(s.length / 2);
      return s.length % 2 === 1
        ? (s[mid] ?? 0)
        : Math.round(((s[mid - 1] ?? 0) + (s[mid] ?? 0)) / 2);
    };
    const row = (label: string, key: "edit" | "shell" | "first") => {
      const t = median(samples.timewarp[key]);
      const n = median(samples.noop[key]);
      return `${label.padEnd(38)}${String(t).padStart(9)}${String(n).padStart(9)}${String(t - n).padStart(9)}`;
    };
    console.log(
      [
        `Claude Code ${VERSION}: medians in ms over 3 runs (${EDITS} calls of each kind per run)`,
        `${"".padEnd(38)}${"timewarp".padStart(9)}${"no-op".padStart(9)}${"added".padStart(9)}`,
        row("Write tool call (pre + post hook)", "edit"),
        row("Bash tool call (pre + post hook)", "shell"),
        row("spawn to first model request", "first"),
        `raw: ${JSON.stringify(samples)}`,
      ].join("\n"),
    );
  });
});
