/**
 * Dashboard benchmark (issue 19, "Scale"): a workspace with 100 sessions, 10,000 ledger
 * operations and 200 SkillPilot jobs, the real server started as a user starts it
 * (`node bin/timewarp.cjs -C WS ui --json`, a child process), and:
 *
 * - the first timeline page from the API (`GET /api/timeline?limit=50`): the first request
 *   (the server builds its index) and the median / p95 of the next ones; a filtered page too;
 * - navigation → timeline rendered in Debian's Chromium (playwright-core, headless): five
 *   launches with a fresh profile, each a first visit (token redirect included) then ten reloads
 *   with its cache; median / p95 of each, by the wall clock and by the page's own;
 * - the server's peak resident memory (VmHWM of /proc/<pid>/status) across the whole run, the
 *   code cache warm as in an installed timewarp; and, apart, the peak of a start without it.
 *
 * Targets: ≤ 300 ms, ≤ 80 MB. The workspace is made through the library: sessions, turns and
 * edits with `startSession`, `checkpointTurn`, `recordEdits` (real records, index lines, objects),
 * travels/returns and issues; guard warnings are appended to the bus as the hooks' guard writes
 * them. Jobs: a few real `tclsh` jobs are run, and their run directories replicated under fresh
 * job ids (manifest ids and times rewritten) up to the count: running 200 would take minutes.
 *
 *   npm run build && npm run bench:ui                 # 100 sessions, 10k operations, 200 jobs
 *   npm run bench:ui -- --small                       # 10 sessions, 500 operations, 20 jobs
 *   npm run bench:ui -- --keep                        # keep the workspace, print its path
 *   npm run bench:ui -- --reuse DIR                   # measure a kept workspace again
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
import {
  appendEvent,
  type Clock,
  createFixedClock,
  createJobId,
  createSeededRandom,
  parseConfig,
  workspacePaths,
} from "../src/core/index.ts";
import { recordEdits } from "../src/ledger/index.ts";
import { exampleDesignDir, runSkill } from "../src/runs/index.ts";
import {
  checkpointTurn,
  endSession,
  reportIssue,
  returnToPresent,
  startSession,
  travel,
} from "../src/timemachine/index.ts";
import { cpuMs } from "./scale-common.ts";

const REPO = dirname(dirname(fileURLToPath(import.meta.url)));
const args = process.argv.slice(2);
const SMALL = args.includes("--small");
const KEEP = args.includes("--keep");
const REUSE = args.includes("--reuse") ? args[args.indexOf("--reuse") + 1] : undefined;
const SESSIONS = SMALL ? 10 : 100;
const OPS = SMALL ? 500 : 10_000;
const JOBS = SMALL ? 20 : 200;
const REAL_JOBS = 2;
const API_RUNS = 30;
const BROWSER_LAUNCHES = 5;
const BROWSER_RUNS = 10;
const AGENTS = ["claude-code", "codex", "gemini", "opencode"];
const TOOLS = ["Edit", "Write", "shell", "ApplyEditBlock", "apply_patch", "MultiEdit"];
const FILES = 300;

const median = (xs: number[]) => quantile(xs, 0.5);
function quantile(xs: number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  if (s.length === 0) return Number.NaN;
  const at = Math.min(s.length - 1, Math.ceil(q * s.length) - 1);
  return s[Math.max(0, at)] ?? Number.NaN;
}
const load = () =>
  `load ${loadavg()
    .map((l) => l.toFixed(2))
    .join(" ")} on ${cpus().length} cores`;
const log = (s: string) => process.stderr.write(`${s}\n`);

/** The workspace: files, then sessions with turns and edits, travels, issues, guards. */
async function buildHistory(
  root: string,
  clock: Clock,
  replicateJob: (clock: Clock) => void,
): Promise<void> {
  const content = new Map<string, string>();
  for (let i = 0; i < FILES; i++) {
    const file = `src/m${i % 10}/file${i}.ts`;
    mkdirSync(join(root, dirname(file)), { recursive: true });
    const text = `export const v${i} = 0;\n`.repeat(20);
    writeFileSync(join(root, file), text);
    content.set(file, text);
  }
  const random = createSeededRandom(19);
  const perSession = Math.floor(OPS / SESSIONS);
  const started = performance.now();
  for (let s = 0; s < SESSIONS; s++) {
    const sessionId = `bench-${String(s).padStart(3, "0")}`;
    const agent = AGENTS[s % AGENTS.length] ?? "claude-code";
    await startSession({ root, sessionId, agent, pid: null, clock, taskHint: `task ${s}` });
    for (let k = 0; k < perSession; k++) {
      if (k % 25 === 0)
        await checkpointTurn({
          root,
          sessionId,
          agent,
          prompt: `prompt ${k / 25 + 1} of ${sessionId}`,
          clock,
        });
      const i = (s * perSession + k) % FILES;
      const file = `src/m${i % 10}/file${i}.ts`;
      const before = content.get(file) ?? "";
      const after = `${before.slice(0, -1)} // ${s}.${k}\n`;
      writeFileSync(join(root, file), after);
      content.set(file, after);
      await recordEdits({
        root,
        sessionId,
        clock,
        random,
        tool: TOOLS[k % TOOLS.length] ?? "Edit",
        files: [{ file, before, after }],
      });
      if (k % 40 === 7)
        appendEvent(
          workspacePaths(root).events,
          "guard.checked",
          {
            action: k % 80 === 7 ? "rollback" : "warn",
            score: 0.7,
            paths: [file],
            session_id: sessionId,
          },
          clock,
        );
    }
    if (s % 10 === 5) {
      const snap = (await startSession({ root, sessionId, agent, pid: null, clock })).snapshot_id;
      travel({ root, snapshotId: snap, clock });
      returnToPresent({ root, clock });
      await reportIssue({
        root,
        sessionId,
        task_context: `task ${s}`,
        symptom: "retried the same edit",
        success_criteria: "tests pass",
        clock,
      });
    }
    endSession({ root, sessionId, clock });
    const jobs =
      Math.floor(((s + 1) * (JOBS - REAL_JOBS)) / SESSIONS) -
      Math.floor((s * (JOBS - REAL_JOBS)) / SESSIONS);
    for (let j = 0; j < jobs; j++) replicateJob(clock);
    if (s % 10 === 9)
      log(
        `  ${s + 1} sessions, ${(s + 1) * perSession} operations (${((performance.now() - started) / 1000).toFixed(0)} s)`,
      );
  }
}

