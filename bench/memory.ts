/**
 * The memory lab's three hot paths, each beside its named alternative in the same run:
 *
 *   guards      runGuards over 100k events  vs  the seed's plain per-event weighted sum
 *               (0.4·scope + 0.3·plan + 0.2·test + 0.1·evidence, binary guards) — speed, and
 *               how many edits each can send to rollback
 *   retrieval   MiniSearch BM25 over 10k cards (p50/p95 per query)  vs  a linear scan scoring
 *               every card by token overlap
 *   cold CLI    one `memory retrieve` in a fresh process over the 10k cards on disk: the persisted
 *               index (.index.json, read only) vs rebuilding it from the card files — p50/p95, peak RSS
 *   transcript  streaming extraction of a 10 MB Claude Code transcript  vs  readFileSync +
 *               split + JSON.parse of every line — each in its own child process, peak RSS of each
 *
 *   npm run bench:memory            full size
 *   npm run bench:memory -- 0.1     a tenth (quick check while developing)
 *   BENCH_ONLY=retrieval npm run bench:memory      one section (guards, retrieval, transcript)
 *   npm run bench:memory -- --real DIR [--legacy]   the chain on real public runs (bench/memory-real.ts)
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { createFixedClock } from "../src/core/index.ts";
import {
  checkEdit,
  compileGoal,
  createCardIndex,
  distillCard,
  extractTranscriptEvents,
  type GuardRecord,
  linearScanSearch,
  type MemoryEvent,
  type PatternCard,
  parseGoal,
  runGuards,
} from "../src/memory/index.ts";

const median = (xs: number[]) =>
  [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;
const pct = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))] ?? Number.NaN;
const ms = (x: number) => `${x.toFixed(x < 10 ? 3 : 1)} ms`;
const rssMiB = () => (process.resourceUsage().maxRSS / 1024).toFixed(0);

// ── child mode: one transcript extraction, report time and peak RSS ──────────────────────────
if (process.argv[2] === "--child" && process.argv[3]?.startsWith("retrieve-")) {
  // one cold `memory retrieve` as the CLI runs it: a fresh process, the workspace's libraries
  const [, , , mode, root, query] = process.argv;
  const { retrieveForTask } = await import("../src/memory/index.ts");
  if (mode === "retrieve-rebuild") {
    const lib = join(root ?? "", ".timewarp", "memory", "patterns");
    rmSync(join(lib, ".index.json"), { force: true });
    rmSync(join(lib, ".index-stamp.json"), { force: true });
  }
  const t0 = performance.now();
  const r = retrieveForTask({ root: root ?? "", clock: createFixedClock(new Date()) }, query ?? "");
  process.stdout.write(
    JSON.stringify({
      ms: performance.now() - t0,
      hits: r.cards.length,
      rebuilt: r.index.some((i) => i.rebuilt),
      maxRSS: process.resourceUsage().maxRSS,
    }),
  );
  process.exit(0);
}
if (process.argv[2] === "--child") {
  const [, , , mode, file] = process.argv;
  const t0 = performance.now();
  let events = 0;
  if (mode === "stream") events = (await extractTranscriptEvents(file ?? "")).events.length;
  else {
    for (const l of readFileSync(file ?? "", "utf8").split("\n")) {
      if (l === "") continue;
      const v = JSON.parse(l) as { message?: { content?: unknown } };
      if (Array.isArray(v.message?.content)) events += v.message.content.length > 0 ? 1 : 0;
    }
  }
  process.stdout.write(
    JSON.stringify({ ms: performance.now() - t0, events, maxRSS: process.resourceUsage().maxRSS }),
  );
  process.exit(0);
}

if (process.argv.includes("--real")) {
  const { runRealBench } = await import("./memory-real.ts");
  await runRealBench(process.argv.slice(2));
  process.exit(0);
}

const scale = Number(process.argv[2] ?? process.env.BENCH_SCALE ?? 1);
const reps = Number(process.env.BENCH_REPS ?? 5);
const dir = mkdtempSync(join(tmpdir(), "tw-bench-memory-"));
const clock = createFixedClock(new Date("2026-01-01T00:00:00Z"));
let seed = 42;
const rnd = () => {
  seed = (seed * 1103515245 + 12345) >>> 0;
  return seed / 2 ** 32;
};
const pick = <T>(xs: readonly T[]) => xs[Math.floor(rnd() * xs.length)] as T;

const goalR = parseGoal({
  objective: "translate README.md and docs to Chinese",
  whitelist: ["README.md", "docs/", "src/i18n/"],
  blacklist: ["requirements*.txt", "package.json"],
  protected: ["tests/"],
});
if (!goalR.ok) throw new Error(goalR.issues.join("; "));
const goal = goalR.value.goal;

const only = process.env.BENCH_ONLY;
const runs = (section: string) => only === undefined || only.split(",").includes(section);

// ── 1. guards ────────────────────────────────────────────────────────────────────────────────
if (runs("guards")) {
  const n = Math.max(1000, Math.round(100_000 * scale));
  const files = [
    "README.md",
    "docs/a/guide.md",
    "docs/api.md",
    "src/i18n/zh.json",
    "requirements.txt",
    "package.json",
    "src/core/x.ts",
    "tests/test_a.py",
  ];
  const events: MemoryEvent[] = [];
  for (let i = 0; i < n; i++) {
    const r = rnd();
    if (r < 0.1)
      events.push({
        run_id: "b",
        step: i,
        phase: "modify",
        tool: "plan",
        why: `plan: translate ${pick(files)}`,
      });
    else if (r < 0.25) {
      const failed = rnd() < 0.3 ? 1 : 0;
      events.push({
        run_id: "b",
        step: i,
        phase: "test",
        tool: "shell",
        cmd: rnd() < 0.02 ? "pytest -q || true" : "pytest -q",
        result: { framework: "pytest", passed: 10, failed, skipped: 0, exit_code: null },
      });
    } else {
      const where = pick(files);
      events.push({
        run_id: "b",
        step: i,
        phase: "modify",
        tool: "edit",
        where,
        source: rnd() < 0.5 ? "chat" : "patch",
        ...(rnd() < 0.6 ? { evidence: rnd() < 0.05 ? "+@pytest.mark.skip" : "+text" } : {}),
        confidence: 0.8,
      });
    }
  }
  const compiled = compileGoal(goal);
  const ours: number[] = [];
  let records: GuardRecord[] = [];
  const oursCpu: number[] = [];
  for (let k = 0; k < reps; k++) {
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    records = runGuards(compiled, events, { gitWorkTree: true });
    ours.push(performance.now() - t0);
    const c1 = process.cpuUsage(c0);
    oursCpu.push((c1.user + c1.system) / 1000);
  }
  // The seed's formula: binary guards, plain weighted sum; its ceiling for an edit is 0.4+0.3+0.1.
  const original = (e: MemoryEvent, planned: boolean): number => {
    if (e.tool === "plan") return 0;
    if (e.tool === "shell") return 0.2 * (e.result && e.result.failed > 0 ? 1 : 0);
    const c = compiled.classify(e.where ?? "");
    const scope = c.blacklisted !== null || c.whitelisted === null ? 1 : 0;
    return 0.4 * scope + 0.3 * (planned ? 0 : 1) + 0.1 * (e.evidence ? 0 : 1);
  };
  const theirs: number[] = [];
  let origRollback = 0;
  let origWarn = 0;
  for (let k = 0; k < reps; k++) {
    origRollback = 0;
    origWarn = 0;
    const t0 = performance.now();
    let planned = false;
    for (const e of events) {
      if (e.tool === "plan") planned = true;
      const d = original(e, planned);
      if (d >= 0.8) origRollback++;
      else if (d >= 0.5) origWarn++;
    }
    theirs.push(performance.now() - t0);
  }
  const outOfScope = events.filter(
    (e) => e.tool === "edit" && compiled.classify(e.where ?? "").whitelisted === null,
  ).length;
  const count = (a: string) => records.filter((r) => r.action === a).length;
  console.log(`\n## guards over ${n} events (${reps} reps)`);
  console.log(
    `  runGuards (ours)            median ${ms(median(ours))}  (${((n / median(ours)) * 1000).toFixed(0)} events/s, CPU ${ms(median(oursCpu))})`,
  );
  console.log(
    `  seed's plain weighted sum   median ${ms(median(theirs))}  ratio ours/seed ${(median(ours) / median(theirs)).toFixed(1)}x`,
  );
  console.log(`  out-of-scope edits: ${outOfScope}`);
  console.log(`  ours:  ${count("rollback")} rollback, ${count("warn")} warn`);
  console.log(
    `  seed:  ${origRollback} rollback, ${origWarn} warn  (an out-of-scope edit with a plan and evidence scores 0.4: ok)`,
  );
  // checkEdit answers PreToolUse: one call per proposed edit, inside a hook's 100 ms budget
  // (timed here, not in npm test: a test never asserts wall-clock time).
  const calls = 200;
  const perCall: number[] = [];
  for (let k = 0; k < reps; k++) {
    const t0 = performance.now();
    for (let i = 0; i < calls; i++)
      checkEdit(goal, { paths: [`docs/p${i}.md`, "README.md"], diff: "@@ -1 +1 @@\n+x" });
    perCall.push((performance.now() - t0) / calls);
  }
  console.log(`  checkEdit per call          median ${ms(median(perCall))}  (hook budget 100 ms)`);
}

// ── 2. retrieval ─────────────────────────────────────────────────────────────────────────────
if (runs("retrieval")) {
  const n = Math.max(200, Math.round(10_000 * scale));
  const verbs = [
    "translate",
    "fix",
    "add",
    "remove",
    "refactor",
    "pin",
    "upgrade",
    "document",
    "retry",
    "cache",
    "rename",
    "split",
    "validate",
    "parse",
    "render",
  ];
  const nouns = [
    "README",
    "docs",
    "parser",
    "client",
    "timeout",
    "dependency",
    "urllib3",
    "logger",
    "config",
    "schema",
    "migration",
    "router",
    "session",
    "tokenizer",
    "snapshot",
    "ledger",
    "retryPolicy",
    "http_client",
    "userProfile",
    "build",
    "flaky_test",
    "import",
    "cache",
    "index",
    "query",
    "webhook",
    "payment",
    "invoice",
    "locale",
    "i18n",
  ];
  const dirs = ["src/", "docs/", "lib/", "app/", "pkg/"];
  const cards: PatternCard[] = [];
  for (let i = 0; i < n; i++) {
    const objective = `${pick(verbs)} the ${pick(nouns)} ${pick(nouns)} in ${pick(dirs)}${pick(nouns)}.ts (${i})`;
    const g = parseGoal({
      objective,
      whitelist: [pick(dirs)],
      required_tests: [`npm test -- ${pick(nouns)}`],
    });
    if (!g.ok) continue;
    const ev: MemoryEvent[] = [
      {
        run_id: `r${i}`,
        step: 0,
        phase: "modify",
        tool: "edit",
        where: `${pick(dirs)}${pick(nouns)}.ts`,
        why: `${pick(verbs)} ${pick(nouns)}`,
        source: "patch",
      },
    ];
    cards.push(
      distillCard({
        run_id: `r${i}`,
        goal: g.value.goal,
        events: ev,
        guards: runGuards(g.value.goal, ev),
        clock,
      }),
    );
  }
  const t0 = performance.now();
  const index = createCardIndex(cards);
  const build = performance.now() - t0;
  const queries = Array.from({ length: 200 }, () => `${pick(verbs)} ${pick(nouns)} ${pick(nouns)}`);
  const ours: number[] = [];
  const scan: number[] = [];
  let hits = 0;
  let agree = 0;
  // CPU time as well as wall time: on a shared, loaded machine wall time includes waiting for a core.
  const cpu = () => {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1000;
  };
  const oursCpu: number[] = [];
  const scanCpu: number[] = [];
  for (const q of queries) {
    let c = cpu();
    let t = performance.now();
    const a = index.search(q, { limit: 5 });
    ours.push(performance.now() - t);
    oursCpu.push(cpu() - c);
    c = cpu();
    t = performance.now();
    const b = linearScanSearch(cards, q, 5);
    scan.push(performance.now() - t);
    scanCpu.push(cpu() - c);
    if (a.length > 0) hits++;
    if (a[0] !== undefined && b.some((x) => x.card.pattern_id === a[0]?.card.pattern_id)) agree++;
  }
  console.log(`\n## retrieval over ${cards.length} cards (${queries.length} queries)`);
  console.log(`  index build                 ${ms(build)}`);
  console.log(
    `  MiniSearch BM25 (ours)      p50 ${ms(median(ours))}  p95 ${ms(pct(ours, 0.95))}  CPU p50 ${ms(median(oursCpu))}`,
  );
  console.log(
    `  linear token-overlap scan   p50 ${ms(median(scan))}  p95 ${ms(pct(scan, 0.95))}  CPU p50 ${ms(median(scanCpu))}  ratio scan/ours ${(median(scan) / median(ours)).toFixed(0)}x`,
  );
  console.log(
    `  queries answered above the threshold: ${hits}/${queries.length}; our top card in the scan's top 5: ${agree}/${hits}`,
  );

  // the path an agent pays: `timewarp memory retrieve` starts a process that finds the cards on disk
  const root = join(dir, "ws");
  const lib = join(root, ".timewarp", "memory", "patterns");
  mkdirSync(lib, { recursive: true });
  // distilled ids repeat (the first words of similar objectives): one file per card, as a library of n distinct cards
  cards.forEach((c, i) => {
    const id = `${c.pattern_id}_${i}`;
    writeFileSync(join(lib, `${id}.json`), JSON.stringify({ ...c, pattern_id: id }, null, 2));
  });
  const coldRuns = Math.max(5, reps);
  const cold = (mode: string) => {
    const inProc: number[] = [];
    const wall: number[] = [];
    const rss: number[] = [];
    let rebuilt = 0;
    for (let k = 0; k < coldRuns; k++) {
      const t = performance.now();
      const r = spawnSync(
        process.execPath,
        [...process.execArgv, process.argv[1] ?? "", "--child", mode, root, queries[k] ?? ""],
        { encoding: "utf8" },
      );
      wall.push(performance.now() - t);
      if (r.status !== 0) throw new Error(`child ${mode} failed: ${r.stderr}`);
      const out = JSON.parse(r.stdout) as { ms: number; maxRSS: number; rebuilt: boolean };
      inProc.push(out.ms);
      rss.push(out.maxRSS / 1024);
      if (out.rebuilt) rebuilt++;
    }
    return { inProc, wall, rss: median(rss), rebuilt };
  };
  const rebuild = cold("retrieve-rebuild");
  const persisted = cold("retrieve-persisted"); // the last rebuild left a fresh index
  const indexMiB = statSync(join(lib, ".index.json")).size / 1024 / 1024;
  console.log(
    `\n## cold \`memory retrieve\` in a fresh process over ${cards.length} card files (${coldRuns} runs each; index file ${indexMiB.toFixed(1)} MiB)`,
  );
  for (const [name, r] of [
    ["persisted index (ours)    ", persisted],
    ["rebuild from card files   ", rebuild],
  ] as const) {
    console.log(
      `  ${name} retrieve p50 ${ms(median(r.inProc))}  p95 ${ms(pct(r.inProc, 0.95))}  process wall p50 ${ms(median(r.wall))}  peak RSS ${r.rss.toFixed(0)} MiB  (rebuilt ${r.rebuilt}/${coldRuns})`,
    );
  }
  console.log(
    `  ratio rebuild/persisted: retrieve ${(median(rebuild.inProc) / median(persisted.inProc)).toFixed(1)}x, process ${(median(rebuild.wall) / median(persisted.wall)).toFixed(1)}x`,
  );
}

// ── 3. transcript extraction ─────────────────────────────────────────────────────────────────
if (runs("transcript")) {
  const target = Math.max(256 * 1024, Math.round(10 * 1024 * 1024 * scale));
  const file = join(dir, "transcript.jsonl");
  const parts: string[] = [];
  let size = 0;
  let i = 0;
  const body = "x".repeat(1500);
  while (size < target) {
    const lines = [
      {
        type: "assistant",
        cwd: "/ws",
        message: {
          content: [
            { type: "text", text: `step ${i}: reading the parser` },
            {
              type: "tool_use",
              id: `r${i}`,
              name: "Read",
              input: { file_path: `/ws/src/f${i % 50}.ts` },
            },
          ],
        },
      },
      {
        type: "user",
        cwd: "/ws",
        message: { content: [{ type: "tool_result", tool_use_id: `r${i}`, content: body }] },
      },
      {
        type: "assistant",
        cwd: "/ws",
        message: {
          content: [
            {
              type: "tool_use",
              id: `e${i}`,
              name: "Edit",
              input: { file_path: `/ws/src/f${i % 50}.ts`, old_string: "a", new_string: "b" },
            },
          ],
        },
      },
      {
        type: "user",
        cwd: "/ws",
        message: { content: [{ type: "tool_result", tool_use_id: `e${i}`, content: "ok" }] },
      },
      {
        type: "assistant",
        cwd: "/ws",
        message: {
          content: [
            { type: "tool_use", id: `t${i}`, name: "Bash", input: { command: "pytest -q" } },
          ],
        },
      },
      {
        type: "user",
        cwd: "/ws",
        message: {
          content: [
            {
              type: "tool_result",
              tool_use_id: `t${i}`,
              content: `${i % 7 === 0 ? "1 failed, " : ""}12 passed in 0.3s`,
            },
          ],
        },
      },
    ];
    for (const l of lines) {
      const s = `${JSON.stringify(l)}\n`;
      parts.push(s);
      size += s.length;
    }
    i++;
  }
  writeFileSync(file, parts.join(""));
  const mb = statSync(file).size / 1024 / 1024;
  const child = (mode: string) => {
    const runs: { ms: number; events: number; maxRSS: number }[] = [];
    for (let k = 0; k < Math.max(3, Math.floor(reps / 2)); k++) {
      const r = spawnSync(
        process.execPath,
        [...process.execArgv, process.argv[1] ?? "", "--child", mode, file],
        { encoding: "utf8" },
      );
      if (r.status !== 0) throw new Error(`child ${mode} failed: ${r.stderr}`);
      runs.push(JSON.parse(r.stdout));
    }
    return {
      ms: median(runs.map((r) => r.ms)),
      events: runs[0]?.events ?? 0,
      rss: median(runs.map((r) => r.maxRSS)) / 1024,
    };
  };
  const stream = child("stream");
  const whole = child("whole");
  console.log(
    `\n## transcript extraction, ${mb.toFixed(1)} MB (${i * 6} lines), each in its own process`,
  );
  console.log(
    `  streaming extractor (ours)  median ${ms(stream.ms)}  ${stream.events} events  peak RSS ${stream.rss.toFixed(0)} MiB (process total)`,
  );
  console.log(
    `  readFileSync+split+parse    median ${ms(whole.ms)}  peak RSS ${whole.rss.toFixed(0)} MiB  ratio ours/whole ${(stream.ms / whole.ms).toFixed(2)}x`,
  );
}

console.log(
  `\npeak RSS of this process: ${rssMiB()} MiB; 1-min load average ${loadavg()[0]?.toFixed(1)} on ${cpus().length} cores`,
);
rmSync(dir, { recursive: true, force: true });
