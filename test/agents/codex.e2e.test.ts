/**
 * Codex (`codex exec`, pinned in clients/package.json) with timewarp installed, driven offline
 * by a scripted model in the Responses API's wire format (`mock-responses.ts`): session start,
 * an `apply_patch` edit, shell edits (one exiting 3), a blacklisted `apply_patch` (blocked), a
 * warned one, a blacklisted edit through timewarp's own MCP server (blocked), the final answer.
 * Then the ledger reverts the tree to the commit, the session record is right and ended, and
 * the uninstall gives the user's config back byte for byte. Phase 2 prints what the hooks cost.
 *
 * What a user does to run Codex with timewarp (each step below says which switch it is):
 * trust the project, trust its hooks (Codex runs no new project hook before that, silently),
 * run `codex exec` in the `workspace-write` sandbox with approvals `never` (exec's default), and
 * approve timewarp's MCP tools (exec refuses an MCP call that needs an approval).
 */
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, realpathSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
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
import {
  type ResponsesModel,
  type ResponsesStep,
  responsesModel,
  toolOutputs,
} from "./mock-responses.ts";

const CONFIG_FILES = [".codex/hooks.json", ".codex/config.toml"];
/** The agent's own files in the project (untracked): not the agent's changes to revert. */
const AGENT_PATHS = [".codex/"];
const KEY_ENV = "TIMEWARP_E2E_OPENAI_KEY";
/** A model Codex's bundled catalog knows: its metadata offers `apply_patch` as a freeform tool. */
const MODEL = "gpt-5.5";

/** The goal the harness writes, and the same goal with the scope guard weighed down to a warning. */
const GOAL = {
  objective: "fix the greeting in src/greet.ts",
  whitelist: ["src/**"],
  blacklist: ["package.json"],
  checkpoints: [],
};
/**
 * Through a hook the guards score an edit on scope alone (no plan, exact evidence), so any edit
 * outside the scope drifts by 1 and a blacklisted file and a file outside the whitelist score
 * alike: one goal cannot warn on the one and block the other. For the warned step the user
 * weighs scope below plan (drift 0.6, between the default thresholds 0.5 and 0.8: warn).
 */
const GOAL_WARN = { ...GOAL, weights: { scope: 0.6, plan: 1, test: 0.2, evidence: 0.1 } };

function writeGoal(root: string, goal: object): void {
  writeFileSync(join(root, ".timewarp", "memory", "goal.json"), JSON.stringify(goal));
}

/**
 * The user's Codex config (`$CODEX_HOME/config.toml`, CODEX_HOME being `$HOME/.codex`): the
 * scripted model as a custom provider speaking the Responses API, and no background traffic.
 */
function writeUserConfig(home: string, serverUrl: string): void {
  mkdirSync(join(home, ".codex"), { recursive: true });
  writeFileSync(
    join(home, ".codex", "config.toml"),
    [
      `model = "${MODEL}"`,
      `model_provider = "mock"`,
      // exec's default, said out loud: no approval prompts (there is no one to answer them)
      `approval_policy = "never"`,
      `check_for_update_on_startup = false`,
      "",
      "[model_providers.mock]",
      `name = "scripted model"`,
      `base_url = "${serverUrl}/v1"`,
      `wire_api = "responses"`,
      `env_key = "${KEY_ENV}"`,
      "request_max_retries = 0",
      "stream_max_retries = 0",
      "",
      "[analytics]",
      "enabled = false",
      "",
      "[features]",
      "apps = false",
      "plugins = false",
      "",
    ].join("\n"),
  );
}

/**
 * What a user already has in the project before installing timewarp: their own Codex settings
 * and a hook of their own, which the install merges into and the uninstall must give back.
 */
function writeUserProjectConfig(root: string): void {
  mkdirSync(join(root, ".codex"), { recursive: true });
  writeFileSync(
    join(root, ".codex", "config.toml"),
    '# the team\'s Codex settings\nmodel_reasoning_effort = "low"\n\n[mcp_servers.docs]\ncommand = "docs-mcp"\nenabled = false\n',
  );
  writeFileSync(
    join(root, ".codex", "hooks.json"),
    `${JSON.stringify({ hooks: { Stop: [{ hooks: [{ type: "command", command: "true", timeout: 5 }] }] } }, null, 2)}\n`,
  );
}

interface HookEntry {
  key: string;
  command: string;
  currentHash: string;
  trustStatus: string;
  eventName: string;
}