/**
 * A few real tclsh jobs; the function returned copies their run directories under fresh ids
 * and times (the history's clock), so the jobs fall among the sessions.
 */
async function prepareJobs(root: string): Promise<(clock: Clock) => void> {
  cpSync(exampleDesignDir(), root, { recursive: true });
  const settings = parseConfig({}, "bench").skillpilot;
  const real: string[] = [];
  for (let i = 0; i < REAL_JOBS; i++) {
    const r = await runSkill({ cwd: root, design: "AAA", skill: "summary_health", settings });
    real.push(r.runDir);
  }
  const runs = dirname(real[0] ?? "");
  const random = createSeededRandom(7);
  let n = REAL_JOBS;
  return (clock) => {
    const from = real[n++ % REAL_JOBS] ?? "";
    const oldId = from.split("/").pop() ?? "";
    const now = clock.now();
    const id = createJobId({ now: () => now }, random, 4242);
    const to = join(runs, id);
    cpSync(from, to, { recursive: true, verbatimSymlinks: true });
    const file = join(to, "job_manifest.json");
    const m = JSON.parse(readFileSync(file, "utf8").replaceAll(oldId, id)) as object;
    const created = now.toISOString();
    const finished = new Date(now.getTime() + 30_000).toISOString();
    const times = { created_at: created, updated_at: finished, finished_at: finished };
    writeFileSync(file, `${JSON.stringify({ ...m, ...times }, null, 2)}\n`);
  };
}

interface Server {
  child: ChildProcess;
  url: string;
  origin: string;
  token: string;
}

/**
 * `timewarp ui --json` as a user starts it; its one JSON line says where it listens. `env` adds
 * to the environment (TIMEWARP_CODE_CACHE=0: the first start after a build, no code cache yet).
 */
