/**
 * Gemini CLI (pinned in clients/package.json), headless (`gemini -p`), with timewarp installed as
 * a user installs it, against a scripted Gemini API on 127.0.0.1 (`mock-gemini.ts`). The model
 * plays the agent's own edit tool, two shell edits (one exiting non-zero), a blacklisted edit, a
 * warned edit and a blacklisted edit through timewarp's MCP server; the test then checks what the
 * model was told, the ledger, a revert of everything, the session record and the uninstall.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { workspacePaths } from "../../src/core/index.ts";
import { listSessions } from "../../src/timemachine/index.ts";
import {
  type AgentRun,
  type AgentWorkspace,
  agentWorkspace,
  bodyText,
  COMMITTED_FILES,
  clientBin,
  ledgerOperations,
  type ModelRequest,
  type ModelServer,
  pinnedVersion,
  revertAll,
  runAgent,
  SEEDED_CARD_ID,
  startModelServer,
  timewarpJson,
  turnsOf,
  uninstallDiffers,
} from "./harness.ts";
import { geminiMock, mcpToolName, type ScriptedStep } from "./mock-gemini.ts";

const VERSION = pinnedVersion("@google/gemini-cli");
const CONFIG = ".gemini/settings.json";

/** The project settings a Gemini user already has before installing timewarp. */
const USER_PROJECT_SETTINGS = `${JSON.stringify(
  {
    context: { fileName: ["GEMINI.md", "AGENTS.md"] },
    hooks: {
      Notification: [{ hooks: [{ type: "command", name: "user-notify", command: "true" }] }],
    },
    mcpServers: {},
  },
  null,
  2,
)}\n`;

/**
 * The user-level setup a Gemini CLI user has on a machine like CI (all in the test's HOME):
 * - `security.auth.selectedType: "gemini-api-key"`: the auth method a user picks once (headless
 *   mode refuses to start without one); the key comes from GEMINI_API_KEY and the endpoint from
 *   GOOGLE_GEMINI_BASE_URL (the mock).
 * - `privacy.usageStatisticsEnabled: false`, `telemetry.enabled: false`,
 *   `general.enableAutoUpdate(Notification): false`: no background traffic, offline.
 * - `~/.gemini/trustedFolders.json` with the project as TRUST_FOLDER: what the trust dialog saves
 *   when the user trusts the folder. Folder trust is on by default, and an untrusted folder
 *   loads neither the project's `.gemini/settings.json` (timewarp's hooks and MCP server) nor
 *   runs its hooks. Project hooks in a trusted folder run after a one-time warning (Gemini CLI
 *   records them in `~/.gemini/trusted_hooks.json` itself).
 */
function prepareGemini(root: string, home: string): void {
  mkdirSync(join(home, ".gemini"), { recursive: true });
  writeFileSync(
    join(home, ".gemini", "settings.json"),
    JSON.stringify({
      security: { auth: { selectedType: "gemini-api-key" } },
      privacy: { usageStatisticsEnabled: false },
      telemetry: { enabled: false },
      general: { enableAutoUpdate: false, enableAutoUpdateNotification: false },
    }),
  );
  writeFileSync(
    join(home, ".gemini", "trustedFolders.json"),
    JSON.stringify({ [root]: "TRUST_FOLDER" }),
  );
  mkdirSync(join(root, ".gemini"), { recursive: true });
  writeFileSync(join(root, CONFIG), USER_PROJECT_SETTINGS);
}

/**
 * Run `gemini -p` headless in the workspace against the mock. `--approval-mode yolo` approves
 * every tool call (headless mode has nobody to ask; `auto_edit` would still stop at the shell).
 */
function runGemini(ws: AgentWorkspace, server: ModelServer, extraEnv: NodeJS.ProcessEnv = {}) {
  return runAgent(
    clientBin("gemini"),
    ["-p", "Fix the greeting in src/greet.ts.", "--approval-mode", "yolo"],
    {
      cwd: ws.root,
      env: {
        ...ws.env,
        GEMINI_API_KEY: "mock-key",
        GOOGLE_GEMINI_BASE_URL: server.url,
        ...extraEnv,
      },
      timeoutMs: 150_000,
    },
  );
}

function explain(run: AgentRun, requests: ModelRequest[]): string {
  return [
    `exit ${run.status} signal ${run.signal} in ${run.ms} ms`,
    `stdout:\n${run.stdout.slice(-4000)}`,
    `stderr:\n${run.stderr.slice(-4000)}`,
    `requests: ${requests.map((r) => `${r.method} ${r.path}`).join("\n  ")}`,
  ].join("\n");
}

