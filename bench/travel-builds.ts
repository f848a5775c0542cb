/**
 * `npx tsx bench/travel-builds.ts --base DIR [--runs N]` — travel and return with 20 files
 * differing, through the watch daemon (`sh bin/timewarp`), for two builds side by side: the
 * checkout at DIR (built: `npm run build` there) and this one, each on its own copy of the real
 * 10k tree, alternating sample by sample (the order flips each round) with `git reset --hard` on
 * a git twin in the same rounds, so a shared machine's load weighs on all three alike. Prints
 * medians and means of the client's wall time, the command's own `duration_ms`, and the
 * daemon's CPU time per command (utime + stime of the whole daemon, its worker thread included,
 * from /proc, in clock ticks: read the means), beside git's wall and CPU (GNU time).
 */
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import {
  cpuMs,
  editableFiles,
  editFiles,
  type GitTwin,
  git,
  gitCommit,
  gitEnv,
  gitInit,
  REPO,
} from "./scale-common.ts";
import { pristineTree } from "./scale-trees.ts";

const flag = (name: string) => {
  const at = process.argv.indexOf(name);
  return at < 0 ? undefined : process.argv[at + 1];
};
const BASE = flag("--base");
if (BASE === undefined) throw new Error("usage: bench/travel-builds.ts --base DIR [--runs N]");
const RUNS = Number(flag("--runs") ?? 14);
const builds = { base: join(resolve(BASE), "bin"), branch: join(REPO, "bin") };
type Build = keyof typeof builds;
const BUILDS: Build[] = ["base", "branch"];

const scratch = mkdtempSync(join(tmpdir(), "tw-bench-travel-builds-"));
const ws: Record<Build, string> = { base: join(scratch, "base"), branch: join(scratch, "branch") };
const twin: GitTwin = { work: join(scratch, "git"), gitDir: join(scratch, "git.git") };
const node = (b: Build, ...args: string[]) =>
  spawnSync(process.execPath, [join(builds[b], "timewarp.cjs"), ...args], { cwd: ws[b] });
const daemonPid = (b: Build) =>
  (
    JSON.parse(readFileSync(join(ws[b], ".timewarp/watch/hooks/server.json"), "utf8")) as {
      pid: number;
    }
  ).pid;
/** One command through the launcher: wall, the daemon's CPU, stdout. */
function served(b: Build, ...args: string[]) {
  const pid = daemonPid(b);
  const c0 = cpuMs(pid);
  const t0 = performance.now();
  const r = spawnSync("sh", [join(builds[b], "timewarp"), ...args], {
    cwd: ws[b],
    encoding: "utf8",
  });
  const ms = performance.now() - t0;
  if (r.status !== 0) throw new Error(`${b}: timewarp ${args.join(" ")}: ${r.stderr}`);
  return { ms, cpu: cpuMs(pid) - c0, stdout: r.stdout };
}
function gitTimed(...args: string[]) {
  const t0 = performance.now();
  const r = spawnSync("/usr/bin/time", ["-f", "%U %S", "git", "-c", "gc.auto=0", ...args], {
    cwd: twin.work,
    encoding: "utf8",
    env: { ...process.env, ...gitEnv(twin) },
  });
  const ms = performance.now() - t0;
  const [u, s] = (r.stderr.trim().split("\n").pop() as string).split(" ").map(Number);
  return { ms, cpu: ((u ?? 0) + (s ?? 0)) * 1000 };
}

const rows = new Map<string, number[]>();
const add = (key: string, value: number) => rows.set(key, [...(rows.get(key) ?? []), value]);
try {
  for (const b of BUILDS) execFileSync("cp", ["-a", pristineTree("10k"), ws[b]]);
  execFileSync("cp", ["-a", pristineTree("10k"), twin.work]);
  const files = editableFiles(ws.branch);
  for (const b of BUILDS) {
    node(b, "init");
    node(b, "watch", "start");
    node(b, "snapshot", "create");
  }
  gitInit(twin);
  gitCommit(twin, "first");
  execFileSync("sync");
  for (const b of BUILDS) served(b, "status"); // the workers warm
  const load0 = execFileSync("uptime", { encoding: "utf8" }).trim();
  for (let r = 0; r < RUNS; r++) {
    for (const b of r % 2 === 0 ? BUILDS : [...BUILDS].reverse()) {
      const past = (
        JSON.parse(served(b, "snapshot", "create", "--json").stdout) as {
          snapshot_id: string;
        }
      ).snapshot_id;
      editFiles(ws[b], files, 20, r);
      const t = served(b, "travel", past, "--json");
      add(`travel ${b}: wall`, t.ms);
      add(
        `travel ${b}: own duration_ms`,
        (JSON.parse(t.stdout) as { duration_ms: number }).duration_ms,
      );
      add(`travel ${b}: daemon CPU`, t.cpu);
      const back = served(b, "return", "--json");
      add(`return ${b}: wall`, back.ms);
      add(`return ${b}: daemon CPU`, back.cpu);
    }
    gitCommit(twin, `past ${r}`);
    git(twin, "tag", "-f", "past");
    editFiles(twin.work, files, 20, r);
    gitCommit(twin, `backup ${r}`);
    git(twin, "branch", "-f", "backup");
    const g = gitTimed("reset", "-q", "--hard", "past");
    add("git reset --hard <past>: wall", g.ms);
    add("git reset --hard <past>: CPU", g.cpu);
    gitTimed("reset", "-q", "--hard", "backup");
  }
  console.log(`${RUNS} rounds, node ${process.version}; load before: ${load0}`);
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  for (const [key, xs] of [...rows].sort()) {
    console.log(
      `${key.padEnd(34)} median ${median(xs).toFixed(1).padStart(7)} ms  mean ${mean(xs).toFixed(1).padStart(7)} ms`,
    );
  }
  console.log(`load after: ${execFileSync("uptime", { encoding: "utf8" }).trim()}`);
} finally {
  for (const b of BUILDS) node(b, "watch", "stop");
  rmSync(scratch, { recursive: true, force: true });
}
