/**
 * `npm run bench:travel [-- SIZES]` — travel and return on workspaces of 1k, 10k and 50k files
 * with 20 files differing between the present and the snapshot, side by side in one run with:
 *
 * - shadow git: a hidden repository (`git --git-dir=… --work-tree=…`); travel = `add -A` +
 *   `commit` (the backup) + `reset --hard <snapshot>`; return = `reset --hard <backup>`;
 * - the seed's copy layout: travel = `cp -a` of the present into present_backup/ + replace the
 *   workspace with `cp -a` of snapshots/<id>/workspace/; return = the same from the backup.
 *
 * Prints medians (ms), our time over each alternative's, and peak RSS (ours: this process;
 * theirs: `/usr/bin/time` of the child commands). Sizes: argv[2] or BENCH_SIZES ("1000,10000");
 * BENCH_DIFFS (default 20) files differ; BENCH_REPS (default 5) rounds; BENCH_DIR the scratch dir.
 * Never gates anything: it reports.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { returnToPresent, startSession, travel } from "../src/timemachine/index.ts";

const sizes = (process.argv[2] ?? process.env.BENCH_SIZES ?? "1000,10000,50000")
  .split(",")
  .map(Number);
const diffs = Number(process.env.BENCH_DIFFS ?? 20);
const reps = Number(process.env.BENCH_REPS ?? 5);
const scratch = mkdtempSync(join(process.env.BENCH_DIR ?? tmpdir(), "tw-bench-travel-"));
const hasTime = existsSync("/usr/bin/time");

function fileContent(i: number, version: number): string {
  return `// file ${i} v${version}\n${`export const value${i} = ${i * 31 + version};\n`.repeat(1 + (i % 40))}`;
}

function generate(root: string, n: number): void {
  for (let i = 0; i < n; i++) {
    const dir = join(root, `pkg${Math.floor(i / 1000)}`, `mod${Math.floor(i / 100) % 10}`);
    if (i % 100 === 0) mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, `file${i}.ts`), fileContent(i, 0));
  }
}

function changedIndex(k: number, n: number): number {
  return Math.floor((k * n) / diffs);
}

/** The present = the snapshot with `diffs` files rewritten (spread over the tree). */
function mutate(root: string, n: number, version: number): void {
  for (let k = 0; k < diffs; k++) {
    const i = changedIndex(k, n);
    writeFileSync(
      join(root, `pkg${Math.floor(i / 1000)}`, `mod${Math.floor(i / 100) % 10}`, `file${i}.ts`),
      fileContent(i, version),
    );
  }
}

