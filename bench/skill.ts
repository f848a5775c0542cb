/**
 * SkillPilot benchmark: request-to-ack latency on a tclsh session (p50/p95) and the overhead of a
 * trivial job beyond the tool's own start, side by side with the naive alternative: both sides
 * polling on a fixed 100 ms timer (the seed names no interval; 100 ms is the usual choice). Then
 * the same through a real one-host Slurm (bench/skill-slurm.ts; skipped with a reason without it).
 *
 *   npm run bench:skill            # 200 requests, 10 jobs
 *   npm run bench:skill -- 50 3    # small: 50 requests, 3 jobs (or SIZE=50 JOBS=3)
 */
import { spawnSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseConfig, systemClock, systemRandom } from "../src/core/index.ts";
import {
  createRunDir,
  defaultProtocolIo,
  exampleDesignDir,
  runSkill,
  type SessionTimings,
  startToolSession,
} from "../src/runs/index.ts";
import { benchSlurm } from "./skill-slurm.ts";

const SIZE = Number(process.argv[2] ?? process.env.SIZE ?? 200);
const JOBS = Number(process.argv[3] ?? process.env.JOBS ?? 10);
const settings = parseConfig({}, "bench").skillpilot;

const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? Number.NaN;
};
const fmt = (n: number) => n.toFixed(1).padStart(7);