async function startServer(root: string, env: Record<string, string> = {}): Promise<Server> {
  const child = spawn(
    process.execPath,
    [join(REPO, "bin", "timewarp.cjs"), "-C", root, "ui", "--json"],
    {
      stdio: ["ignore", "pipe", "inherit"],
      // an experiment's V8 flags for the server alone (e.g. --max-semi-space-size=1)
      env: {
        ...process.env,
        NODE_OPTIONS: process.env.TW_BENCH_SERVER_NODE_OPTIONS ?? "",
        ...env,
      },
    },
  );
  const line = await new Promise<string>((resolve, reject) => {
    let out = "";
    child.stdout?.on("data", (b: Buffer) => {
      out += b.toString();
      const nl = out.indexOf("\n");
      if (nl >= 0) resolve(out.slice(0, nl));
    });
    child.once("exit", (code) =>
      reject(new Error(`timewarp ui exited (${code}) before it printed its URL`)),
    );
  });
  const doc = JSON.parse(line) as { url: string };
  const url = new URL(doc.url);
  return { child, url: doc.url, origin: url.origin, token: url.searchParams.get("token") ?? "" };
}

/**
 * The bin compiles the CLI once and keeps V8's code cache beside the bundle (bin/timewarp.cjs);
 * an installed timewarp has it from its first hook or command. Run one command so the server
 * starts as it does there, not as the very first process after `npm run build`, which
 * `coldStartPeak` measures on its own.
 */
function warmCodeCache(): void {
  const r = spawnSync(process.execPath, [join(REPO, "bin", "timewarp.cjs"), "--version"]);
  if (r.status !== 0) throw new Error(`timewarp --version failed: ${r.stderr}`);
}

/** The server's peak after its index and one first page, started without a code cache. */
async function coldStartPeak(root: string): Promise<number> {
  const server = await startServer(root, { TIMEWARP_CODE_CACHE: "0" });
  try {
    await timeApi(server, "limit=50", 1);
    return peakRssMb(server.child.pid ?? 0).hwm;
  } finally {
    const gone = new Promise((resolve) => server.child.once("exit", resolve));
    server.child.kill("SIGTERM");
    await gone;
  }
}

function peakRssMb(pid: number): { hwm: number; rss: number } {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = (name: string) =>
    Number(new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? Number.NaN);
  return { hwm: kb("VmHWM") / 1024, rss: kb("VmRSS") / 1024 };
}

interface ApiTimes {
  first: number;
  firstCpu: number;
  times: number[];
  /** The server's CPU per request, averaged over the warm ones (the machine is shared). */
  cpuPerRequest: number;
  total: number;
}

async function timeApi(server: Server, query: string, runs: number): Promise<ApiTimes> {
  const headers = { authorization: `Bearer ${server.token}` };
  const pid = server.child.pid ?? 0;
  const once = async () => {
    const t = performance.now();
    const res = await fetch(`${server.origin}/api/timeline?${query}`, { headers });
    const doc = (await res.json()) as { items: unknown[]; total: number };
    if (!res.ok || doc.items.length === 0)
      throw new Error(`timeline: ${res.status} ${JSON.stringify(doc).slice(0, 200)}`);
    return { ms: performance.now() - t, total: doc.total };
  };
  const cpu0 = cpuMs(pid);
  const first = await once();
  const cpu1 = cpuMs(pid);
  const times: number[] = [];
  for (let i = 0; i < runs; i++) times.push((await once()).ms);
  const cpu2 = cpuMs(pid);
  return {
    first: first.ms,
    firstCpu: cpu1 - cpu0,
    times,
    cpuPerRequest: (cpu2 - cpu1) / runs,
    total: first.total,
  };
}

const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
];

interface BrowserTimes {
  /** Wall ms from `page.goto` to the first row visible: first visits (a fresh profile each, the token's redirect included) and reloads. */
  first: number[];
  reload: number[];
  /** The same on the page's own clock, navigation start → a frame after the first row: no Playwright round trips (its script injected into each new page). */
  firstInPage: number[];
  reloadInPage: number[];
  /**
   * What `timewarp ui --open` costs with the user's browser already running: a new server (new
   * port, so nothing of the page is cached) visited right after it prints its URL (its index is
   * still being built), in a browser that has loaded pages before.
   */
  newServer: number[];
  newServerInPage: number[];
}