function run(
  cmd: string,
  args: string[],
  cwd: string,
  env: NodeJS.ProcessEnv = {},
): { ms: number; rssKiB: number } {
  const t0 = performance.now();
  const r = hasTime
    ? spawnSync("/usr/bin/time", ["-f", "%M", cmd, ...args], {
        cwd,
        encoding: "utf8",
        env: { ...process.env, ...env },
      })
    : spawnSync(cmd, args, { cwd, encoding: "utf8", env: { ...process.env, ...env } });
  const ms = performance.now() - t0;
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(" ")} failed: ${r.stderr}`);
  const rss = hasTime ? Number(r.stderr.trim().split("\n").pop()) : 0;
  return { ms, rssKiB: Number.isFinite(rss) ? rss : 0 };
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? (s[m] ?? 0) : ((s[m - 1] ?? 0) + (s[m] ?? 0)) / 2;
}

interface Row {
  files: number;
  tm: { travel: number; ret: number };
  git: { travel: number; ret: number; rss: number };
  cp: { travel: number; ret: number; rss: number };
}

async function benchSize(n: number): Promise<Row> {
  const base = join(scratch, String(n));
  // ── timewarp ──
  const tm = join(base, "tm");
  mkdirSync(tm, { recursive: true });
  generate(tm, n);
  const { snapshot_id } = await startSession({ root: tm, sessionId: "bench" });
  mutate(tm, n, 1);
  const tmTravel: number[] = [];
  const tmReturn: number[] = [];
  for (let r = 0; r < reps; r++) {
    let t0 = performance.now();
    travel({ root: tm, snapshotId: snapshot_id });
    tmTravel.push(performance.now() - t0);
    t0 = performance.now();
    returnToPresent({ root: tm });
    tmReturn.push(performance.now() - t0);
  }

  // ── shadow git ──
  const gw = join(base, "git");
  const gd = join(base, "git-hidden");
  mkdirSync(gw, { recursive: true });
  generate(gw, n);
  const genv = {
    GIT_DIR: gd,
    GIT_WORK_TREE: gw,
    GIT_AUTHOR_NAME: "b",
    GIT_AUTHOR_EMAIL: "b@b",
    GIT_COMMITTER_NAME: "b",
    GIT_COMMITTER_EMAIL: "b@b",
  };
  run("git", ["init", "-q"], gw, genv);
  run("git", ["add", "-A"], gw, genv);
  run("git", ["commit", "-q", "-m", "snapshot"], gw, genv);
  run("git", ["tag", "snapshot"], gw, genv);
  mutate(gw, n, 1);
  const gitTravel: number[] = [];
  const gitReturn: number[] = [];
  let gitRss = 0;
  for (let r = 0; r < reps; r++) {
    const a = run("git", ["add", "-A"], gw, genv);
    const b = run("git", ["commit", "-q", "--allow-empty", "-m", `backup ${r}`], gw, genv);
    const c = run("git", ["branch", "-f", "backup"], gw, genv);
    const d = run("git", ["reset", "-q", "--hard", "snapshot"], gw, genv);
    gitTravel.push(a.ms + b.ms + c.ms + d.ms);
    const e = run("git", ["reset", "-q", "--hard", "backup"], gw, genv);
    gitReturn.push(e.ms);
    gitRss = Math.max(gitRss, a.rssKiB, b.rssKiB, d.rssKiB, e.rssKiB);
  }

  // ── the seed's copy layout ──
  const cw = join(base, "cp");
  const snapCopy = join(base, "cp-snapshot", "workspace");
  const backup = join(base, "cp-backup");
  mkdirSync(cw, { recursive: true });
  generate(cw, n);
  mkdirSync(snapCopy, { recursive: true });
  run("cp", ["-a", `${cw}/.`, snapCopy], base);
  mutate(cw, n, 1);
  const cpTravel: number[] = [];
  const cpReturn: number[] = [];
  let cpRss = 0;
  for (let r = 0; r < reps; r++) {
    rmSync(backup, { recursive: true, force: true });
    let t0 = performance.now();
    const a = run("cp", ["-a", `${cw}/.`, backup], base);
    rmSync(cw, { recursive: true, force: true });
    const b = run("cp", ["-a", `${snapCopy}/.`, cw], base);
    cpTravel.push(performance.now() - t0);
    t0 = performance.now();
    rmSync(cw, { recursive: true, force: true });
    const c = run("cp", ["-a", `${backup}/.`, cw], base);
    cpReturn.push(performance.now() - t0);
    cpRss = Math.max(cpRss, a.rssKiB, b.rssKiB, c.rssKiB);
  }
  rmSync(base, { recursive: true, force: true });
  return {
    files: n,
    tm: { travel: median(tmTravel), ret: median(tmReturn) },
    git: { travel: median(gitTravel), ret: median(gitReturn), rss: gitRss },
    cp: { travel: median(cpTravel), ret: median(cpReturn), rss: cpRss },
  };
}

const rows: Row[] = [];
try {
  for (const n of sizes) {
    process.stderr.write(`workspace of ${n} files, ${diffs} differing, ${reps} rounds…\n`);
    rows.push(await benchSize(n));
  }
} finally {
  rmSync(scratch, { recursive: true, force: true });
}

const f = (ms: number) => ms.toFixed(1).padStart(8);
const x = (a: number, b: number) => `${(a / b).toFixed(2)}x`.padStart(7);
console.log(`\ntravel/return medians (ms), ${diffs} files differing, ${reps} rounds each`);
console.log(
  "files  | timewarp travel  return | shadow git travel  return | cp -a travel  return | ratio vs git (travel, return) | ratio vs cp (travel, return)",
);
for (const r of rows) {
  console.log(
    `${String(r.files).padStart(6)} | ${f(r.tm.travel)} ${f(r.tm.ret)} | ${f(r.git.travel)}   ${f(r.git.ret)} | ${f(r.cp.travel)} ${f(r.cp.ret)} |` +
      ` ${x(r.tm.travel, r.git.travel)} ${x(r.tm.ret, r.git.ret)}                | ${x(r.tm.travel, r.cp.travel)} ${x(r.tm.ret, r.cp.ret)}`,
  );
}
console.log(
  `\npeak RSS: timewarp (this process) ${Math.round(process.resourceUsage().maxRSS / 1024)} MiB; ` +
    `git ${Math.round(Math.max(...rows.map((r) => r.git.rss)) / 1024)} MiB; cp ${Math.round(Math.max(...rows.map((r) => r.cp.rss)) / 1024)} MiB (children, /usr/bin/time)`,
);