/**
 * Trust the project and its hooks as a user does in Codex's TUI — the folder trust prompt,
 * then `/hooks` → trust all — through the same app-server requests the TUI sends: a
 * `config/batchWrite` of `projects."<root>".trust_level = "trusted"`, then `hooks/list` for the
 * project and a `config/batchWrite` upserting `hooks.state."<key>".trusted_hash = <currentHash>`
 * for every hook that needs review. Both land in `$CODEX_HOME/config.toml`. `codex exec --trust`
 * trusts the project only: new hooks stay untrusted and Codex skips them without a word.
 * Returns the hooks as Codex listed them.
 */
async function trustProjectAndHooks(root: string, env: NodeJS.ProcessEnv): Promise<HookEntry[]> {
  const child = spawn(clientBin("codex"), ["app-server"], {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ["pipe", "pipe", "ignore"],
  });
  const waiting = new Map<number, (message: { result?: unknown; error?: unknown }) => void>();
  createInterface({ input: child.stdout }).on("line", (line) => {
    const message = JSON.parse(line) as { id?: number; result?: unknown; error?: unknown };
    if (message.id !== undefined) waiting.get(message.id)?.(message);
  });
  let next = 0;
  const call = (method: string, params: unknown): Promise<unknown> =>
    new Promise((done, fail) => {
      const id = ++next;
      waiting.set(id, (m) =>
        m.error !== undefined
          ? fail(new Error(`${method}: ${JSON.stringify(m.error)}`))
          : done(m.result),
      );
      child.stdin.write(`${JSON.stringify({ id, method, params })}\n`);
    });
  try {
    await call("initialize", { clientInfo: { name: "timewarp-e2e", version: "1" } });
    child.stdin.write(`${JSON.stringify({ method: "initialized" })}\n`);
    await call("config/batchWrite", {
      edits: [
        {
          keyPath: "projects",
          value: { [realpathSync(root)]: { trust_level: "trusted" } },
          mergeStrategy: "upsert",
        },
      ],
      reloadUserConfig: true,
    });
    const list = (await call("hooks/list", { cwds: [root] })) as {
      data: { hooks: HookEntry[] }[];
    };
    const hooks = list.data.flatMap((d) => d.hooks);
    const review = hooks.filter(
      (h) => h.trustStatus === "untrusted" || h.trustStatus === "modified",
    );
    await call("config/batchWrite", {
      edits: [
        {
          keyPath: "hooks.state",
          value: Object.fromEntries(review.map((h) => [h.key, { trusted_hash: h.currentHash }])),
          mergeStrategy: "upsert",
        },
      ],
      reloadUserConfig: true,
    });
    return hooks;
  } finally {
    child.stdin.end();
    child.kill();
  }
}

/**
 * `codex exec` as a user runs it headless: the `workspace-write` sandbox, so the shell may write
 * the workspace (in this container Codex falls back to its bundled bubblewrap, which works), and
 * timewarp's MCP tools approved for the run: under approval `never` (there is no one to ask)
 * exec refuses an MCP call that needs an approval. A session flag (`-c`), not a line in
 * `~/.codex/config.toml`: there a `[mcp_servers.timewarp]` without its command fails Codex's
 * validation of that file, and with it every config write Codex makes (trusting hooks too).
 */
function runCodex(ws: AgentWorkspace, prompt: string): Promise<AgentRun> {
  return runAgent(
    clientBin("codex"),
    [
      "exec",
      "--sandbox",
      "workspace-write",
      "-c",
      'mcp_servers.timewarp.default_tools_approval_mode="approve"',
      "--color",
      "never",
      prompt,
    ],
    { cwd: ws.root, env: { ...ws.env, [KEY_ENV]: "sk-scripted" }, timeoutMs: 120_000 },
  );
}

/** The fixed greeting line (a template literal in the fixture's TypeScript). */
const NEW_GREETING = `  return \`Hello, \${name}!\`;`;

const patch = (path: string, from: string, to: string): string =>
  `*** Begin Patch\n*** Update File: ${path}\n@@\n-${from}\n+${to}\n*** End Patch\n`;

