/**
 * What every real-client scenario shares: the pinned clients (`test/agents/clients/`), a
 * workspace committed to git with timewarp installed for one agent, a scripted model server on
 * 127.0.0.1, the agent run as a child stopped by its process group, and the checks every
 * scenario ends with (the ledger reverts the tree to the commit; uninstall restores the config).
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";

export const REPO_ROOT = resolve(import.meta.dirname, "..", "..");
export const CLIENTS_DIR = join(import.meta.dirname, "clients");
const TIMEWARP = join(REPO_ROOT, "bin", "timewarp.cjs");

export type AgentName = "claude-code" | "opencode" | "gemini" | "codex";

/** The pinned version of a client package, from `clients/package.json`. */
export function pinnedVersion(pkg: string): string {
  const manifest = JSON.parse(readFileSync(join(CLIENTS_DIR, "package.json"), "utf8")) as {
    dependencies: Record<string, string>;
  };
  const version = manifest.dependencies[pkg];
  if (version === undefined) throw new Error(`${pkg} is not pinned in ${CLIENTS_DIR}`);
  return version;
}

/** The installed client's program; a clear error when `npm run test:agents` did not install it. */
export function clientBin(name: "claude" | "codex" | "gemini" | "opencode"): string {
  const bin = join(CLIENTS_DIR, "node_modules", ".bin", name);
  if (!existsSync(bin)) {
    throw new Error(`${bin} is missing: run \`npm run test:agents\`, which installs the clients`);
  }
  return bin;
}

