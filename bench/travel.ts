/**
 * `npm run bench:travel [-- SIZES]` — travel and return on workspaces of 1k, 10k and 50k files
 * with 20 files differing between the present and the snapshot, side by side in one run with:
 *
 * timewarp runs twice: walking the tree, and on a twin workspace with its watch daemon running
 * (`timewarp watch`, started from the built bin), so its scans visit only what changed.
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
): { ms: number; cpu: number; rssKiB: number } {
  const t0 = performance.now();
  const r = hasTime
    ? spawnSync("/usr/bin/time", ["-f", "%M %U %S", cmd, ...args], {
        cwd,
        encoding: "utf8",
        env: { ...process.env, ...env },
      })
    : spawnSync(cmd, args, { cwd, encoding: "utf8", env: { ...process.env, ...env } });
  const ms = performance.now() - t0;
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(" ")} failed: ${r.stderr}`);
  const [rss, user, sys] = hasTime
    ? (r.stderr.trim().split("\n").pop() ?? "").split(" ").map(Number)
    : [0, 0, 0];
  return {
    ms,
    cpu: ((user ?? 0) + (sys ?? 0)) * 1000,
    rssKiB: Number.isFinite(rss) ? (rss ?? 0) : 0,
  };
}

const REPO = join(import.meta.dirname, "..");

/** `timewarp watch start|stop` through the built bin (built first when missing). */
function watch(verb: "start" | "stop", root: string): void {
  const bin = join(REPO, "bin", "timewarp.cjs");
  if (!existsSync(join(REPO, "dist", "bin", "timewarp.cjs"))) {
    spawnSync("npm", ["run", "build"], { cwd: REPO, stdio: "ignore" });
  }
  const r = spawnSync(process.execPath, [bin, "watch", verb, "-C", root], {
    encoding: "utf8",
    env: { ...process.env, TIMEWARP_WATCH: "" },
  });
  if (r.status !== 0) throw new Error(`watch ${verb} failed: ${r.stdout}${r.stderr}`);
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? (s[m] ?? 0) : ((s[m - 1] ?? 0) + (s[m] ?? 0)) / 2;
}

interface Stat {
  travel: number;
  ret: number;
  travelCpu: number;
  retCpu: number;
  rss: number;
}

interface Row {
  files: number;
  tm: Stat;
  /** timewarp with its watch daemon running (scans visit only what changed). */
  tmw: Stat;
  git: Stat;
  cp: Stat;
}

function cpuMs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

/** Measure `reps` rounds of travel then return; each side reports wall ms and CPU ms. */
function rounds(
  travelOnce: (r: number) => { ms: number; cpu: number; rss: number },
  returnOnce: (r: number) => { ms: number; cpu: number; rss: number },
): Stat {
  const t: number[] = [];
  const tc: number[] = [];
  const b: number[] = [];
  const bc: number[] = [];
  let rss = 0;
  for (let r = 0; r < reps; r++) {
    const a = travelOnce(r);
    t.push(a.ms);
    tc.push(a.cpu);
    const c = returnOnce(r);
    b.push(c.ms);
    bc.push(c.cpu);
    rss = Math.max(rss, a.rss, c.rss);
  }
  return { travel: median(t), ret: median(b), travelCpu: median(tc), retCpu: median(bc), rss };
}

function inProcess(fn: () => void): { ms: number; cpu: number; rss: number } {
  const c0 = cpuMs();
  const t0 = performance.now();
  fn();
  return { ms: performance.now() - t0, cpu: cpuMs() - c0, rss: process.resourceUsage().maxRSS };
}

function sum(parts: { ms: number; cpu: number; rssKiB: number }[]): {
  ms: number;
  cpu: number;
  rss: number;
} {
  return {
    ms: parts.reduce((a, p) => a + p.ms, 0),
    cpu: parts.reduce((a, p) => a + p.cpu, 0),
    rss: Math.max(...parts.map((p) => p.rssKiB)),
  };
}

