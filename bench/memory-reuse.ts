/**
 * `npm run bench:memory-reuse [RUNS]` — what memory's offer at session start and on each prompt
 * (issue 18, reuse at session start) adds to the hooks, at 0 and at 1 000 cards, side by side:
 *
 * - **whole hook process**, as `timewarp install` wires it: `bin/timewarp-hook <event> --agent
 *   claude-code` (the shell client; the watch daemon's hook server answers it, with the
 *   library's index kept open in its worker) — `session-start` (with a goal: the goal line and
 *   the cards for its objective) and `user-prompt-submit` (a prompt that matches cards), each
 *   in a new session so every sample offers; and the same prompt hook in its own process
 *   (`TIMEWARP_HOOK_SERVER=0`: the CLI loads, opens the persisted index cold);
 * - **in-process**: memory's `offerMemory` alone, warm (the worker's steady state) and cold
 *   (a fresh index handle per call: what a hook in its own process pays), and `runHook` for the
 *   prompt event in this process.
 *
 * Prints p50/p95 per row, peak RSS per child (GNU time) and the daemon's peak RSS. Timing is
 * printed, never asserted. RUNS (default 30, env MEMORY_REUSE_RUNS) samples per row. Needs the
 * build (`npm run build`; run here when dist/ is missing).
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { systemClock, systemRandom } from "../src/core/index.ts";
import { runHook } from "../src/hooks/index.ts";
import { offerMemory, openLibraryIndex } from "../src/memory/index.ts";
import { type ProcessSample, percentile, timeProcess } from "./time-process.ts";

const REPO = resolve(import.meta.dirname, "..");
const BIN = join(REPO, "bin", "timewarp.cjs");
const SHELL_CLIENT = join(REPO, "bin", "timewarp-hook");
const RUNS = Number(process.argv[2] ?? process.env.MEMORY_REUSE_RUNS ?? 30);

// A small vocabulary, so cards share words as real libraries do and IDF matters.
const AREAS = ["parser", "router", "cache", "logger", "config", "auth", "billing", "search"];
const VERBS = ["fix", "speed up", "translate", "document", "refactor", "test", "rename", "port"];
const THINGS = ["timezone", "offset", "retry", "header", "token", "locale", "encoding", "index"];

/** `n` cards over the vocabulary, written as the library holds them (pc_*.json). */
function writeCards(dir: string, n: number): void {
  mkdirSync(dir, { recursive: true });
  for (let i = 0; i < n; i++) {
    const area = AREAS[i % AREAS.length] as string;
    const verb = VERBS[Math.floor(i / AREAS.length) % VERBS.length] as string;
    const thing = THINGS[Math.floor(i / 64) % THINGS.length] as string;
    const id = `pc_bench_${i}`;
    writeFileSync(
      join(dir, `${id}.json`),
      JSON.stringify({
        version: "1",
        pattern_id: id,
        title: `${verb} the ${thing} handling in the ${area} (${i})`,
        triggers: [`${area} ${thing}`, `${verb} ${area}`, `case${i}`],
        steps: [`edit src/${area}/${thing}.ts`, `run npm test -- ${area}`],
        invariants: [`only src/${area}/ changes`],
        anti_patterns: ["edit package.json without consent"],
        eval_examples: [`npm test -- ${area}`],
        views: { terse: "", guided: "" },
        provenance: { source_runs: [`r${i}`], created_by: "bench", created_at: "2026-01-01" },
        uses: 0,
      }),
    );
  }
}

function workspace(cards: number): string {
  const dir = mkdtempSync(join(tmpdir(), `tw-bench-reuse-${cards}-`));
  mkdirSync(join(dir, "src"), { recursive: true });
  for (let i = 0; i < 200; i++)
    writeFileSync(join(dir, "src", `f${i}.ts`), `export const v = ${i};\n`);
  timeProcess("node", [BIN, "init", "--here"], { cwd: dir });
  const memory = join(dir, ".timewarp", "memory");
  mkdirSync(memory, { recursive: true });
  writeFileSync(
    join(memory, "goal.json"),
    JSON.stringify({
      objective: "fix the timezone handling in the parser",
      whitelist: ["src/"],
      blacklist: ["package.json"],
    }),
  );
  writeCards(join(memory, "patterns"), cards);
  // the persisted index, as a first `memory retrieve` (or the first hook) leaves it
  openLibraryIndex(join(memory, "patterns"));
  return dir;
}

const PROMPT = "the parser drops the timezone offset, fix the timezone handling";

