/**
 * The Slurm half of `npm run bench:skill`: request → ack through a session that runs as a Slurm
 * step, and the time from `skill run` (the whole CLI process) to the tool's ready.json under Slurm
 * against a bare `srun tclsh` that writes a ready file. Starts its own one-host cluster
 * (test/slurm/cluster.ts) and skips, saying why, when it cannot.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { systemClock, systemRandom } from "../src/core/index.ts";
import {
  createRunDir,
  defaultProtocolIo,
  planSlurm,
  type SessionTimings,
  type SkillPilotSettings,
  startToolSession,
} from "../src/runs/index.ts";
import { REPO_ROOT } from "../test/helpers/cli.ts";
import { slurmCmd, slurmUnavailable, startSlurmCluster } from "../test/slurm/cluster.ts";
import { percentile } from "./time-process.ts";

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const fmt = (n: number) => n.toFixed(1).padStart(8);

/** Wait for a path to exist (2 ms polls); the time it appeared. */
async function appeared(find: () => string | undefined, timeoutMs = 60_000): Promise<number> {
  const end = performance.now() + timeoutMs;
  while (performance.now() < end) {
    const p = find();
    if (p && existsSync(p)) return performance.now();
    await sleep(2);
  }
  throw new Error("timed out waiting for a ready file");
}

function exited(child: ChildProcess): Promise<number | null> {
  return new Promise((r) => child.once("exit", (code) => r(code)));
}

async function requestLatency(o: {
  root: string;
  settings: SkillPilotSettings;
  timings: SessionTimings;
  env: NodeJS.ProcessEnv;
  size: number;
}): Promise<number[]> {
  const cwd = join(o.root, "slurm-lat");
  mkdirSync(cwd);
  const { jobId, paths } = createRunDir({ cwd, clock: systemClock, random: systemRandom });
  const slurm = { ...o.settings.slurm, tool: "tclsh" as const, poll_ms: 500 };
  const session = await startToolSession({
    runDir: paths.runDir,
    jobId,
    adapter: "slurm",
    settings: o.settings,
    timings: o.timings,
    clock: systemClock,
    io: defaultProtocolIo,
    env: o.env,
    scheduler: planSlurm({ settings: slurm, jobId, queueWaitTimeoutMs: 30_000 }),
  });
  writeFileSync(join(paths.scripts, "noop.tcl"), "set ::x 1\n");
  const lat: number[] = [];
  for (let i = 0; i < o.size; i++) {
    const t = performance.now();
    const ack = await session.request({ requestId: `r${i}`, script: "scripts/noop.tcl" });
    lat.push(performance.now() - t);
    if (ack.status !== "PASS") throw new Error(`request ${i}: ${ack.error_type} ${ack.message}`);
    await sleep(3);
  }
  await session.stop();
  return lat;
}

/** `skill run --adapter slurm` as a whole CLI process: spawn → the tool's ready.json; its peak RSS. */
async function cliToReady(
  cwd: string,
  env: NodeJS.ProcessEnv,
): Promise<{ ms: number; rss: number; startSession: number }> {
  const runs = join(cwd, ".skillpilot", "runs");
  const before = new Set(existsSync(runs) ? readdirSync(runs) : []);
  const t0 = performance.now();
  const child = spawn(
    "/usr/bin/time",
    [
      "-f",
      "%M",
      process.execPath,
      join(REPO_ROOT, "bin", "timewarp.cjs"),
      "skill",
      "run",
      "trivial",
      "--design",
      "AAA",
      "--adapter",
      "slurm",
      "--json",
    ],
    { cwd, env, stdio: ["ignore", "ignore", "pipe"] },
  );
  let stderr = "";
  child.stderr?.on("data", (d: Buffer) => {
    stderr += d.toString();
  });
  const newRun = () =>
    existsSync(runs) ? readdirSync(runs).find((n) => !before.has(n)) : undefined;
  const ready = await appeared(() => {
    const id = newRun();
    return id ? join(runs, id, "session", "ready.json") : undefined;
  });
  const code = await exited(child);
  if (code !== 0) throw new Error(`skill run exited ${code}: ${stderr}`);
  return {
    ms: ready - t0,
    rss: Number(stderr.trim().split("\n").pop()),
    startSession: startSessionMs(join(runs, newRun() ?? "")),
  };
}

