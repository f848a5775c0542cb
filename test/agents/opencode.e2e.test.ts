/**
 * OpenCode (the pinned `opencode-ai`), headless (`opencode run`), with timewarp installed the way
 * a user installs it, against a scripted OpenAI-compatible model on 127.0.0.1 (issue 17,
 * deliverable 2). Every switch the run needs is one a user would set; each says why (they are
 * collected for the README in `opencode.md`).
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
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
import { type ChatScript, type ChatStep, chatCompletionsScript } from "./mock-chat-completions.ts";

const VERSION = pinnedVersion("opencode-ai");
const MODEL = "scripted-1";
/** Phase 2: edit calls and shell calls per measured run. */
const CALLS = 3;
/** Indices into the scenario's script (below) of the steps the assertions look back at. */
const BLOCKED_EDIT = 3;
const WARNED_EDIT = 4;
const MCP_EDIT = 5;
const ISSUE_REPORT = 6;
/** The config files `timewarp install opencode` touches (uninstall must restore their bytes). */
const CONFIG_FILES = ["opencode.json", ".opencode/plugins/timewarp.js"];
/** OpenCode's own config paths (and what it writes there at start), not the agent's work. */
const AGENT_PATHS = ["opencode.json", ".opencode/"];

/**
 * The environment of a headless, offline OpenCode, each switch its own documented one:
 * - OPENCODE_DISABLE_AUTOUPDATE: no update check against GitHub/npm at start.
 * - OPENCODE_DISABLE_MODELS_FETCH: no models.dev catalogue download; the provider below names
 *   its one model itself.
 * - OPENCODE_DISABLE_SHARE: sessions are never uploaded to opencode.ai.
 * - OPENCODE_DISABLE_LSP_DOWNLOAD: no language servers fetched for the files the agent touches.
 * - OPENCODE_DISABLE_DEFAULT_PLUGINS: no built-in provider-auth plugins (they reach their vendors).
 * - npm_config_offline: OpenCode installs `@opencode-ai/plugin` into every config directory it
 *   finds (`~/.config/opencode`, the project's `.opencode/`) and waits for that before loading a
 *   plugin; timewarp's plugin imports nothing from it, so offline the install fails at once
 *   (a logged warning) instead of downloading the SDK from the registry at every fresh start.
 */
const OPENCODE_ENV: NodeJS.ProcessEnv = {
  OPENCODE_DISABLE_AUTOUPDATE: "1",
  OPENCODE_DISABLE_MODELS_FETCH: "1",
  OPENCODE_DISABLE_SHARE: "1",
  OPENCODE_DISABLE_LSP_DOWNLOAD: "1",
  OPENCODE_DISABLE_DEFAULT_PLUGINS: "1",
  npm_config_offline: "true",
};

/**
 * The user's own configuration before timewarp is installed: the model provider in the global
 * config (`~/.config/opencode/opencode.json`), and a project `opencode.json` with their own
 * content, which install must merge into and uninstall give back byte for byte.
 * - `permission`: edits and shell commands run without asking, as a headless run needs (no one is
 *   there to answer; OpenCode's `run` refuses what would ask).
 * - `snapshot: false`: OpenCode's own git snapshots of the tree are off (timewarp keeps the
 *   history here; the snapshots only slow every step down).
 */
function userConfig(modelUrl: string): (root: string, home: string) => void {
  return (root, home) => {
    const global = join(home, ".config", "opencode");
    mkdirSync(global, { recursive: true });
    writeFileSync(
      join(global, "opencode.json"),
      `${JSON.stringify(
        {
          $schema: "https://opencode.ai/config.json",
          provider: {
            scripted: {
              npm: "@ai-sdk/openai-compatible",
              name: "Scripted model",
              options: { baseURL: `${modelUrl}/v1`, apiKey: "not-a-key" },
              models: { [MODEL]: { name: "Scripted", tool_call: true } },
            },
          },
          model: `scripted/${MODEL}`,
          small_model: `scripted/${MODEL}`,
          autoupdate: false,
          share: "disabled",
        },
        null,
        2,
      )}\n`,
    );
    writeFileSync(
      join(root, "opencode.json"),
      // The user's formatting (tabs) and keys: the merge must keep both.
      `${JSON.stringify(
        {
          $schema: "https://opencode.ai/config.json",
          permission: { edit: "allow", bash: "allow" },
          snapshot: false,
          mcp: { docs: { type: "local", command: ["docs-mcp"], enabled: false } },
        },
        null,
        "\t",
      )}\n`,
    );
  };
}