/**
 * The harness's goal (whitelist `src/**`, blacklist `package.json`) with weights under which an
 * edit outside the whitelist scores 0.5 (a warning) instead of 1 (a block): the blacklist still
 * blocks, whatever the weights.
 */
function warnOutsideWhitelist(ws: AgentWorkspace): void {
  const file = join(ws.root, ".timewarp", "memory", "goal.json");
  const goal = JSON.parse(readFileSync(file, "utf8")) as Record<string, unknown>;
  writeFileSync(
    file,
    JSON.stringify({
      ...goal,
      weights: { scope: 0.5, plan: 1, test: 0.2, evidence: 0.1 },
      thresholds: { warn: 0.4, rollback: 0.9 },
    }),
  );
}

/** The one session timewarp recorded in `ws` (the test's single session). */
function sessionIdOf(ws: AgentWorkspace): string {
  return listSessions(workspacePaths(ws.root))[0]?.session_id ?? "(no session)";
}

/** The last turn of a main-loop request (the function response to the step before), as text. */
function lastTurn(req: ModelRequest | undefined): string {
  if (req === undefined) return "(no such request)";
  const contents = (req.body as { contents?: unknown[] } | null)?.contents ?? [];
  return JSON.stringify(contents[contents.length - 1] ?? bodyText(req));
}

/** The tool calls phase 2 times: each kind twice, leaving src/greet.ts as it was. */
const TIMED_CALLS: { name: string; args: Record<string, unknown> }[] = [
  {
    name: "replace",
    args: {
      file_path: "src/greet.ts",
      instruction: "Greet with a comma.",
      old_string: '"Hello "',
      new_string: '"Hello, "',
    },
  },
  { name: "run_shell_command", args: { command: "printf 'export const A = 1;\\n' > src/gen.ts" } },
  { name: "write_file", args: { file_path: "src/w.ts", content: "export const W = 1;\n" } },
  {
    name: "replace",
    args: {
      file_path: "src/greet.ts",
      instruction: "Greet as before.",
      old_string: '"Hello, "',
      new_string: '"Hello "',
    },
  },
  { name: "run_shell_command", args: { command: "sed -i 's/A = 1/A = 2/' src/gen.ts" } },
  { name: "write_file", args: { file_path: "src/w.ts", content: "export const W = 2;\n" } },
];

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? (s[m] ?? Number.NaN) : ((s[m - 1] ?? 0) + (s[m] ?? 0)) / 2;
};

interface Samples {
  /** Per tool name: from the request answered with the call to the next one (hooks + tool). */
  calls: Map<string, number[]>;
  /** From the spawn to the first main-loop request (start-up and the session-start hook). */
  start: number[];
}

/** One run of TIMED_CALLS in `ws`, its timings added to `samples`. */
async function timedRun(ws: AgentWorkspace, samples: Samples): Promise<void> {
  const mock = geminiMock([...TIMED_CALLS.map((call) => ({ call })), { text: "Done." }]);
  const server = await startModelServer(mock.respond);
  try {
    const spawned = Date.now();
    // No relaunch (Gemini CLI restarts itself once to raise its heap): the same in both arms,
    // and it halves the start-up of a run on a busy machine.
    const run = await runGemini(ws, server, { GEMINI_CLI_NO_RELAUNCH: "true" });
    const why = explain(run, server.requests);
    expect(run.status, why).toBe(0);
    expect(mock.main.length, why).toBe(TIMED_CALLS.length + 1);
    samples.start.push((mock.main[0]?.at ?? Number.NaN) - spawned);
    TIMED_CALLS.forEach((call, i) => {
      const took = (mock.main[i + 1]?.at ?? Number.NaN) - (mock.main[i]?.at ?? Number.NaN);
      samples.calls.set(call.name, [...(samples.calls.get(call.name) ?? []), took]);
    });
  } finally {
    await server.close();
  }
}

const read = (ws: AgentWorkspace, path: string) => readFileSync(join(ws.root, path), "utf8");