/** Wait until Slurm holds no job (the last one's CPU is free again), so each run starts alike. */
async function nodeFree(env: NodeJS.ProcessEnv): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (slurmCmd(env, ["squeue", "-h", "-o", "%i"]).trim() === "") return;
    await sleep(50);
  }
}

/** START_SESSION's length on a run's timeline: submit, queue, srun, tool start, ready.json. */
function startSessionMs(runDir: string): number {
  const events = readFileSync(join(runDir, "job_timeline.jsonl"), "utf8")
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l) as { event: string; state?: string; ts: string });
  const at = (event: string) =>
    Date.parse(events.find((e) => e.event === event && e.state === "START_SESSION")?.ts ?? "");
  return at("STATE_EXIT") - at("STATE_ENTER");
}

/** A bare `srun tclsh` whose script writes a ready file: what any wrapper pays anyway. */
async function bareSrun(dir: string, env: NodeJS.ProcessEnv, i: number): Promise<number> {
  const ready = join(dir, `bare-ready-${i}`);
  const script = join(dir, `bare-${i}.tcl`);
  writeFileSync(script, `set f [open {${ready}} w]; puts $f ok; close $f\n`);
  const t0 = performance.now();
  const child = spawn("srun", ["-N1", "-n1", "tclsh", script], { cwd: dir, env, stdio: "ignore" });
  const at = await appeared(() => ready);
  await exited(child);
  return at - t0;
}

export async function benchSlurm(o: {
  root: string;
  jobCwd: string;
  settings: SkillPilotSettings;
  timings: SessionTimings;
  size: number;
  jobs: number;
}): Promise<void> {
  console.log("\n── Slurm (a one-host slurmctld + slurmd started for the bench) ──");
  const why = slurmUnavailable();
  if (why) return void console.log(`skipped: ${why}`);
  let cluster: Awaited<ReturnType<typeof startSlurmCluster>>;
  try {
    cluster = await startSlurmCluster();
  } catch (error) {
    return void console.log(`skipped: the daemons did not start: ${String(error)}`);
  }
  try {
    const lat = await requestLatency({ ...o, env: cluster.env });
    console.log(
      `request → ack through a Slurm step: n ${lat.length}  p50 ${fmt(percentile(lat, 50))} ms  p95 ${fmt(percentile(lat, 95))} ms`,
    );
    mkdirSync(join(o.jobCwd, ".timewarp"), { recursive: true });
    writeFileSync(
      join(o.jobCwd, ".timewarp", "config.json"),
      JSON.stringify({ skillpilot: { slurm: { tool: "tclsh", poll_ms: 200 } } }),
    );
    const cli: number[] = [];
    const rss: number[] = [];
    const inJob: number[] = [];
    const bare: number[] = [];
    for (let i = 0; i < o.jobs; i++) {
      await nodeFree(cluster.env);
      const r = await cliToReady(o.jobCwd, { ...cluster.env, NO_COLOR: "1", TIMEWARP_WATCH: "0" });
      cli.push(r.ms);
      rss.push(r.rss);
      inJob.push(r.startSession);
      await nodeFree(cluster.env);
      bare.push(await bareSrun(o.root, cluster.env, i));
    }
    const c = percentile(cli, 50);
    const b = percentile(bare, 50);
    console.log(`\nstart to the tool's ready under Slurm, ${o.jobs} runs each (medians)`);
    console.log(
      `  skill run --adapter slurm (whole CLI process)  ${fmt(c)} ms  peak RSS ${percentile(rss, 50)} KiB`,
    );
    console.log(
      `  of which START_SESSION in the job (srun → ready) ${fmt(percentile(inJob, 50))} ms`,
    );
    console.log(`  bare srun tclsh writing a ready file           ${fmt(b)} ms`);
    console.log(`  ratio ${(c / b).toFixed(2)}x, difference ${(c - b).toFixed(1)} ms`);
  } finally {
    await cluster.stop();
  }
}