/**
 * The goal of the scenario: the harness's (work in `src/`, never touch `package.json`), with an
 * edit outside the whitelist graded a warning (`whitelist_scope` 0.5) rather than blocked, so
 * that one goal both warns (README.md) and blocks (package.json).
 */
function gradeWhitelist(ws: AgentWorkspace): void {
  const file = join(ws.root, ".timewarp", "memory", "goal.json");
  const goal = JSON.parse(readFileSync(file, "utf8")) as Record<string, unknown>;
  writeFileSync(file, JSON.stringify({ ...goal, whitelist_scope: 0.5 }));
}

/** Run OpenCode headless on one prompt; `--format json` prints its events, one per line. */
function runOpencode(ws: AgentWorkspace, prompt: string): Promise<AgentRun> {
  return runAgent(clientBin("opencode"), ["run", "--format", "json", prompt], {
    cwd: ws.root,
    env: { ...ws.env, ...OPENCODE_ENV },
    timeoutMs: 180_000,
  });
}

/** A model server whose script is set once the workspace (and so its paths) exists. */
async function scriptedServer(): Promise<{ server: ModelServer; use(s: ChatScript): void }> {
  let script: ChatScript | undefined;
  const server = await startModelServer((req, res) => {
    if (script === undefined) throw new Error(`no script yet for ${req.method} ${req.path}`);
    script.respond(req, res);
  });
  return {
    server,
    use: (s) => {
      script = s;
    },
  };
}

/** The tool results a chat request carries (`role: "tool"` messages), by tool call id. */
function toolResults(req: ModelRequest | undefined): Map<string, string> {
  const out = new Map<string, string>();
  const messages = (req?.body as { messages?: unknown[] } | null)?.messages ?? [];
  for (const m of messages) {
    const msg = m as { role?: string; tool_call_id?: string; content?: unknown };
    if (msg.role !== "tool" || typeof msg.tool_call_id !== "string") continue;
    out.set(
      msg.tool_call_id,
      typeof msg.content === "string" ? msg.content : JSON.stringify(msg.content),
    );
  }
  return out;
}

/** The result of the last tool call in the request: what the model reads after that step. */
function lastToolResult(req: ModelRequest | undefined): string {
  return [...toolResults(req).values()].at(-1) ?? "";
}