function measure(cards: number): Record<string, ProcessSample[]> {
  const dir = workspace(cards);
  const rows: Record<string, ProcessSample[]> = {
    "session-start (shell client, daemon)": [],
    "user-prompt-submit (shell client, daemon)": [],
    "user-prompt-submit (own process, cold index)": [],
    "offerMemory, in-process, warm": [],
    "open persisted index + search, in-process (cold)": [],
    "runHook user-prompt-submit, in-process": [],
  };
  let offered = 0;
  try {
    const hook = (event: string, session: string, payload: object, env: NodeJS.ProcessEnv = {}) =>
      timeProcess(SHELL_CLIENT, [event, "--agent", "claude-code"], {
        cwd: dir,
        input: JSON.stringify({ session_id: session, cwd: dir, transcript_path: null, ...payload }),
        env: { TIMEWARP_WATCH: "", ...env },
      });
    // warm-up: the first session start snapshots the tree and starts the daemon
    hook("session-start", "warm", { source: "startup" });
    for (let k = 0; k < 3; k++) hook("user-prompt-submit", `warm${k}`, { prompt: PROMPT });
    for (let i = 0; i < RUNS; i++) {
      const start = hook("session-start", `s${i}`, { source: "startup" });
      rows["session-start (shell client, daemon)"]?.push(start);
      const prompt = hook("user-prompt-submit", `p${i}`, { prompt: PROMPT });
      rows["user-prompt-submit (shell client, daemon)"]?.push(prompt);
      if (prompt.stdout.includes("pc_bench_")) offered++;
      rows["user-prompt-submit (own process, cold index)"]?.push(
        hook("user-prompt-submit", `c${i}`, { prompt: PROMPT }, { TIMEWARP_HOOK_SERVER: "0" }),
      );
    }
    reportDaemon(dir, cards);
    // in this process: the worker's steady state, and a cold open each time
    offerMemory({
      root: dir,
      clock: systemClock,
      hint: PROMPT,
      offered: { goal: null, cards: [] },
    });
    for (let i = 0; i < RUNS; i++) {
      const t0 = performance.now();
      offerMemory({
        root: dir,
        clock: systemClock,
        hint: PROMPT,
        offered: { goal: null, cards: [] },
      });
      rows["offerMemory, in-process, warm"]?.push({
        ms: performance.now() - t0,
        rssKiB: null,
        stdout: "",
      });
      const t1 = performance.now();
      const lib = openLibraryIndex(join(dir, ".timewarp", "memory", "patterns"));
      lib.index.search(PROMPT, { limit: 3 });
      rows["open persisted index + search, in-process (cold)"]?.push({
        ms: performance.now() - t1,
        rssKiB: null,
        stdout: "",
      });
    }
    return rows;
  } finally {
    timeProcess("node", [BIN, "watch", "stop"], { cwd: dir });
    console.log(`[${cards} cards] prompts answered with a card by the daemon: ${offered}/${RUNS}`);
    void rmLater.push(dir);
  }
}

const rmLater: string[] = [];

async function inProcessHooks(cards: number, rows: Record<string, ProcessSample[]>): Promise<void> {
  const dir = workspace(cards);
  rmLater.push(dir);
  const once = (session: string) =>
    runHook({
      event: "user-prompt-submit",
      input: JSON.stringify({ session_id: session, cwd: dir, prompt: PROMPT }),
      agent: "claude-code",
      clock: systemClock,
      random: systemRandom,
    });
  await once("warm");
  for (let i = 0; i < RUNS; i++) {
    const t0 = performance.now();
    await once(`h${i}`);
    rows["runHook user-prompt-submit, in-process"]?.push({
      ms: performance.now() - t0,
      rssKiB: null,
      stdout: "",
    });
  }
}

function reportDaemon(dir: string, cards: number): void {
  try {
    const info = JSON.parse(readFileSync(join(dir, ".timewarp", "watch", "daemon.json"), "utf8"));
    const hwm = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${info.pid}/status`, "utf8"))?.[1];
    console.log(
      `[${cards} cards] watch daemon peak RSS: ${hwm ? `${(Number(hwm) / 1024).toFixed(0)} MiB` : "n/a"}`,
    );
  } catch (error) {
    console.log(`[${cards} cards] watch daemon: not found (${String(error)})`);
  }
}

async function main(): Promise<void> {
  if (!existsSync(join(REPO, "dist", "bin", "timewarp.cjs")))
    spawnSync("npm", ["run", "build"], { cwd: REPO, stdio: "inherit" });
  console.log(`${RUNS} samples per row, node ${process.version}`);
  const results = new Map<number, Record<string, ProcessSample[]>>();
  for (const cards of [0, 1000]) {
    const rows = measure(cards);
    await inProcessHooks(cards, rows);
    results.set(cards, rows);
  }
  const zero = results.get(0) ?? {};
  const full = results.get(1000) ?? {};
  const cell = (s: ProcessSample[] | undefined) => {
    const ms = (s ?? []).map((x) => x.ms);
    const rss = Math.max(0, ...(s ?? []).map((x) => x.rssKiB ?? 0));
    return `${percentile(ms, 50).toFixed(2).padStart(8)} ${percentile(ms, 95).toFixed(2).padStart(8)} ${(rss > 0 ? `${(rss / 1024).toFixed(0)} MiB` : "—").padStart(8)}`;
  };
  console.log(
    `\n${"row".padEnd(46)} ${"0 cards: p50".padStart(12)} ${"p95".padStart(8)} ${"RSS".padStart(8)}   ${"1000: p50".padStart(9)} ${"p95".padStart(8)} ${"RSS".padStart(8)}`,
  );
  for (const name of Object.keys(zero)) {
    console.log(`${name.padEnd(46)} ${cell(zero[name]).padStart(30)}   ${cell(full[name])}`);
  }
  console.log(
    `\nbench process peak RSS: ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MiB`,
  );
  for (const dir of rmLater) rmSync(dir, { recursive: true, force: true });
}

await main();