/** The scenario's script; step k answers the main-loop request holding k tool results. */
const SCRIPT: ResponsesStep[] = [
  // 2. the agent's own edit tool
  {
    type: "custom_tool_call",
    name: "apply_patch",
    input: patch("src/greet.ts", '  return "Hello " + name;', NEW_GREETING),
  },
  // 3. a shell edit
  {
    type: "function_call",
    name: "exec_command",
    arguments: { cmd: "sed -i 's/VERSION = 1/VERSION = 2/' src/util.ts" },
  },
  // 4. a shell edit that exits non-zero
  {
    type: "function_call",
    name: "exec_command",
    arguments: { cmd: "echo 'export const EXTRA = 3;' >> src/util.ts; exit 3" },
  },
  // 5. a blacklisted edit: blocked
  {
    type: "custom_tool_call",
    name: "apply_patch",
    input: patch("package.json", '  "version": "1.0.0"', '  "version": "2.0.0"'),
  },
  // 6. a warned edit: lands, with the warning
  {
    type: "custom_tool_call",
    name: "apply_patch",
    input: patch("README.md", "# fixture", "# fixture!"),
  },
  // 7. timewarp's MCP edit on the blacklisted file: Codex defers MCP tools behind tool_search
  {
    type: "tool_search_call",
    arguments: { query: "timewarp ApplyEditBlock edit a file", limit: 8 },
  },
  {
    type: "function_call",
    namespace: "mcp__timewarp",
    name: "ApplyEditBlock",
    arguments: {
      path: "package.json",
      searchBlock: '"version": "1.0.0"',
      replaceBlock: '"version": "3.0.0"',
      description: "bump the version",
    },
  },
  // 8. the end
  { type: "message", text: "Done: the greeting is fixed." },
];
const STEP = { blocked: 3, warned: 4, mcpSearch: 5, mcp: 6, end: 7 } as const;

/**
 * What the model was told about script step k: in the main-loop request that carries its
 * result, the items from the step's own call on (the call, what hooks added, its output).
 */
function toldAfter(model: ResponsesModel, k: number): string {
  const req = model.main.find((r) => toolOutputs(r).length === k + 1);
  if (req === undefined) throw new Error(`no main-loop request after step ${k}`);
  const input = (req.body as { input: { type?: string }[] }).input;
  const call = input.findLastIndex((item) => item.type?.endsWith("_call") === true);
  return JSON.stringify(input.slice(call));
}

function read(root: string, path: string): string {
  return readFileSync(join(root, path), "utf8");
}

interface SessionRow {
  session_id: string;
  agent?: string;
  pid: number | null;
  ended_at?: string | null;
}