describe(`OpenCode ${VERSION} (real client, headless) with timewarp`, () => {
  let model: Awaited<ReturnType<typeof scriptedServer>>;
  let ws: AgentWorkspace;

  beforeAll(async () => {
    model = await scriptedServer();
  });
  afterAll(async () => {
    await model?.server.close();
  });

  it("records every edit, blocks and warns where the goal says, ends its session, uninstalls clean", async () => {
    ws = agentWorkspace("opencode", {
      configFiles: CONFIG_FILES,
      prepare: userConfig(model.server.url),
    });
    try {
      gradeWhitelist(ws);
      const abs = (p: string) => join(ws.root, p);
      const steps: ChatStep[] = [
        // 2. OpenCode's own edit tool
        {
          toolCalls: [
            {
              name: "edit",
              arguments: {
                filePath: abs("src/greet.ts"),
                oldString: '"Hello " + name',
                newString: '"Hello, " + name + "!"',
              },
            },
          ],
        },
        // 3. a shell edit
        {
          toolCalls: [
            {
              name: "bash",
              arguments: {
                command: "sed -i 's/VERSION = 1/VERSION = 2/' src/util.ts",
                description: "Bump the version",
              },
            },
          ],
        },
        // 4. a shell edit that exits non-zero
        {
          toolCalls: [
            {
              name: "bash",
              arguments: {
                command: "echo 'export const EXTRA = 3;' >> src/util.ts; exit 3",
                description: "Append and fail",
              },
            },
          ],
        },
        // 5. a blacklisted edit through the agent's edit tool
        {
          toolCalls: [
            {
              name: "edit",
              arguments: {
                filePath: abs("package.json"),
                oldString: '"version": "1.0.0"',
                newString: '"version": "2.0.0"',
              },
            },
          ],
        },
        // 6. an edit the goal warns about (outside the whitelist, not blacklisted)
        {
          toolCalls: [
            {
              name: "edit",
              arguments: {
                filePath: abs("README.md"),
                oldString: "# fixture\n",
                newString: "# fixture\n\nGreets people.\n",
              },
            },
          ],
        },
        // 7. a blacklisted edit through timewarp's own MCP server, as OpenCode names its tools
        {
          toolCalls: [
            {
              name: "timewarp_ApplyEditBlock",
              arguments: {
                path: "package.json",
                searchBlock: '"version": "1.0.0"',
                replaceBlock: '"version": "3.0.0"',
              },
            },
          ],
        },
        // and the friction reported through the MCP server: the plugin exports the chat first
        {
          toolCalls: [
            {
              name: "timewarp_issue_report",
              arguments: {
                task_context: "fix the greeting in src/greet.ts",
                symptom: "package.json edits are refused",
                success_criteria: "the greeting reads Hello, name!",
              },
            },
          ],
        },
        // 8. the end
        { text: "The greeting is fixed." },
      ];
      const script = chatCompletionsScript(steps, { model: MODEL });
      model.use(script);
      /** The model's next request after a step: what it was told about that tool call. */
      const nextRequest = (step: number): ModelRequest => {
        const req = script.main[step + 1];
        if (req === undefined) throw new Error(`no request after step ${step}`);
        return req;
      };

      // 1. the session starts inside the client (the plugin's `session.created`)
      const run = await runOpencode(ws, "Fix the greeting in src/greet.ts.");
      const context = `exit ${run.status} ${run.signal ?? ""}\n${run.stderr.slice(-4000)}`;
      expect(run.status, context).toBe(0);
      expect(script.main.length, context).toBe(steps.length);
      // memory's offer (issue 18) in the system prompt of the first request: the goal line and
      // the card seeded before the session (its id and text), once
      const first = bodyText(script.main[0] as ModelRequest);
      expect(first, context).toContain(SEEDED_CARD_ID);
      expect(first).toContain("put a comma after Hello");
      expect(first).toContain("goal: fix the greeting in src/greet.ts");
      expect(first.split(`[${SEEDED_CARD_ID}]`).length - 1).toBe(1);

      // 2. the edit landed
      expect(readFileSync(abs("src/greet.ts"), "utf8")).toContain('"Hello, " + name + "!"');
      // 3.–4. both shell edits landed, the failing one too
      expect(readFileSync(abs("src/util.ts"), "utf8")).toBe(
        "export const VERSION = 2;\nexport const EXTRA = 3;\n",
      );
      // 5. blocked: the file is the commit's, and the model's next request says why
      expect(readFileSync(abs("package.json"), "utf8")).toBe(COMMITTED_FILES["package.json"]);
      const afterBlock = lastToolResult(nextRequest(BLOCKED_EDIT));
      expect(afterBlock).toContain("timewarp blocked this Edit on package.json");
      expect(afterBlock).toContain("blacklisted");
      // 6. warned: the edit landed and the model's next request carries the warning
      expect(readFileSync(abs("README.md"), "utf8")).toBe("# fixture\n\nGreets people.\n");
      const afterWarn = lastToolResult(nextRequest(WARNED_EDIT));
      expect(afterWarn).toContain("README.md is not in the whitelist");
      // 7. the MCP edit: refused, file unchanged, and the reason in the next request
      expect(readFileSync(abs("package.json"), "utf8")).toBe(COMMITTED_FILES["package.json"]);
      const afterMcp = lastToolResult(nextRequest(MCP_EDIT));
      expect(afterMcp).toContain("GUARD_BLOCKED");
      expect(afterMcp).toContain("package.json");
      expect(bodyText(nextRequest(MCP_EDIT))).toContain("blacklisted");

      // the issue holds this session's chat, which the plugin read through OpenCode's client
      const report = JSON.parse(lastToolResult(nextRequest(ISSUE_REPORT))) as {
        chat_path?: string;
      };
      expect(report.chat_path, lastToolResult(nextRequest(ISSUE_REPORT))).toEqual(
        expect.any(String),
      );
      const chat = readFileSync(resolve(ws.root, report.chat_path ?? ""), "utf8");
      expect(chat).toContain("Fix the greeting in src/greet.ts.");
      expect(chat).toContain("timewarp blocked this Edit on package.json");

      // every change the agent made is in the ledger, one operation per tool call
      const ops = ledgerOperations(ws);
      const touched = ops.flatMap((o) => o.affectedFiles).sort();
      expect(touched).toEqual(["README.md", "src/greet.ts", "src/util.ts", "src/util.ts"]);
      expect(ops.filter((o) => o.tool === "shell")).toHaveLength(2);

      // the session: recorded for this agent, bound to the client's pid, ended with its scratch gone
      const sessions = readSessions(ws);
      expect(sessions, JSON.stringify(sessions)).toHaveLength(1);
      const [session] = sessions;
      expect(session).toMatchObject({ agent: "opencode", pid: run.pid });
      expect(session?.ended_at, JSON.stringify(session)).toEqual(expect.any(String));
      expect(session?.snapshot_id).toEqual(expect.any(String));
      expect(
        existsSync(join(ws.root, ".timewarp", "hooks", "pending", session?.session_id ?? "")),
      ).toBe(false);

      // no hook failed on the way, and the hooks went through the watch daemon (timewarp-hook,
      // named by its absolute path in the plugin, not looked up on OpenCode's PATH)
      expect(readFileSync(abs(".opencode/plugins/timewarp.js"), "utf8")).toMatch(
        /const TIMEWARP_COMMAND = \["\/[^"]+\/timewarp(\.cjs)?"\];/,
      );
      const doctor = timewarpJson<Doctor>(["doctor"], ws.root, ws.env);
      expect(doctor.recent_failures, JSON.stringify(doctor.recent_failures)).toEqual([]);
      expect(doctor.ok, JSON.stringify(doctor)).toBe(true);
      expect(doctor.daemon).toMatchObject({ running: true, serving_hooks: true });
      // every hook after the session start (which the CLI answers: it starts the daemon): before
      // and after the four calls that ran, before the blocked one, the session end
      expect(doctor.daemon.hooks_answered).toBeGreaterThanOrEqual(10);

      // reverting everything, newest first, gives back the commit
      expect(revertAll(ws, AGENT_PATHS)).toEqual([]);
      // uninstall gives back the user's config byte for byte, and stops the daemon
      // the prompt took a turn checkpoint (the plugin's chat.message), which rewind lists
      expect(turnsOf(ws).length).toBeGreaterThanOrEqual(1);
      expect(uninstallDiffers(ws, "opencode")).toEqual([]);
      expect(await exits(doctor.daemon.pid)).toBe(true);
    } finally {
      ws.cleanup();
    }
  });

  it("phase 2: what timewarp adds per tool call and before the first request (printed)", async () => {
    // Three runs of each, interleaved, while they fit the time budget (a loaded machine makes
    // an OpenCode start take tens of seconds); at least one.
    const maxRuns = Math.max(1, Number(process.env.TIMEWARP_AGENT_BENCH_RUNS ?? 3));
    const budgetMs = Number(process.env.TIMEWARP_AGENT_BENCH_MS ?? 150_000);
    const benchStart = Date.now();
    let runs = 0;
    const variants: [string, AgentWorkspace][] = [];
    try {
      variants.push(["timewarp", benchWorkspace(model.server.url, "timewarp")]);
      variants.push(["no-op", benchWorkspace(model.server.url, "no-op")]);
      const samples = new Map(
        variants.map(([name]) => [
          name,
          { first: [] as number[], edit: [] as number[], shell: [] as number[] },
        ]),
      );
      // interleaved, so that the machine's load falls on both alike
      while (runs < maxRuns) {
        const pairStart = Date.now();
        for (const [name, bench] of variants) {
          const abs = (p: string) => join(bench.root, p);
          git(["checkout", "-q", "--", "src"], bench.root);
          // CALLS edits and CALLS shell edits, alternating: the start dominates a run, the calls
          // are cheap, so each run gives several samples of each.
          const steps: ChatStep[] = [];
          for (let k = 1; k <= CALLS; k++) {
            steps.push({
              toolCalls: [
                {
                  name: "edit",
                  arguments: {
                    filePath: abs("src/greet.ts"),
                    oldString: k === 1 ? '"Hello " + name' : `"Hello${k - 1} " + name`,
                    newString: `"Hello${k} " + name`,
                  },
                },
              ],
            });
            steps.push({
              toolCalls: [
                {
                  name: "bash",
                  arguments: {
                    command: `sed -i 's/VERSION = ${k}/VERSION = ${k + 1}/' src/util.ts`,
                    description: "Bump the version",
                  },
                },
              ],
            });
          }
          steps.push({ text: "Done." });
          const script = chatCompletionsScript(steps, { model: MODEL });
          model.use(script);
          const spawnedAt = Date.now();
          const run = await runOpencode(bench, "Fix the greeting in src/greet.ts.");
          // the same work in both variants, or the comparison means nothing
          expect(run.status, `${name}: ${run.stderr.slice(-2000)}`).toBe(0);
          expect(script.main.length, name).toBe(steps.length);
          expect(readFileSync(abs("src/greet.ts"), "utf8"), name).toContain(`"Hello${CALLS} "`);
          expect(readFileSync(abs("src/util.ts"), "utf8"), name).toContain(
            `VERSION = ${CALLS + 1}`,
          );
          const s = samples.get(name);
          const at = (k: number) => script.main[k]?.at ?? Number.NaN;
          s?.first.push(at(0) - spawnedAt);
          for (let step = 0; step < 2 * CALLS; step++) {
            const took = at(step + 1) - (script.answeredAt[step] ?? Number.NaN);
            (step % 2 === 0 ? s?.edit : s?.shell)?.push(took);
          }
        }
        runs++;
        const now = Date.now();
        if (now - benchStart + (now - pairStart) > budgetMs) break;
      }
      const row = (label: string, key: "first" | "edit" | "shell") => {
        const tw = median(samples.get("timewarp")?.[key] ?? []);
        const noop = median(samples.get("no-op")?.[key] ?? []);
        return `${label.padEnd(44)}${fmt(tw)}${fmt(noop)}${fmt(tw - noop)}`;
      };
      console.log(
        [
          `OpenCode ${VERSION} + timewarp vs a no-op plugin (\`true\` at the same events), ms: medians of ${runs} run(s), ${CALLS} calls of each kind per run`,
          `${"".padEnd(44)}${"timewarp".padStart(10)}${"no-op".padStart(10)}${"added".padStart(10)}`,
          row("spawn -> first main-loop request", "first"),
          row("edit call (answer -> next request)", "edit"),
          row("bash call, sed -i (answer -> next request)", "shell"),
          "(the first request waits for MCP servers: timewarp's starts, the no-op has none;",
          " OpenCode does not wait for a plugin's session.created handler)",
        ].join("\n"),
      );
    } finally {
      for (const [, bench] of variants) bench.cleanup();
    }
  }, 420_000);
});