/** Run the built timewarp CLI (the bundle the install wires into the agent). */
export function timewarp(
  args: string[],
  cwd: string,
  env: NodeJS.ProcessEnv = {},
): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [TIMEWARP, ...args], {
    cwd,
    encoding: "utf8",
    env: { ...process.env, NO_COLOR: "1", ...env },
    timeout: 120_000,
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

export function timewarpJson<T = unknown>(args: string[], cwd: string, env?: NodeJS.ProcessEnv): T {
  const r = timewarp([...args, "--json"], cwd, env);
  try {
    return JSON.parse(r.stdout) as T;
  } catch {
    throw new Error(
      `timewarp ${args.join(" ")} --json: exit ${r.status}\n${r.stdout}\n${r.stderr}`,
    );
  }
}

function git(args: string[], cwd: string): string {
  const r = spawnSync("git", args, { cwd, encoding: "utf8" });
  if (r.status !== 0) throw new Error(`git ${args.join(" ")}: ${r.stderr}`);
  return r.stdout;
}

/** The tree every scenario starts from, committed. */
export const COMMITTED_FILES: Record<string, string> = {
  "src/greet.ts": 'export function greet(name: string): string {\n  return "Hello " + name;\n}\n',
  "src/util.ts": "export const VERSION = 1;\n",
  "test/greet.test.ts":
    'import { greet } from "../src/greet";\n\nit("greets", () => {\n  expect(greet("a")).toBe("Hello a");\n});\n',
  "package.json": '{\n  "name": "fixture",\n  "version": "1.0.0"\n}\n',
  "README.md": "# fixture\n",
};

export interface AgentWorkspace {
  root: string;
  /** A HOME of its own, so the agent's user config is the test's, never the machine's. */
  home: string;
  /** The environment every process of the scenario runs with. */
  env: NodeJS.ProcessEnv;
  /** The bytes of the agent's config files before `timewarp install` (null: absent). */
  configBefore: Map<string, string | null>;
  cleanup(): void;
}

/**
 * A git repository holding COMMITTED_FILES, with the goal (whitelist `src/**`, blacklist
 * `package.json`) and timewarp installed for `agent`. `configFiles` are the agent config paths
 * (relative to the root) whose bytes uninstall must restore; `prepare` writes the user's own
 * config (HOME and project) before the install, as a user who already uses the agent has it.
 */
export function agentWorkspace(
  agent: AgentName,
  options: {
    configFiles: string[];
    prepare?: (root: string, home: string) => void;
    env?: NodeJS.ProcessEnv;
  },
): AgentWorkspace {
  const base = mkdtempSync(join(tmpdir(), `tw-agent-${agent}-`));
  const root = join(base, "project");
  const home = join(base, "home");
  mkdirSync(root, { recursive: true });
  mkdirSync(home, { recursive: true });
  for (const [path, text] of Object.entries(COMMITTED_FILES)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  git(["init", "-q", "-b", "main"], root);
  git(["add", "-A"], root);
  git(
    ["-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "fixture"],
    root,
  );
  const env: NodeJS.ProcessEnv = {
    HOME: home,
    XDG_CONFIG_HOME: join(home, ".config"),
    XDG_DATA_HOME: join(home, ".local", "share"),
    XDG_STATE_HOME: join(home, ".local", "state"),
    XDG_CACHE_HOME: join(home, ".cache"),
    // The watch daemon serves the hooks, as a user's install runs them.
    TIMEWARP_WATCH: "1",
    NO_COLOR: "1",
    ...options.env,
  };
  options.prepare?.(root, home);
  // The project is its own workspace: without a `.timewarp/` of its own, the nearest one above
  // (a stray `/tmp/.timewarp` left by any process) would take the install and every hook.
  const init = timewarp(["init", "--here"], root, env);
  if (init.status !== 0)
    throw new Error(`timewarp init --here: exit ${init.status}\n${init.stderr}`);
  const configBefore = new Map<string, string | null>();
  for (const path of options.configFiles) {
    const file = join(root, path);
    configBefore.set(path, existsSync(file) ? readFileSync(file, "utf8") : null);
  }
  // The store first: timewarp takes the nearest `.timewarp/` above a directory for its workspace
  // before the nearest `.git`, so a stray one in the temp directory would otherwise take it.
  mkdirSync(join(root, ".timewarp"), { recursive: true });
  const install = timewarp(["install", agent], root, env);
  if (install.status !== 0) {
    throw new Error(`timewarp install ${agent}: exit ${install.status}\n${install.stderr}`);
  }
  if (!existsSync(join(root, ".timewarp", "install", `${agent}.json`)))
    throw new Error(`timewarp install ${agent} did not install into ${root}:\n${install.stdout}`);
  mkdirSync(join(root, ".timewarp", "memory"), { recursive: true });
  writeFileSync(
    join(root, ".timewarp", "memory", "goal.json"),
    JSON.stringify({
      objective: "fix the greeting in src/greet.ts",
      whitelist: ["src/**"],
      blacklist: ["package.json"],
      checkpoints: [],
    }),
  );
  seedCard(root);
  return {
    root,
    home,
    env,
    configBefore,
    cleanup: () => {
      timewarp(["watch", "stop"], root, env);
      // TIMEWARP_KEEP_AGENT_HOME=1 keeps the temp dir: the agent's own session files under
      // home/ are how test/fixtures/memory/import/ samples are produced by the real clients.
      if (process.env.TIMEWARP_KEEP_AGENT_HOME === "1") {
        process.stderr.write(`kept agent workspace and HOME: ${base}\n`);
        return;
      }
      rmSync(base, { recursive: true, force: true });
    },
  };
}

/** The pattern card every scenario's library holds before the session (issue 18: reuse at session start). */
export const SEEDED_CARD_ID = "pc_greeting_comma";

/**
 * A card from an earlier run that fits the scenario's task ("fix the greeting in src/greet.ts"):
 * the session start and the first prompt offer it, and the model's first request must carry it.
 */
function seedCard(root: string): void {
  const dir = join(root, ".timewarp", "memory", "patterns");
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, `${SEEDED_CARD_ID}.json`),
    JSON.stringify({
      version: "1",
      pattern_id: SEEDED_CARD_ID,
      title: "Fix the greeting punctuation in src/greet.ts",
      triggers: ["greeting", "greet.ts"],
      steps: ["edit src/greet.ts: put a comma after Hello", "run the greeting test"],
      invariants: ["only src/ changes"],
      anti_patterns: ["edit package.json"],
      eval_examples: [],
      views: { terse: "", guided: "" },
      provenance: {
        source_runs: ["earlier"],
        created_by: "test",
        created_at: "2026-01-01T00:00:00Z",
      },
      uses: 0,
    }),
  );
}

/** The tracked and untracked changes against the commit, outside `.timewarp/` and `ignore`. */
export function changesAgainstCommit(root: string, ignore: string[] = []): string[] {
  const out = git(["status", "--porcelain", "--untracked-files=all"], root);
  return out
    .split("\n")
    .filter((l) => l.length > 0)
    .map((l) => l.slice(3))
    .filter((p) => !p.startsWith(".timewarp/") && !ignore.some((i) => p.startsWith(i)));
}

export interface LedgerOperation {
  id: string;
  timestamp: string;
  description: string;
  tool: string;
  affectedFiles: string[];
}

/** `timewarp history --json`, every page: every operation, newest first. */
export function ledgerOperations(ws: AgentWorkspace): LedgerOperation[] {
  const all: LedgerOperation[] = [];
  let cursor: string | undefined;
  do {
    const page = timewarpJson<{
      history: LedgerOperation[];
      pagination: { hasMore: boolean; nextCursor?: string };
    }>(
      ["history", "--limit", "100", ...(cursor !== undefined ? ["--cursor", cursor] : [])],
      ws.root,
      ws.env,
    );
    all.push(...page.history);
    cursor = page.pagination.hasMore ? page.pagination.nextCursor : undefined;
  } while (cursor !== undefined);
  return all;
}

/**
 * Revert every operation, newest first, through the CLI; then the tree must be the commit's
 * (outside `.timewarp/` and the agent's own config paths in `ignore`). Returns what is left.
 */
export function revertAll(ws: AgentWorkspace, ignore: string[]): string[] {
  for (const op of ledgerOperations(ws)) {
    const r = timewarp(["revert", op.id], ws.root, ws.env);
    if (r.status !== 0) throw new Error(`timewarp revert ${op.id}: exit ${r.status}\n${r.stderr}`);
  }
  return changesAgainstCommit(ws.root, ignore);
}

/**
 * The turns `timewarp rewind` lists for the workspace's last session: one per user prompt, each
 * a checkpoint the agent's own prompt hook took.
 */
export function turnsOf(ws: AgentWorkspace): { turn: number; prompt: string }[] {
  return timewarpJson<{ turns: { turn: number; prompt: string }[] }>(["rewind"], ws.root, ws.env)
    .turns;
}

/** Uninstall, then compare each config file's bytes with what it held before the install. */
export function uninstallDiffers(ws: AgentWorkspace, agent: AgentName): string[] {
  const r = timewarp(["install", agent, "--uninstall"], ws.root, ws.env);
  if (r.status !== 0)
    throw new Error(`timewarp install --uninstall: exit ${r.status}\n${r.stderr}`);
  const differs: string[] = [];
  for (const [path, before] of ws.configBefore) {
    const file = join(ws.root, path);
    const after = existsSync(file) ? readFileSync(file, "utf8") : null;
    if (after !== before) differs.push(path);
  }
  return differs;
}

/** One request the model server received. */
export interface ModelRequest {
  method: string;
  path: string;
  headers: IncomingMessage["headers"];
  body: unknown;
  at: number;
}

/**
 * A scripted model server on 127.0.0.1: every request is recorded; `respond` answers it in the
 * client's wire format (a format module decides which requests belong to the main loop and
 * which step of the script they get).
 */
export interface ModelServer {
  url: string;
  requests: ModelRequest[];
  close(): Promise<void>;
}

export async function startModelServer(
  respond: (req: ModelRequest, res: ServerResponse) => void | Promise<void>,
): Promise<ModelServer> {
  const requests: ModelRequest[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const text = Buffer.concat(chunks).toString("utf8");
      let body: unknown = text;
      try {
        body = text.length > 0 ? JSON.parse(text) : null;
      } catch {
        // not JSON: kept as text
      }
      const record: ModelRequest = {
        method: req.method ?? "GET",
        path: req.url ?? "/",
        headers: req.headers,
        body,
        at: Date.now(),
      };
      requests.push(record);
      Promise.resolve(respond(record, res)).catch((error: unknown) => {
        res.writeHead(500, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: String(error) }));
      });
    });
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((done) => {
        server.closeAllConnections();
        server.close(() => done());
      }),
  };
}