describe(`Codex ${pinnedVersion("@openai/codex")} with timewarp`, () => {
  let server: ModelServer;
  let model: ResponsesModel;
  let ws: AgentWorkspace;
  let run: AgentRun;
  let trusted: HookEntry[];
  /** The session's record as seen while Codex was still running (at its last model request). */
  let live: { session: SessionRow | undefined; cmdline: string } | undefined;

  beforeAll(async () => {
    let root = "";
    const script = responsesModel(SCRIPT);
    model = {
      ...script,
      respond: (req, res) => {
        const k = toolOutputs(req).length;
        // the warned step runs under the softened goal, everything else under the harness's
        if (k === STEP.warned) writeGoal(root, GOAL_WARN);
        if (k === STEP.mcpSearch) writeGoal(root, GOAL);
        if (k === STEP.end && live === undefined) {
          const sessions = timewarpJson<{ sessions: SessionRow[] }>(
            ["session", "list"],
            root,
            ws.env,
          );
          const session = sessions.sessions[0];
          const pid = session?.pid ?? 0;
          const cmdline = existsSync(`/proc/${pid}/cmdline`)
            ? readFileSync(`/proc/${pid}/cmdline`, "utf8").replace(/\0/g, " ")
            : "";
          live = { session, cmdline };
        }
        script.respond(req, res);
      },
    };
    server = await startModelServer((req, res) => model.respond(req, res));
    ws = agentWorkspace("codex", {
      configFiles: CONFIG_FILES,
      prepare: (projectRoot, home) => {
        writeUserConfig(home, server.url);
        writeUserProjectConfig(projectRoot);
      },
    });
    root = ws.root;
    trusted = await trustProjectAndHooks(ws.root, ws.env);
    run = await runCodex(ws, "Fix the greeting in src/greet.ts.");
  });

  afterAll(async () => {
    await server?.close();
    ws?.cleanup();
  });

  it("runs every hook the install wired, once trusted the way the TUI trusts them", () => {
    const ours = trusted.filter((h) => h.command.includes("timewarp-hook"));
    expect(ours.map((h) => h.eventName).sort()).toEqual([
      "postToolUse",
      "preToolUse",
      "sessionEnd",
      "sessionStart",
      "userPromptSubmit",
    ]);
    // by absolute path: no dependence on Codex's PATH
    for (const h of ours) expect(h.command).toMatch(/^\/\S+\/timewarp-hook /);
    // the user's own hook is listed (and trusted) beside timewarp's
    expect(trusted.some((h) => h.eventName === "stop" && h.command === "true")).toBe(true);
    // the trust is the user's, in $CODEX_HOME/config.toml, keyed by the hook's place
    const userConfig = readFileSync(join(ws.home, ".codex", "config.toml"), "utf8");
    expect(userConfig).toContain(
      `[hooks.state."${realpathSync(ws.root)}/.codex/hooks.json:pre_tool_use:0:0"]`,
    );
    expect(userConfig).toMatch(/trusted_hash = "sha256:[0-9a-f]{64}"/);
    expect(run.status, `${run.stdout}\n${run.stderr}`).toBe(0);
    for (const event of ["SessionStart", "PreToolUse", "PostToolUse"])
      expect(run.stderr).toContain(`hook: ${event} Completed`);
    expect(run.stderr).toContain("hook: PreToolUse Blocked");
    // no hook timed out, none warned about its settings (Codex clamps SessionEnd to 3 s)
    expect(run.stderr).not.toMatch(/timed out|timeout/i);
  });

  it("hands the model memory's offer with the first prompt: the goal and the seeded card", () => {
    // issue 18: SessionStart's and UserPromptSubmit's additionalContext, in the first request
    const first = bodyText(model.main[0] as ModelRequest);
    expect(first).toContain(SEEDED_CARD_ID);
    expect(first).toContain("put a comma after Hello");
    expect(first).toContain("goal: fix the greeting in src/greet.ts");
    expect(first.split(`[${SEEDED_CARD_ID}]`).length - 1).toBe(1);
  });

  it("records the agent's edits, blocks the blacklisted ones, and tells the model why", () => {
    expect(read(ws.root, "src/greet.ts")).toContain(NEW_GREETING);
    expect(read(ws.root, "src/util.ts")).toBe(
      "export const VERSION = 2;\nexport const EXTRA = 3;\n",
    );
    // 5: blocked before it ran, and the model's next request says why
    expect(read(ws.root, "package.json")).toBe(COMMITTED_FILES["package.json"]);
    expect(toldAfter(model, STEP.blocked)).toContain(
      "timewarp blocked this apply_patch on package.json: tool: apply_patch; scope: package.json is blacklisted",
    );
    // 6: the edit lands and the model reads the warning
    expect(read(ws.root, "README.md")).toBe("# fixture!\n");
    expect(toldAfter(model, STEP.warned)).toContain(
      "timewarp drift warning for README.md: tool: apply_patch; scope: README.md is not in the whitelist",
    );
    // 7: found through tool_search, called, refused by the goal; the model reads the reason
    expect(toldAfter(model, STEP.mcpSearch)).toMatch(
      /"name":"mcp__timewarp".*"name":"ApplyEditBlock"/,
    );
    const mcpAnswer = toldAfter(model, STEP.mcp);
    expect(mcpAnswer).toContain("GUARD_BLOCKED");
    expect(mcpAnswer).toContain("scope: package.json is blacklisted by");
    expect(read(ws.root, "package.json")).toBe(COMMITTED_FILES["package.json"]);
  });

  it("has every change in the ledger, and reverting it all gives back the commit", () => {
    const ops = ledgerOperations(ws);
    const touched = new Set(ops.flatMap((o) => o.affectedFiles));
    expect([...touched].sort()).toEqual(["README.md", "src/greet.ts", "src/util.ts"]);
    expect(
      ops.some((o) => o.tool === "apply_patch" && o.affectedFiles.includes("src/greet.ts")),
    ).toBe(true);
    // the shell edit that exited 3 is recorded like the one that succeeded
    expect(
      ops.filter((o) => o.tool === "shell" && o.affectedFiles.includes("src/util.ts")),
    ).toHaveLength(2);
    expect(revertAll(ws, AGENT_PATHS)).toEqual([]);
    for (const [path, text] of Object.entries(COMMITTED_FILES))
      expect(read(ws.root, path)).toBe(text);
  });

  it("keeps the session under Codex's process, and ends it when Codex ends", () => {
    // while Codex ran: the session was bound to a Codex process
    expect(live?.session?.agent).toBe("codex");
    expect(live?.cmdline).toMatch(/codex/);
    expect(live?.session?.ended_at ?? null).toBeNull();
    // after: ended by the SessionEnd hook, its hook scratch gone
    const { sessions } = timewarpJson<{ sessions: SessionRow[] }>(
      ["session", "list"],
      ws.root,
      ws.env,
    );
    expect(sessions).toHaveLength(1);
    const [session] = sessions;
    expect(session?.session_id).toBe(live?.session?.session_id);
    expect(session?.ended_at).toEqual(expect.any(String));
    expect(
      existsSync(join(ws.root, ".timewarp", "hooks", "pending", session?.session_id ?? "?")),
    ).toBe(false);
  });

  it("passes timewarp doctor after the run: wiring, trust, session, no hook failure", () => {
    const report = timewarpJson<{
      ok: boolean;
      agents: { agent: string; checks: { id: string; status: string; message: string }[] }[];
      recent_failures: unknown[];
    }>(["doctor"], ws.root, ws.env);
    expect(report.agents.map((a) => a.agent)).toEqual(["codex"]);
    expect(report.agents[0]?.checks.filter((c) => c.status !== "ok")).toEqual([]);
    // trust read from what Codex itself wrote, hook by hook (not inferred from the session)
    expect(report.agents[0]?.checks.find((c) => c.id === "trust")?.message).toMatch(
      /trusts the project and timewarp's 5 hooks/,
    );
    expect(report.recent_failures).toEqual([]);
    expect(report.ok).toBe(true);
  });

  it("gives the user's Codex config back byte for byte on uninstall, and stops the daemon", () => {
    expect(timewarpJson<{ running: boolean }>(["watch", "status"], ws.root, ws.env).running).toBe(
      true,
    );
    // the prompt took a turn checkpoint (the agent's own prompt hook), which rewind lists
    expect(turnsOf(ws).length).toBeGreaterThanOrEqual(1);
    expect(uninstallDiffers(ws, "codex")).toEqual([]);
    expect(timewarpJson<{ running: boolean }>(["watch", "status"], ws.root, ws.env).running).toBe(
      false,
    );
  });
});