/**
 * A workspace for the measurements: the same user config; `timewarp` as installed, `no-op` with
 * timewarp uninstalled and a plugin that runs `true` where timewarp's runs its hooks.
 */
function benchWorkspace(modelUrl: string, variant: "timewarp" | "no-op"): AgentWorkspace {
  const bench = agentWorkspace("opencode", {
    configFiles: CONFIG_FILES,
    prepare: userConfig(modelUrl),
  });
  if (variant === "no-op") {
    uninstallDiffers(bench, "opencode");
    mkdirSync(join(bench.root, ".opencode", "plugins"), { recursive: true });
    writeFileSync(join(bench.root, ".opencode", "plugins", "noop.js"), NOOP_PLUGIN);
  }
  return bench;
}

/** Runs `true` where timewarp's plugin runs a hook, awaited the same way. */
const NOOP_PLUGIN = `import { spawn, spawnSync } from "node:child_process";
const noop = () =>
  new Promise((done) => {
    const child = spawn("true", [], { stdio: "ignore" });
    child.on("close", done);
    child.on("error", done);
  });
export const NoopPlugin = async () => ({
  dispose: async () => {
    spawnSync("true");
  },
  event: async ({ event }) => {
    if (event?.type === "session.created") await noop();
  },
  "tool.execute.before": async () => {
    await noop();
  },
  "tool.execute.after": async () => {
    await noop();
  },
});
`;

