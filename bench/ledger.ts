/**
 * Ledger benchmark.
 *
 * 1. GetEditHistory: a filtered page (tool + file glob + time window, limit 20) over N recorded
 *    operations (default 100k, generated directly: index lines + record files). Cold = a fresh
 *    process per call (what a CLI call or a hook pays), timed inside it: without index.cache
 *    (index.tsv parsed), with a valid index.cache, and with 1000 lines appended after the cache.
 *    Warm = index kept by a long-lived process such as the MCP server.
 * 2. Recording one edit of a 1 MB file (`recordEdit`, what the PostToolUse hook calls), side by
 *    side with the alternative: a shadow-git commit of the same edit (`git add f && git commit`).
 *    Also `ApplyEditBlock` end to end (read, match, write the file, record).
 *
 *   npm run bench:ledger                 # 100k operations, 15 recording runs
 *   npm run bench:ledger -- 10000 5      # small (or OPS=10000 RUNS=5)
 */
import { execFileSync, spawnSync } from "node:child_process";
import {
  appendFileSync,
  closeSync,
  copyFileSync,
  fsyncSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  renameSync,
  rmSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { applyEditBlock, getEditHistory, recordEdit } from "../src/ledger/index.ts";

const REPO = dirname(dirname(fileURLToPath(import.meta.url)));
const OPS = Number(process.argv[2] ?? process.env.OPS ?? 100_000);
const RUNS = Number(process.argv[3] ?? process.env.RUNS ?? 15);
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? (s[m] ?? Number.NaN) : ((s[m - 1] ?? 0) + (s[m] ?? 0)) / 2;
};
const fmt = (n: number) => `${n.toFixed(2).padStart(8)} ms`;
/** CPU time of this process per measurement, beside wall time: the machine may be shared. */
const cpu: Record<string, number[]> = {};
const cpuMs = (c: NodeJS.CpuUsage) => (c.user + c.system) / 1000;
const note = (label: string, ms: number) => {
  const list = cpu[label] ?? [];
  list.push(ms);
  cpu[label] = list;
};
const time = (fn: () => unknown, label?: string) => {
  const c = process.cpuUsage();
  const t = performance.now();
  fn();
  const wall = performance.now() - t;
  if (label) note(label, cpuMs(process.cpuUsage(c)));
  return wall;
};
const timeAsync = async (fn: () => Promise<unknown>, label?: string) => {
  const c = process.cpuUsage();
  const t = performance.now();
  await fn();
  const wall = performance.now() - t;
  if (label) note(label, cpuMs(process.cpuUsage(c)));
  return wall;
};
const cpuOf = (label: string) => `(cpu ${median(cpu[label] ?? []).toFixed(2)} ms)`;

const TOOLS = [
  "ApplyEditBlock",
  "ApplyWholeFileEdit",
  "ApplyRangedEdit",
  "ApplyUnifiedDiff",
  "Edit",
  "Write",
];
const pad = (n: number, w = 2) => String(n).padStart(w, "0");

/**
 * Write operations [from, to) straight to disk in the ledger's format (fixture only: no fsync, no
 * lock), appending their index lines.
 */
function generateHistory(root: string, from: number, to: number): void {
  const history = join(root, ".timewarp", "history");
  const start = Date.parse("2026-01-01T00:00:00Z");
  const step = 60_000; // one operation a minute
  const lines: string[] = [];
  const made = new Set<string>();
  for (let i = from; i < to; i++) {
    const id = i.toString(36).padStart(10, "0");
    const ts = start + i * step;
    const tool = TOOLS[i % TOOLS.length] ?? "Edit";
    const file = `src/mod${i % 50}/file${i % 300}.ts`;
    lines.push(`${id}\t${ts}\t${tool}\t4\t${file}\n`);
    const d = new Date(ts);
    const dir = join(
      history,
      "snapshots",
      pad(d.getUTCFullYear(), 4),
      pad(d.getUTCMonth() + 1),
      pad(d.getUTCDate()),
    );
    if (!made.has(dir)) {
      mkdirSync(dir, { recursive: true });
      made.add(dir);
    }
    const diff = `diff --git a/${file} b/${file}\n--- a/${file}\n+++ b/${file}\n@@ -1,2 +1,2 @@\n-old ${i}\n-x\n+new ${i}\n+x\n`;
    const record = {
      schema_version: 1,
      id,
      timestamp: d.toISOString(),
      description: `edit ${i}`,
      tool,
      affectedFiles: [file],
      diff,
      reverseDiff: diff,
      context: { workspacePath: root, toolParams: {} },
      metadata: {
        filesSizeBytes: 100,
        linesChanged: 4,
        linesAdded: 2,
        linesRemoved: 2,
        executionTimeMs: 1,
      },
      files: [],
      directories: [],
    };
    const name = `${pad(d.getUTCHours())}${pad(d.getUTCMinutes())}${pad(d.getUTCSeconds())}_${id}.json`;
    writeFileSync(join(dir, name), JSON.stringify(record));
  }
  appendFileSync(join(history, "index.tsv"), lines.join(""));
}