describe(`Gemini CLI ${VERSION} with timewarp installed`, () => {
  const cleanups: (() => void | Promise<void>)[] = [];
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c();
  });

  it("records, guards and reverts a headless session end to end", async () => {
    const ws = agentWorkspace("gemini", { configFiles: [CONFIG], prepare: prepareGemini });
    cleanups.push(() => ws.cleanup());
    warnOutsideWhitelist(ws);
    const greetAfter = COMMITTED_FILES["src/greet.ts"]?.replace(
      'return "Hello " + name;',
      'return "Hello, " + name + "!";',
    );
    const script: ScriptedStep[] = [
      // 2. the agent's own edit tool
      {
        call: {
          name: "replace",
          args: {
            file_path: "src/greet.ts",
            instruction: "Greet with a comma and an exclamation mark.",
            old_string: 'return "Hello " + name;',
            new_string: 'return "Hello, " + name + "!";',
          },
        },
      },
      // 3. a shell edit
      {
        call: {
          name: "run_shell_command",
          args: {
            command: "sed -i 's/VERSION = 1/VERSION = 2/' src/util.ts",
            description: "Bump the version.",
          },
        },
      },
      // 4. a shell edit that exits non-zero
      {
        call: {
          name: "run_shell_command",
          args: {
            command: "echo 'export const EXTRA = 3;' >> src/util.ts; exit 3",
            description: "Add a constant, then fail.",
          },
        },
      },
      // 5. a blacklisted edit through the agent's edit tool
      {
        call: {
          name: "replace",
          args: {
            file_path: "package.json",
            instruction: "Bump the package version.",
            old_string: '"version": "1.0.0"',
            new_string: '"version": "2.0.0"',
          },
        },
      },
      // 6. a warned edit (outside the whitelist)
      {
        call: {
          name: "replace",
          args: {
            file_path: "README.md",
            instruction: "Describe the fixture.",
            old_string: "# fixture\n",
            new_string: "# fixture\n\nGreets people.\n",
          },
        },
      },
      // 7. a blacklisted edit through timewarp's MCP server
      (req) => ({
        call: {
          name: mcpToolName(req, "ApplyEditBlock"),
          args: {
            path: "package.json",
            searchBlock: '"version": "1.0.0"',
            replaceBlock: '"version": "3.0.0"',
            description: "Bump the package version.",
          },
        },
      }),
      // A call the hooks let through (a warning) that Gemini CLI then denies itself (its build
      // file protection, in headless mode): no AfterTool comes, so its pre-image stays pending
      // until the session ends.
      {
        call: { name: "write_file", args: { file_path: "Dockerfile", content: "FROM scratch\n" } },
      },
      // 8. the end
      { text: "The greeting is fixed." },
    ];
    // When the first request arrives, the session-start hook has run (Gemini CLI awaits it):
    // the session is bound to the agent's process (not to the hook's shell or client).
    let boundTo = "(no session when the first request came)";
    let pendingBeforeEnd = -1;
    const mock = geminiMock(script, {
      onMain: (index) => {
        if (index === script.length - 1) {
          const sid = sessionIdOf(ws);
          const dir = join(ws.root, ".timewarp", "hooks", "pending", sid);
          pendingBeforeEnd = existsSync(dir) ? readdirSync(dir).length : 0;
        }
        if (index !== 0) return;
        const pid = listSessions(workspacePaths(ws.root))[0]?.pid;
        if (pid === null || pid === undefined) return;
        try {
          boundTo = readFileSync(`/proc/${pid}/cmdline`, "latin1").split("\0").join(" ");
        } catch {
          boundTo = `pid ${pid}, not running`;
        }
      },
    });
    const server = await startModelServer(mock.respond);
    cleanups.push(() => server.close());

    // The install wired the hooks by absolute path, with Gemini CLI's timeouts in milliseconds.
    const installed = JSON.parse(read(ws, CONFIG)) as {
      hooks: Record<string, { hooks: { command: string; timeout?: number }[] }[]>;
    };
    const handlers = Object.values(installed.hooks)
      .flat()
      .flatMap((g) => g.hooks)
      .filter((h) => h.command.includes("timewarp"));
    expect(handlers, read(ws, CONFIG)).toHaveLength(5);
    for (const h of handlers) {
      expect(h.command).toMatch(
        /^\/\S*timewarp-hook (session-start|pre-tool-use|post-tool-use|session-end|user-prompt-submit) --agent gemini$/,
      );
      expect(h.timeout).toBeGreaterThanOrEqual(60_000);
    }

    const run = await runGemini(ws, server);
    const why = explain(run, server.requests);
    expect(run.status, why).toBe(0);
    expect(mock.main.length, why).toBe(script.length);
    // Memory's offer (issue 18) reached the model with the first prompt: SessionStart's goal
    // line and the card seeded before the session (its id and text), once.
    const first = bodyText(mock.main[0] as ModelRequest);
    expect(first, why).toContain(SEEDED_CARD_ID);
    expect(first).toContain("put a comma after Hello");
    expect(first).toContain("goal: fix the greeting in src/greet.ts");
    expect(first.split(`[${SEEDED_CARD_ID}]`).length - 1).toBe(1);
    if (process.platform === "linux") expect(boundTo).toContain(clientBin("gemini"));
    // What the model was told after step i: the last turn of request i + 1 (the tool's result).
    const told = (step: number) => lastTurn(mock.main[step + 1]);

    // 2-4: the edit tool and both shell commands ran (the failing one after its edit).
    expect(read(ws, "src/greet.ts")).toBe(greetAfter);
    expect(read(ws, "src/util.ts")).toBe("export const VERSION = 2;\nexport const EXTRA = 3;\n");
    expect(told(2)).toContain("Exit Code: 3");
    // 5: blocked, and the model read timewarp's reason.
    expect(told(3)).toContain("timewarp blocked this replace on package.json");
    // 6: landed, and the model read the warning.
    expect(read(ws, "README.md")).toBe("# fixture\n\nGreets people.\n");
    expect(told(4)).toContain("timewarp drift warning for README.md");
    // 7: blocked inside timewarp's MCP server, and the model read why.
    expect(told(5)).toContain("the drift guards refused this ApplyEditBlock on package.json");
    expect(read(ws, "package.json")).toBe(COMMITTED_FILES["package.json"]);
    // Gemini CLI denied the Dockerfile itself, after timewarp's BeforeTool had let it through.
    expect(told(6)).toContain("Modifying build configuration files requires explicit user");
    expect(existsSync(join(ws.root, "Dockerfile"))).toBe(false);
    expect(pendingBeforeEnd).toBe(1);

    // Every change is in the ledger: one operation per tool call that changed something.
    const ops = ledgerOperations(ws);
    expect(
      ops.map((o) => [o.tool, o.affectedFiles]).reverse(),
      JSON.stringify(ops, null, 2),
    ).toEqual([
      ["replace", ["src/greet.ts"]],
      ["shell", ["src/util.ts"]],
      ["shell", ["src/util.ts"]],
      ["replace", ["README.md"]],
    ]);

    // The session: recorded from Gemini CLI, bound to its process, ended, its scratch gone.
    const sessions = listSessions(workspacePaths(ws.root));
    expect(sessions, JSON.stringify(sessions)).toHaveLength(1);
    const [session] = sessions;
    expect(session?.agent).toBe("gemini");
    expect(session?.snapshot_id).toEqual(expect.any(String));
    expect(session?.pid).toEqual(expect.any(Number));
    expect(session?.ended_at, JSON.stringify(session)).toEqual(expect.any(String));
    // the pre-images the hooks keep per session (.timewarp/hooks/pending/<session>) are gone
    const pending = join(ws.root, ".timewarp", "hooks", "pending");
    expect(existsSync(join(pending, session?.session_id ?? "?"))).toBe(false);
    // The transcript Gemini CLI named at session start is the one `issue report` exports.
    const issue = timewarpJson<{
      chat_entries: number;
      chat_path: string;
      transcript_path: string;
    }>(
      [
        "issue",
        "report",
        "--task-context",
        "greeting",
        "--symptom",
        "s",
        "--success-criteria",
        "c",
      ],
      ws.root,
      ws.env,
    );
    expect(issue.transcript_path).toBe(session?.transcript_path);
    const chat = readFileSync(issue.chat_path, "utf8");
    expect(chat, chat).toContain("[tool:run_shell_command] output:");
    expect(chat, chat).toContain("Exit Code: 3");
    expect(chat, chat).toContain("[assistant] The greeting is fixed.");

    // `timewarp doctor`: the session arrived from Gemini CLI, and no hook failed on the way.
    const doctor = timewarpJson<{
      agents: { agent: string; last_session_at: string | null; checks: { status: string }[] }[];
      recent_failures: unknown[];
    }>(["doctor"], ws.root, ws.env);
    const report = doctor.agents.find((a) => a.agent === "gemini");
    expect(report?.last_session_at, JSON.stringify(doctor, null, 2)).toEqual(expect.any(String));
    expect(
      report?.checks.filter((c) => c.status !== "ok"),
      JSON.stringify(doctor, null, 2),
    ).toEqual([]);
    expect(doctor.recent_failures, JSON.stringify(doctor, null, 2)).toEqual([]);

    // The hooks started the watch daemon (TIMEWARP_WATCH=1), which served them from then on.
    const daemon = timewarpJson<{ running: boolean; hooks: { served: number } | null }>(
      ["watch", "status"],
      ws.root,
      ws.env,
    );
    console.log(`gemini: watch daemon after the session: ${JSON.stringify(daemon)}`);
    expect(daemon.running).toBe(true);

    // Reverting every operation, newest first, gives back the committed tree.
    expect(revertAll(ws, [".gemini/"])).toEqual([]);
    // Uninstall gives the user's settings back byte for byte, and stops the daemon.
    // the prompt took a turn checkpoint (the agent's own prompt hook), which rewind lists
    expect(turnsOf(ws).length).toBeGreaterThanOrEqual(1);
    expect(uninstallDiffers(ws, "gemini")).toEqual([]);
    expect(read(ws, CONFIG)).toBe(USER_PROJECT_SETTINGS);
    expect(timewarpJson<{ running: boolean }>(["watch", "status"], ws.root, ws.env).running).toBe(
      false,
    );
  });

  // Phase 2: what timewarp costs inside the client. The same tool calls in two workspaces, one
  // with timewarp's hooks and one with `true` wired at the same events and matchers (the MCP
  // server stays in both: only the hooks differ). Printed, never asserted.
  it("measures the time timewarp's hooks add (printed)", async () => {
    const RUNS = 3;
    const BUDGET_MS = 120_000;
    const arms = { timewarp: workspaceFor("timewarp"), noop: workspaceFor("noop") };
    const samples: Record<keyof typeof arms, Samples> = {
      timewarp: { calls: new Map(), start: [] },
      noop: { calls: new Map(), start: [] },
    };
    // Interleaved, so a load spike on the machine hits both arms alike; on a machine so busy
    // that a pair of runs takes long, fewer pairs, to keep the file within a few minutes.
    const began = Date.now();
    let pairs = 0;
    while (pairs < RUNS) {
      const pairStart = Date.now();
      await timedRun(arms.timewarp, samples.timewarp);
      await timedRun(arms.noop, samples.noop);
      pairs++;
      if (Date.now() - began + (Date.now() - pairStart) > BUDGET_MS) break;
    }
    const cell = (x: number) => String(Math.round(x)).padStart(10);
    const row = (label: string, tw: number[], noop: number[]) =>
      `${label.padEnd(36)}${cell(median(tw))}${cell(median(noop))}${cell(median(tw) - median(noop))}`;
    console.log(
      [
        `Gemini CLI ${VERSION}, medians of ${pairs} runs in ms: timewarp's hooks vs \`true\` at the same events`,
        `${"".padEnd(36)}${"timewarp".padStart(10)}${"no-op".padStart(10)}${"added".padStart(10)}`,
        ...[...samples.timewarp.calls.keys()].map((name) =>
          row(
            `tool call ${name}`,
            samples.timewarp.calls.get(name) ?? [],
            samples.noop.calls.get(name) ?? [],
          ),
        ),
        row("spawn to first main-loop request", samples.timewarp.start, samples.noop.start),
        `  (each run: timewarp ${samples.timewarp.start.join(", ")}; no-op ${samples.noop.start.join(", ")})`,
        `  inside timewarp's daemon, from claim to reply (p50 ms): ${Object.entries(
          daemonTimings(arms.timewarp),
        )
          .map(([event, t]) => `${event} ${t.p50_ms} (${t.count})`)
          .join(", ")}`,
      ].join("\n"),
    );

    function daemonTimings(ws: AgentWorkspace): Record<string, { p50_ms: number; count: number }> {
      return (
        timewarpJson<{
          hooks: { timings: Record<string, { p50_ms: number; count: number }> } | null;
        }>(["watch", "status"], ws.root, ws.env).hooks?.timings ?? {}
      );
    }

    /** A workspace with timewarp installed, or with its hook commands replaced by `true`. */
    function workspaceFor(arm: "timewarp" | "noop"): AgentWorkspace {
      const ws = agentWorkspace("gemini", { configFiles: [CONFIG], prepare: prepareGemini });
      cleanups.push(() => ws.cleanup());
      if (arm === "noop") {
        const settings = JSON.parse(read(ws, CONFIG)) as {
          hooks: Record<string, { hooks: { command: string; name?: string }[] }[]>;
        };
        for (const groups of Object.values(settings.hooks))
          for (const g of groups)
            for (const h of g.hooks)
              if (h.name?.startsWith("timewarp-") === true) {
                h.command = "true";
                h.name = h.name.replace("timewarp-", "noop-");
              }
        writeFileSync(join(ws.root, CONFIG), JSON.stringify(settings, null, 2));
      }
      return ws;
    }
  });
});