function toolPeakRssKiB(pid: number): number | undefined {
  try {
    const m = /VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}

interface Variant {
  label: string;
  timings: SessionTimings;
  requests: number;
}

const base: SessionTimings = {
  readyTimeoutMs: 10_000,
  heartbeatStaleMs: 30_000,
  requestTimeoutMs: 30_000,
  pollMs: settings.poll_ms,
  heartbeatIntervalMs: settings.heartbeat_interval_ms,
  ackPollMs: 50,
  watchAcks: true,
};

const variants: Variant[] = [
  {
    label: `timewarp (Tcl poll ${base.pollMs} ms, fs.watch on ack/)`,
    timings: base,
    requests: SIZE,
  },
  {
    label: `no fs.watch (Tcl ${base.pollMs} ms, ack poll 50 ms)`,
    timings: { ...base, watchAcks: false },
    requests: Math.max(10, Math.round(SIZE / 2)),
  },
  {
    label: "naive: both sides poll every 100 ms",
    timings: { ...base, pollMs: 100, ackPollMs: 100, watchAcks: false },
    requests: Math.max(10, Math.round(SIZE / 5)),
  },
];

const root = mkdtempSync(join(tmpdir(), "tw-bench-skill-"));
try {
  console.log(
    `SkillPilot request-to-ack latency on tclsh (${SIZE} requests for the default; fewer for the slow ones)\n`,
  );
  console.log(
    `${"variant".padEnd(48)} ${"n".padStart(4)} ${"p50 ms".padStart(7)} ${"p95 ms".padStart(7)} ${"tool RSS KiB".padStart(13)}`,
  );
  const p50s: number[] = [];
  for (const v of variants) {
    const cwd = join(root, `lat-${p50s.length}`);
    mkdirSync(cwd);
    const { jobId, paths } = createRunDir({ cwd, clock: systemClock, random: systemRandom });
    const session = await startToolSession({
      runDir: paths.runDir,
      jobId,
      adapter: "tclsh",
      settings,
      timings: v.timings,
      clock: systemClock,
      io: defaultProtocolIo,
    });
    writeFileSync(join(paths.scripts, "noop.tcl"), "set ::x 1\n");
    const lat: number[] = [];
    for (let i = 0; i < v.requests; i++) {
      const t = performance.now();
      const ack = await session.request({ requestId: `r${i}`, script: "scripts/noop.tcl" });
      lat.push(performance.now() - t);
      if (ack.status !== "PASS") throw new Error(`request ${i}: ${ack.error_type} ${ack.message}`);
      // requests do not arrive back to back in a real job; a short gap puts the Tcl loop back to idle polling
      await new Promise((r) => setTimeout(r, 3));
    }
    const rss = toolPeakRssKiB(session.ready.pid);
    await session.stop();
    const p50 = quantile(lat, 0.5);
    p50s.push(p50);
    console.log(
      `${v.label.padEnd(48)} ${String(v.requests).padStart(4)} ${fmt(p50)} ${fmt(quantile(lat, 0.95))} ${String(rss ?? "?").padStart(13)}`,
    );
  }
  console.log(`\nratio naive/timewarp p50: ${((p50s[2] ?? 0) / (p50s[0] ?? 1)).toFixed(1)}x`);

  // ── a trivial job, start to DONE, minus the tool's own start ────────────
  const jobCwd = join(root, "job");
  cpSync(exampleDesignDir(), jobCwd, { recursive: true });
  const skillDir = join(jobCwd, "subskills", "trivial");
  mkdirSync(join(skillDir, "templates"), { recursive: true });
  writeFileSync(
    join(skillDir, "templates", "run.tcl"),
    "set f [open reports/out.rpt w]; puts $f ok; close $f\n",
  );
  writeFileSync(
    join(skillDir, "contract.yaml"),
    'schema_version: "1.0"\nname: trivial\nversion: "1"\ntool: innovus\nscripts:\n  - name: run\n    entry: templates/run.tcl\noutputs:\n  required:\n    - path: reports/out.rpt\ndebug_hints: [a, b]\n',
  );
  const bare: number[] = [];
  for (let i = 0; i < JOBS; i++) {
    const t = performance.now();
    spawnSync(settings.tclsh, [], { input: "exit\n" });
    bare.push(performance.now() - t);
  }
  const rows: { label: string; timings: SessionTimings }[] = [
    { label: "timewarp", timings: base },
    { label: "naive 100 ms polling", timings: variants[2]?.timings ?? base },
  ];
  console.log(
    `\nTrivial job (restore + one script + validate + summary), ${JOBS} runs each; bare tclsh start+exit p50 ${quantile(bare, 0.5).toFixed(1)} ms\n`,
  );
  console.log(
    `${"variant".padEnd(24)} ${"job p50 ms".padStart(11)} ${"tool start p50".padStart(15)} ${"overhead p50".padStart(13)} ${"overhead p95".padStart(13)}`,
  );
  for (const row of rows) {
    const total: number[] = [];
    const start: number[] = [];
    const over: number[] = [];
    for (let i = 0; i < JOBS; i++) {
      const t = performance.now();
      const { summary, runDir } = await runSkill({
        cwd: jobCwd,
        skill: "trivial",
        design: "AAA",
        settings,
        timings: row.timings,
      });
      const ms = performance.now() - t;
      if (summary.status !== "PASS") throw new Error(`${summary.error_type}: ${summary.message}`);
      // the tool's own start: START_SESSION's duration on the timeline (spawn until ready.json)
      const events = readFileSync(join(runDir, "job_timeline.jsonl"), "utf8")
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l) as { event: string; state?: string; ts: string });
      const enter = events.find((e) => e.event === "STATE_ENTER" && e.state === "START_SESSION");
      const exit = events.find((e) => e.event === "STATE_EXIT" && e.state === "START_SESSION");
      const toolStart = enter && exit ? Date.parse(exit.ts) - Date.parse(enter.ts) : 0;
      total.push(ms);
      start.push(toolStart);
      over.push(ms - toolStart);
    }
    console.log(
      `${row.label.padEnd(24)} ${fmt(quantile(total, 0.5)).padStart(11)} ${fmt(quantile(start, 0.5)).padStart(15)} ${fmt(quantile(over, 0.5)).padStart(13)} ${fmt(quantile(over, 0.95)).padStart(13)}`,
    );
  }
  await benchSlurm({
    root,
    jobCwd,
    settings,
    timings: base,
    size: Math.min(SIZE, 100),
    jobs: JOBS,
  });
  console.log(`\npeak RSS of this node process: ${process.resourceUsage().maxRSS} KiB`);
} finally {
  rmSync(root, { recursive: true, force: true });
}