async function benchSize(n: number): Promise<Row> {
  const base = join(scratch, String(n));
  // ── timewarp ──
  const tm = join(base, "tm");
  mkdirSync(tm, { recursive: true });
  generate(tm, n);
  const { snapshot_id } = await startSession({ root: tm, sessionId: "bench" });
  mutate(tm, n, 1);
  const tmStat = rounds(
    () => inProcess(() => travel({ root: tm, snapshotId: snapshot_id })),
    () => inProcess(() => returnToPresent({ root: tm })),
  );

  // ── timewarp with its watch daemon ──
  const tmw = join(base, "tmw");
  mkdirSync(tmw, { recursive: true });
  generate(tmw, n);
  const watched = await startSession({ root: tmw, sessionId: "bench" });
  watch("start", tmw);
  mutate(tmw, n, 1);
  // the daemon's first answer is "unknown" (one walk); from then on it answers
  inProcess(() => travel({ root: tmw, snapshotId: watched.snapshot_id }));
  inProcess(() => returnToPresent({ root: tmw }));
  const tmwStat = rounds(
    () => inProcess(() => travel({ root: tmw, snapshotId: watched.snapshot_id })),
    () => inProcess(() => returnToPresent({ root: tmw })),
  );
  watch("stop", tmw);

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
  const gitStat = rounds(
    (r) =>
      sum([
        run("git", ["add", "-A"], gw, genv),
        run("git", ["commit", "-q", "--allow-empty", "-m", `backup ${r}`], gw, genv),
        run("git", ["branch", "-f", "backup"], gw, genv),
        run("git", ["reset", "-q", "--hard", "snapshot"], gw, genv),
      ]),
    () => sum([run("git", ["reset", "-q", "--hard", "backup"], gw, genv)]),
  );

  // ── the seed's copy layout ──
  const cw = join(base, "cp");
  const snapCopy = join(base, "cp-snapshot", "workspace");
  const backup = join(base, "cp-backup");
  mkdirSync(cw, { recursive: true });
  generate(cw, n);
  mkdirSync(snapCopy, { recursive: true });
  run("cp", ["-a", `${cw}/.`, snapCopy], base);
  mutate(cw, n, 1);
  const cpStat = rounds(
    () => {
      rmSync(backup, { recursive: true, force: true });
      const a = run("cp", ["-a", `${cw}/.`, backup], base);
      const rm = inProcess(() => rmSync(cw, { recursive: true, force: true }));
      const b = run("cp", ["-a", `${snapCopy}/.`, cw], base);
      const s = sum([a, b]);
      return { ms: s.ms + rm.ms, cpu: s.cpu + rm.cpu, rss: s.rss };
    },
    () => {
      const rm = inProcess(() => rmSync(cw, { recursive: true, force: true }));
      const c = run("cp", ["-a", `${backup}/.`, cw], base);
      return { ms: c.ms + rm.ms, cpu: c.cpu + rm.cpu, rss: c.rssKiB };
    },
  );
  rmSync(base, { recursive: true, force: true });
  return { files: n, tm: tmStat, tmw: tmwStat, git: gitStat, cp: cpStat };
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

const f = (ms: number) => ms.toFixed(1).padStart(7);
const x = (a: number, b: number) => `${(a / b).toFixed(2)}x`.padStart(6);
console.log(`\nmedians over ${reps} rounds, ${diffs} files differing; wall ms (CPU ms = user+sys)`);
for (const [label, pick, pickCpu] of [
  ["travel", (s: Stat) => s.travel, (s: Stat) => s.travelCpu],
  ["return", (s: Stat) => s.ret, (s: Stat) => s.retCpu],
] as const) {
  console.log(`\n${label}`);
  console.log(
    "  files | tw walk (cpu)     | tw watch (cpu)    | shadow git (cpu)  |    cp -a (cpu)    | walk/git | watch/git | watch/cp",
  );
  for (const r of rows) {
    console.log(
      `${String(r.files).padStart(7)} | ${f(pick(r.tm))} (${f(pickCpu(r.tm))}) | ${f(pick(r.tmw))} (${f(pickCpu(r.tmw))}) | ${f(pick(r.git))} (${f(pickCpu(r.git))}) | ${f(pick(r.cp))} (${f(pickCpu(r.cp))}) |` +
        `   ${x(pick(r.tm), pick(r.git))} |    ${x(pick(r.tmw), pick(r.git))} |   ${x(pick(r.tmw), pick(r.cp))}`,
    );
  }
}
const mib = (k: number) => Math.round(k / 1024);
console.log(
  `\npeak RSS: timewarp (this process) ${mib(process.resourceUsage().maxRSS)} MiB; ` +
    `git ${mib(Math.max(...rows.map((r) => r.git.rss)))} MiB; cp ${mib(Math.max(...rows.map((r) => r.cp.rss)))} MiB (children, /usr/bin/time)`,
);