/** One GetEditHistory call in a fresh process (what a CLI call or a hook pays), timed inside it. */
const CHILD = `
import { getEditHistory } from ${JSON.stringify(join(REPO, "src/ledger/index.ts"))};
const [root, params] = [process.argv[2], JSON.parse(process.argv[3])];
const c = process.cpuUsage();
const t = performance.now();
const page = getEditHistory({ root }, params);
const wall = performance.now() - t;
const u = process.cpuUsage(c);
process.stdout.write(JSON.stringify({ wall, cpu: (u.user + u.system) / 1000, total: page.pagination.total, rss: process.resourceUsage().maxRSS }));
`;
const TSX_LOADER = pathToFileURL(join(REPO, "node_modules/tsx/dist/esm/index.mjs")).href;
function coldChild(
  script: string,
  root: string,
  params: object,
): { wall: number; cpu: number; total: number; rss: number } {
  const out = execFileSync(
    process.execPath,
    ["--import", TSX_LOADER, script, root, JSON.stringify(params)],
    { encoding: "utf8" },
  );
  return JSON.parse(out);
}

async function main(): Promise<void> {
  const work = mkdtempSync(join(tmpdir(), "tw-bench-ledger-"));
  try {
    console.log(
      `ledger bench: ${OPS} operations, ${RUNS} runs per measurement; load average ${loadavg()
        .map((l) => l.toFixed(1))
        .join(" ")} on ${cpus().length} CPUs\n`,
    );
    // ── 1. history page ────────────────────────────────────────────────────
    const root = join(work, "history-ws");
    mkdirSync(root);
    const genMs = time(() => generateHistory(root, 0, OPS));
    console.log(`generated ${OPS} records + index in ${(genMs / 1000).toFixed(1)} s`);
    const { start, step } = { start: Date.parse("2026-01-01T00:00:00Z"), step: 60_000 };
    const params = {
      limit: 20,
      toolFilter: ["ApplyEditBlock", "Edit"],
      fileFilter: "src/mod1*/**/*.ts",
      since: new Date(start + Math.floor(OPS * 0.1) * step).toISOString(),
      until: new Date(start + Math.floor(OPS * 1.1) * step).toISOString(),
    };
    const ctx = { root };
    const index = join(root, ".timewarp/history/index.tsv");
    const cacheFile = join(root, ".timewarp/history/index.cache");
    const script = join(work, "cold-child.mts");
    writeFileSync(script, CHILD);
    // Cold = a fresh process per call, timed inside it (module loading excluded, JIT cold).
    const coldRuns = (label: string, before: () => void) => {
      const walls: number[] = [];
      let rss = 0;
      let total = 0;
      for (let r = 0; r < RUNS; r++) {
        before();
        const m = coldChild(script, root, params);
        walls.push(m.wall);
        note(label, m.cpu);
        rss = Math.max(rss, m.rss);
        total = m.total;
      }
      return { wall: median(walls), rss, total };
    };
    // Without the cache: what every call paid before it existed (the call also writes the cache).
    const noCache = coldRuns("cold-nocache", () => rmSync(cacheFile, { force: true }));
    const withCache = coldRuns("cold-cache", () => {});
    // Another writer appends 1000 operations after the cache was written: parsed on top of it.
    generateHistory(root, OPS, OPS + 1000);
    const appended = coldRuns("cold-appended", () => {});
    const cold: number[] = [];
    const warm: number[] = [];
    const nextPage: number[] = [];
    let total = 0;
    for (let r = 0; r < RUNS; r++) {
      // a new inode makes both caches miss: the index is parsed from disk again (in-process)
      copyFileSync(index, `${index}.copy`);
      renameSync(`${index}.copy`, index);
      cold.push(time(() => getEditHistory(ctx, params), "inproc"));
      let cursor: string | undefined;
      warm.push(
        time(() => {
          const page = getEditHistory(ctx, params);
          total = page.pagination.total;
          cursor = page.pagination.nextCursor;
        }, "warm"),
      );
      nextPage.push(time(() => getEditHistory(ctx, { ...params, ...(cursor ? { cursor } : {}) })));
    }
    const unfilteredWarm = median(
      Array.from({ length: RUNS }, () => time(() => getEditHistory(ctx, { limit: 20 }))),
    );
    const n = OPS + 1000;
    console.log(
      `\nGetEditHistory, filtered page (tool + glob + time window, ${total} of ${n} match), median:`,
    );
    console.log(
      `  cold, fresh process, no cache (parse index.tsv, write index.cache) ${fmt(noCache.wall)} ${cpuOf("cold-nocache")}`,
    );
    console.log(
      `  cold, fresh process, index.cache valid                             ${fmt(withCache.wall)} ${cpuOf("cold-cache")}   target <= 50 ms`,
    );
    console.log(
      `  cold, fresh process, index.cache + 1000 lines appended after it    ${fmt(appended.wall)} ${cpuOf("cold-appended")}`,
    );
    console.log(
      `  peak RSS of the fresh process: ${(Math.max(noCache.rss, withCache.rss, appended.rss) / 1024).toFixed(0)} MiB (tsx loader included)`,
    );
    console.log(
      `  in-process, index replaced (new inode: parse index.tsv)          ${fmt(median(cold))} ${cpuOf("inproc")}`,
    );
    console.log(`  warm (index cached in the process) ${fmt(median(warm))} ${cpuOf("warm")}`);
    console.log(`  warm, next page by cursor          ${fmt(median(nextPage))}`);
    console.log(`  warm, unfiltered first page        ${fmt(unfilteredWarm)}`);

    // ── 2. recording one edit of a 1 MB file ──────────────────────────────
    const ws = join(work, "record-ws");
    mkdirSync(ws);
    const lines: string[] = [];
    for (let i = 0; lines.join("").length < 1_048_576; i++)
      lines.push(`const value${i} = ${i * 7}; // some code on line ${i}\n`);
    const base = lines.join("");
    const file = join(ws, "big.ts");
    writeFileSync(file, base);
    const git = (...args: string[]) =>
      execFileSync("git", args, {
        cwd: ws,
        env: {
          ...process.env,
          GIT_DIR: join(work, "shadow.git"),
          GIT_WORK_TREE: ws,
          GIT_AUTHOR_NAME: "b",
          GIT_AUTHOR_EMAIL: "b@b",
          GIT_COMMITTER_NAME: "b",
          GIT_COMMITTER_EMAIL: "b@b",
        },
        stdio: ["ignore", "pipe", "pipe"],
      });
    git("init", "-q");
    git("add", "big.ts");
    git("commit", "-q", "-m", "base");
    const mid = lines.length >> 1;
    const variantOf = (r: number) => {
      const copy = [...lines];
      copy[mid] = `const changed = ${r}; // edited\n`;
      copy[mid + 100] = `const changedToo = ${r};\n`;
      return copy.join("");
    };
    const rec: number[] = [];
    const shadow: number[] = [];
    let previous = base;
    for (let r = 0; r < RUNS; r++) {
      const after = variantOf(r);
      writeFileSync(file, after);
      rec.push(
        await timeAsync(
          () => recordEdit({ root: ws, file: "big.ts", before: previous, after, tool: "Edit" }),
          "record",
        ),
      );
      shadow.push(
        time(() => {
          git("add", "big.ts");
          git("commit", "-q", "-m", `edit ${r}`);
        }),
      );
      previous = after;
    }
    const blockRuns: number[] = [];
    for (let r = 0; r < RUNS; r++) {
      const from = `const changed = ${RUNS - 1 + r}; // edited\n`;
      const to = `const changed = ${RUNS + r}; // edited\n`;
      blockRuns.push(
        await timeAsync(() =>
          applyEditBlock({ root: ws }, { path: "big.ts", searchBlock: from, replaceBlock: to }),
        ),
      );
    }
    // The floor under recordEdit: it fsyncs twice (the record's bytes, then the index append).
    const fsyncs: number[] = [];
    for (let r = 0; r < RUNS; r++) {
      const fd = openSync(join(ws, "fsync-probe"), "a");
      writeSync(fd, "x".repeat(100));
      fsyncs.push(time(() => fsyncSync(fd)));
      closeSync(fd);
    }
    const mr = median(rec);
    const mg = median(shadow);
    console.log(
      `\nrecording one edit of a ${(base.length / 1_048_576).toFixed(2)} MB file (2 lines changed), median:`,
    );
    console.log(
      `  recordEdit (diff + reverse diff + 2 objects + record + index, 2 fsyncs) ${fmt(mr)} ${cpuOf("record")}   target <= 10 ms`,
    );
    console.log(
      `  one fsync of a small append on this disk (recordEdit does 2)          ${fmt(median(fsyncs))}`,
    );
    console.log(
      `  shadow git: git add + git commit (2 processes)                     ${fmt(mg)}   ratio ${(mg / mr).toFixed(2)}x`,
    );
    console.log(
      `  ApplyEditBlock end to end (read, match, atomic write, record)      ${fmt(median(blockRuns))}`,
    );
    console.log(
      `\npeak RSS of this process: ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MiB`,
    );
    writeFileSync(file, variantOf(RUNS * 3));
    const gitArgs = ["--git-dir", join(work, "shadow.git"), "--work-tree", ws];
    const rss = (args: string[]) => {
      const r = spawnSync("/usr/bin/time", ["-v", "git", ...gitArgs, ...args], {
        encoding: "utf8",
        env: {
          ...process.env,
          GIT_AUTHOR_NAME: "b",
          GIT_AUTHOR_EMAIL: "b@b",
          GIT_COMMITTER_NAME: "b",
          GIT_COMMITTER_EMAIL: "b@b",
        },
      });
      return Number(
        /Maximum resident set size \(kbytes\): (\d+)/.exec(r.stderr)?.[1] ?? Number.NaN,
      );
    };
    const addKiB = rss(["add", "big.ts"]);
    const commitKiB = rss(["commit", "-q", "-m", "rss"]);
    console.log(
      `peak RSS of git add / git commit (children): ${(addKiB / 1024).toFixed(0)} / ${(commitKiB / 1024).toFixed(0)} MiB`,
    );
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

await main();