function git(args: string[], cwd: string): void {
  const r = spawnSync("git", args, { cwd, encoding: "utf8" });
  if (r.status !== 0) throw new Error(`git ${args.join(" ")}: ${r.stderr}`);
}

function median(values: number[]): number {
  const sorted = values.filter((v) => Number.isFinite(v)).sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1
    ? (sorted[mid] ?? 0)
    : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
}

function fmt(ms: number): string {
  return (Number.isFinite(ms) ? String(Math.round(ms)) : "-").padStart(10);
}

interface Doctor {
  ok: boolean;
  daemon: { running: boolean; pid: number; serving_hooks: boolean; hooks_answered: number };
  recent_failures: unknown[];
}

/**
 * Whether `pid` is gone within a while: uninstall sends the daemon SIGTERM and waits 5 s at most;
 * on a loaded machine its exit (closing every inotify watch, its hook worker) can take longer.
 */
async function exits(pid: number, withinMs = 30_000): Promise<boolean> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    try {
      process.kill(pid, 0);
    } catch {
      return true;
    }
    if (Date.now() > deadline) return false;
    await new Promise((done) => setTimeout(done, 100));
  }
}

interface SessionRecordView {
  session_id: string;
  agent?: string | null;
  pid: number | null;
  snapshot_id: string | null;
  ended_at?: string | null;
}

function readSessions(ws: AgentWorkspace): SessionRecordView[] {
  return timewarpJson<{ sessions: SessionRecordView[] }>(["session", "list"], ws.root, ws.env)
    .sessions;
}