// ── Phase 2: what the hooks cost inside Codex ───────────────────────────────────────────────

/**
 * Three tool calls of each kind, then the answer. The first call is timed apart: a fresh
 * workspace's first hook (the session start) starts the watch daemon, which may still be
 * starting when the first tool's hooks arrive (they then run in a Node process of their own).
 */
const TIMED_SCRIPT: ResponsesStep[] = [
  // the scenario's edit-tool and shell steps first
  ...SCRIPT.slice(0, 2),
  {
    type: "custom_tool_call",
    name: "apply_patch",
    input: patch("src/util.ts", "export const VERSION = 2;", "export const VERSION = 3;"),
  },
  { type: "function_call", name: "exec_command", arguments: { cmd: "echo 4 >> src/util.ts" } },
  {
    type: "custom_tool_call",
    name: "apply_patch",
    input: "*** Begin Patch\n*** Add File: src/extra.ts\n+export const EXTRA = 5;\n*** End Patch\n",
  },
  { type: "function_call", name: "exec_command", arguments: { cmd: "echo 6 >> src/extra.ts" } },
  { type: "message", text: "Done." },
];

/** The same events and matchers as timewarp's wiring, each handler a no-op (`true`). */
function wireNoopHooks(root: string): void {
  const file = join(root, ".codex", "hooks.json");
  const hooks = JSON.parse(readFileSync(file, "utf8")) as {
    hooks: Record<string, { hooks: { command: string }[] }[]>;
  };
  for (const groups of Object.values(hooks.hooks))
    for (const group of groups) for (const handler of group.hooks) handler.command = "true";
  writeFileSync(file, `${JSON.stringify(hooks, null, 2)}\n`);
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length === 0
    ? Number.NaN
    : s.length % 2 === 1
      ? (s[m] ?? 0)
      : ((s[m - 1] ?? 0) + (s[m] ?? 0)) / 2;
};

interface TimedRun {
  /** From spawning `codex exec` to its first main-loop request (the session start is in it). */
  firstRequestMs: number;
  /** Per tool call: from the request that handed it out to the one that carried its result. */
  callMs: { tool: string; ms: number }[];
  /** The hook server's own median per event (timewarp only): the hook's work, without Codex. */
  served: Record<string, number>;
  status: number | null;
}