/** Run in every page before its own scripts: the time a frame has passed after the first row. */
const PAINT_PROBE = `new MutationObserver((_, o) => {
  if (!document.querySelector('[data-view="timeline"] .tl-row')) return;
  o.disconnect();
  requestAnimationFrame(() => setTimeout(() => { window.__twPainted = performance.now(); }));
}).observe(document, { childList: true, subtree: true });`;

/**
 * Navigation → the timeline's first row visible, in Debian's Chromium: per launch a fresh profile,
 * its first visit (the URL the server printed), then `runs` visits of `/timeline` with its cache.
 */
async function timeBrowser(server: Server, runs: number, root: string): Promise<BrowserTimes> {
  const t: BrowserTimes = {
    first: [],
    reload: [],
    firstInPage: [],
    reloadInPage: [],
    newServer: [],
    newServerInPage: [],
  };
  for (let launch = 0; launch < BROWSER_LAUNCHES; launch++) {
    const profile = mkdtempSync(join(tmpdir(), "tw-bench-ui-profile-"));
    const context = await chromium.launchPersistentContext(profile, {
      executablePath: "/usr/bin/chromium",
      headless: true,
      args: CHROMIUM_ARGS,
    });
    try {
      await context.addInitScript(PAINT_PROBE);
      const page = context.pages()[0] ?? (await context.newPage());
      const visit = async (url: string, wall: number[], inPage: number[]) => {
        const t0 = performance.now();
        await page.goto(url);
        await page.waitForSelector('[data-view="timeline"] .tl-row', { state: "visible" });
        wall.push(performance.now() - t0);
        // a function, not a string: the page's CSP refuses to evaluate strings
        const painted = await page.waitForFunction(
          () => (globalThis as { __twPainted?: number }).__twPainted,
        );
        inPage.push(Number(await painted.jsonValue()));
      };
      await visit(server.url, t.first, t.firstInPage);
      for (let i = 0; i < runs; i++)
        await visit(`${server.origin}/timeline`, t.reload, t.reloadInPage);
      const another = await startServer(root);
      try {
        await visit(another.url, t.newServer, t.newServerInPage);
      } finally {
        another.child.kill("SIGTERM");
      }
      if (process.env.TW_BENCH_SCREENSHOT)
        await page.screenshot({ path: process.env.TW_BENCH_SCREENSHOT, fullPage: false });
    } finally {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    }
  }
  return t;
}

async function main(): Promise<void> {
  if (!existsSync(join(REPO, "dist", "bin", "timewarp.cjs")))
    log(
      "warning: no build (dist/bin/timewarp.cjs): the bin runs the sources through tsx; run `npm run build` first",
    );
  const base = existsSync("/dev/shm") ? "/dev/shm" : tmpdir();
  const root = REUSE ?? mkdtempSync(join(base, "tw-bench-ui-"));
  const where = root.startsWith("/dev/shm") ? "tmpfs: the ledger's fsyncs cost nothing" : "disk";
  log(`workspace ${root} (${where}); ${load()}`);
  const clock = createFixedClock(new Date(Date.now() - 30 * 24 * 3600_000), 20_000);
  let server: Server | undefined;
  try {
    const t0 = performance.now();
    if (REUSE === undefined) await buildHistory(root, clock, await prepareJobs(root));
    const jobs = readdirSync(join(root, ".skillpilot", "runs")).length;
    const bus = readFileSync(workspacePaths(root).events).length;
    log(
      `${jobs} run directories; built in ${((performance.now() - t0) / 1000).toFixed(0)} s; events.jsonl ${(bus / 1024 / 1024).toFixed(1)} MiB; ${load()}`,
    );
    const cold = existsSync(join(REPO, "dist", "bin", "timewarp.cjs"))
      ? await coldStartPeak(root)
      : Number.NaN;
    warmCodeCache();
    server = await startServer(root);
    const pid = server.child.pid ?? 0;
    const startRss = peakRssMb(pid);
    const before = load();
    const api = await timeApi(server, "limit=50", API_RUNS);
    const filtered = await timeApi(
      server,
      `limit=50&agent=codex&glob=${encodeURIComponent("src/m3/**")}`,
      API_RUNS,
    );
    const browser = await timeBrowser(server, BROWSER_RUNS, root);
    const mem = peakRssMb(pid);
    report({ api, filtered, browser, mem, startRss, cold, before, after: load() });
    if (KEEP) log(`kept: ${root}`);
  } finally {
    server?.child.kill("SIGTERM");
    if (!KEEP && REUSE === undefined) rmSync(root, { recursive: true, force: true });
  }
}