export interface AgentRun {
  /** The client's own pid (the process `command` started as). */
  pid: number | undefined;
  status: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/**
 * Run a client to its end, in its own process group; past `timeoutMs` the whole group is
 * killed by pid (the run then reports the signal), so no agent outlives its test.
 */
export function runAgent(
  command: string,
  args: string[],
  options: { cwd: string; env: NodeJS.ProcessEnv; input?: string; timeoutMs?: number },
): Promise<AgentRun> {
  const started = Date.now();
  const child: ChildProcess = spawn(command, args, {
    cwd: options.cwd,
    // PWD too: a client may take its project from it (`opencode run` does) over its real cwd.
    env: { ...process.env, PWD: options.cwd, ...options.env },
    detached: true,
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout?.on("data", (c: Buffer) => {
    stdout += c.toString("utf8");
  });
  child.stderr?.on("data", (c: Buffer) => {
    stderr += c.toString("utf8");
  });
  child.stdin?.end(options.input ?? "");
  const killGroup = (): void => {
    if (child.pid === undefined) return;
    try {
      process.kill(-child.pid, "SIGKILL");
    } catch {
      // already gone
    }
  };
  const timer = setTimeout(killGroup, options.timeoutMs ?? 120_000);
  return new Promise<AgentRun>((done, fail) => {
    child.on("error", (error) => {
      clearTimeout(timer);
      fail(error);
    });
    child.on("close", (status, signal) => {
      clearTimeout(timer);
      // Anything the agent left behind in its group (an MCP server, a shell) goes with it.
      killGroup();
      done({ pid: child.pid, status, signal, stdout, stderr, ms: Date.now() - started });
    });
  });
}

/** All text a request body holds, for asserting that the model was told something. */
export function bodyText(req: ModelRequest): string {
  return typeof req.body === "string" ? req.body : JSON.stringify(req.body);
}