async function timedRun(hooks: "timewarp" | "noop"): Promise<TimedRun> {
  const model = responsesModel(TIMED_SCRIPT);
  const server = await startModelServer(model.respond);
  const ws = agentWorkspace("codex", {
    configFiles: [],
    prepare: (_root, home) => writeUserConfig(home, server.url),
  });
  try {
    if (hooks === "noop") wireNoopHooks(ws.root);
    await trustProjectAndHooks(ws.root, ws.env);
    const spawnedAt = Date.now();
    const run = await runCodex(ws, "Fix the greeting.");
    const main = model.main;
    const callMs: TimedRun["callMs"] = [];
    for (let k = 0; k < TIMED_SCRIPT.length - 1; k++) {
      const out = main.find((r) => toolOutputs(r).length === k);
      const back = main.find((r) => toolOutputs(r).length === k + 1);
      const step = TIMED_SCRIPT[k];
      if (out !== undefined && back !== undefined && step !== undefined && "name" in step)
        callMs.push({ tool: step.name, ms: back.at - out.at });
    }
    const hooksServed =
      hooks === "timewarp"
        ? timewarpJson<{
            hooks: { timings: Record<string, { p50_ms: number; count: number }> } | null;
          }>(["watch", "status"], ws.root, ws.env).hooks?.timings
        : undefined;
    const served = Object.fromEntries(
      Object.entries(hooksServed ?? {}).map(([event, t]) => [event, t.p50_ms]),
    );
    return {
      firstRequestMs: (main[0]?.at ?? Number.NaN) - spawnedAt,
      callMs,
      served,
      status: run.status,
    };
  } finally {
    await server.close();
    ws.cleanup();
  }
}

describe(`Codex ${pinnedVersion("@openai/codex")}: what timewarp's hooks cost (printed, never asserted)`, () => {
  it("times tool calls and the session start, timewarp's hooks against no-op hooks", async () => {
    const runs: Record<"timewarp" | "noop", TimedRun[]> = { timewarp: [], noop: [] };
    // interleaved, so a slow moment of the machine weighs on both
    for (let i = 0; i < 3; i++)
      for (const hooks of ["noop", "timewarp"] as const) runs[hooks].push(await timedRun(hooks));
    for (const r of [...runs.timewarp, ...runs.noop]) expect(r.status).toBe(0);
    const per = (hooks: "timewarp" | "noop", calls: (c: TimedRun["callMs"]) => number[]) =>
      median(runs[hooks].flatMap((r) => calls(r.callMs)));
    const later = (tool: string) => (c: TimedRun["callMs"]) =>
      c.slice(1).flatMap((x) => (x.tool === tool ? [x.ms] : []));
    const firstCall = (c: TimedRun["callMs"]) => c.slice(0, 1).map((x) => x.ms);
    const first = (hooks: "timewarp" | "noop") => median(runs[hooks].map((r) => r.firstRequestMs));
    const rows = [
      ["spawn → first model request", first("timewarp"), first("noop")],
      ["first tool call (apply_patch)", per("timewarp", firstCall), per("noop", firstCall)],
      [
        "later apply_patch calls",
        per("timewarp", later("apply_patch")),
        per("noop", later("apply_patch")),
      ],
      [
        "later exec_command calls",
        per("timewarp", later("exec_command")),
        per("noop", later("exec_command")),
      ],
    ] as const;
    const table = [
      `Codex ${pinnedVersion("@openai/codex")}, medians over 3 runs each (ms)  timewarp   no-op   added`,
      ...rows.map(
        ([what, tw, noop]) =>
          `${what.padEnd(40)} ${tw.toFixed(0).padStart(8)} ${noop.toFixed(0).padStart(7)} ${(tw - noop).toFixed(0).padStart(7)}`,
      ),
    ];
    const events = [...new Set(runs.timewarp.flatMap((r) => Object.keys(r.served)))].sort();
    table.push(
      `timewarp's hook server, its own median per hook (ms): ${events
        .map(
          (e) =>
            `${e} ${median(runs.timewarp.map((r) => r.served[e] ?? Number.NaN).filter((x) => !Number.isNaN(x))).toFixed(0)}`,
        )
        .join(", ")}`,
    );
    console.log(table.join("\n"));
  }, 230_000);
});