function report(r: {
  api: ApiTimes;
  filtered: ApiTimes;
  browser: BrowserTimes;
  mem: { hwm: number; rss: number };
  startRss: { hwm: number; rss: number };
  /** Peak of a start without the code cache (index and first page only). */
  cold: number;
  before: string;
  after: string;
}): void {
  const b = r.browser;
  const row = (name: string, first: number, xs: number[], target: string) =>
    `${name.padEnd(46)} ${first.toFixed(1).padStart(8)} ${median(xs).toFixed(1).padStart(8)} ${quantile(xs, 0.95).toFixed(1).padStart(8)}   ${target}`;
  const lines = [
    "",
    `timewarp ui: ${SESSIONS} sessions, ${OPS} ledger operations, ${JOBS} SkillPilot jobs (${REAL_JOBS} real tclsh, the rest replicated); ${r.api.total} timeline rows`,
    `${"".padEnd(46)} ${"first".padStart(8)} ${"median".padStart(8)} ${"p95".padStart(8)}   target`,
    row(`API first page, limit 50 (ms, n=${API_RUNS})`, r.api.first, r.api.times, "<= 300 ms"),
    row(
      `API filtered page, agent+glob (ms, n=${API_RUNS})`,
      r.filtered.first,
      r.filtered.times,
      `<= 300 ms (${r.filtered.total} rows match)`,
    ),
    row(
      `Chromium: first visit, fresh profile (ms, n=${b.first.length})`,
      b.first[0] ?? Number.NaN,
      b.first,
      "close to the reloads",
    ),
    row(
      "  on the page's clock: navigation -> painted",
      b.firstInPage[0] ?? Number.NaN,
      b.firstInPage,
      "",
    ),
    row(
      `Chromium: a new timewarp ui, browser running (ms, n=${b.newServer.length})`,
      b.newServer[0] ?? Number.NaN,
      b.newServer,
      "",
    ),
    row(
      "  on the page's clock: navigation -> painted",
      b.newServerInPage[0] ?? Number.NaN,
      b.newServerInPage,
      "",
    ),
    row(
      `Chromium: reload, navigation -> timeline (ms, n=${b.reload.length})`,
      b.reload[0] ?? Number.NaN,
      b.reload,
      "<= 300 ms",
    ),
    row(
      "  on the page's clock: navigation -> painted",
      b.reloadInPage[0] ?? Number.NaN,
      b.reloadInPage,
      "",
    ),
    `server CPU per API request: first page ${r.api.firstCpu} ms cold, ${r.api.cpuPerRequest.toFixed(1)} ms warm; filtered ${r.filtered.cpuPerRequest.toFixed(1)} ms warm (/proc ticks of 10 ms)`,
    `server resident memory: peak ${r.mem.hwm.toFixed(1)} MB (VmHWM), now ${r.mem.rss.toFixed(1)} MB, at start ${r.startRss.rss.toFixed(1)} MB   target <= 80 MB`,
    `server started without V8's code cache (the first start after a build): peak ${r.cold.toFixed(1)} MB after its index and first page`,
    `load: before the measurements ${r.before}; after ${r.after}`,
    "(first = the first request after start, which builds the server's index; a first visit includes the ?token= redirect;",
    " wall times include Playwright's round trips and its script injected into each new page; the page's clock has none)",
  ];
  process.stdout.write(`${lines.join("\n")}\n`);
}

await main();
