import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { systemClock, systemRandom } from "../src/core/index.ts";
import {
  createRunDir,
  DebugIndexSchema,
  defaultProtocolIo,
  planSlurm,
  runSkill,
  startToolSession,
} from "../src/runs/index.ts";
import { makeTempDir } from "./helpers/cli.ts";
import { assertJobInvariants, copyDesign, FAST, settings, writeSkill } from "./runs-helpers.ts";

/**
 * The scheduler path of a session without a real Slurm (that is `npm run test:slurm`): srun,
 * squeue, scontrol and scancel as small sh scripts sharing one state file, so that the logic —
 * queue wait, scheduler endings, cancel on every end — is checked wherever the suite runs.
 */
const FAKES: Record<string, string> = {
  srun: [
    'd="$FAKE_SLURM"',
    'while [ $# -gt 0 ]; do case "$1" in -*) echo "$1" >> "$d/srun.args"; shift;; *) break;; esac; done',
    'cat "$d/initial" > "$d/state.tmp" && mv "$d/state.tmp" "$d/state"',
    'while [ "$(cat "$d/state")" = PENDING ]; do sleep 0.05; done',
    '[ "$(cat "$d/state")" = RUNNING ] || { echo "srun: job cancelled" >&2; exit 1; }',
    'echo $$ > "$d/step.pid"',
    'exec "$@"',
  ].join("\n"),
  squeue: '[ -f "$FAKE_SLURM/state" ] && echo "7|$(cat "$FAKE_SLURM/state")|None|fakenode"',
  scontrol: [
    '[ -f "$FAKE_SLURM/state" ] || exit 1',
    'echo "JobId=7 JobName=x JobState=$(cat "$FAKE_SLURM/state") Reason=None ExitCode=0:0 NodeList=fakenode"',
  ].join("\n"),
  scancel: [
    'd="$FAKE_SLURM"',
    'echo "$@" >> "$d/scancel.log"',
    'case "$(cat "$d/state")" in',
    '  PENDING) echo CANCELLED > "$d/state.tmp"; mv "$d/state.tmp" "$d/state";;',
    '  RUNNING) echo CANCELLED > "$d/state.tmp"; mv "$d/state.tmp" "$d/state"; kill "$(cat "$d/step.pid")" 2>/dev/null;;',
    "esac",
  ].join("\n"),
  sacct: "exit 1",
};

let tmp: { dir: string; cleanup: () => void };
let cwd: string;
let fake: string;
let bin: string;
beforeEach(() => {
  tmp = makeTempDir("tw-runs-sched-");
  cwd = join(tmp.dir, "design");
  copyDesign(cwd);
  fake = join(tmp.dir, "fake-slurm");
  bin = join(tmp.dir, "bin");
  mkdirSync(fake);
  mkdirSync(bin);
  for (const [name, body] of Object.entries(FAKES)) {
    writeFileSync(join(bin, name), `#!/bin/sh\n${body}\n`);
    chmodSync(join(bin, name), 0o755);
  }
});
afterEach(() => tmp.cleanup());

function slurmJob(o: {
  skill: string;
  initial: "PENDING" | "RUNNING";
  queueWaitTimeoutMs?: number;
  onProgress?: (message: string) => void;
}) {
  writeFileSync(join(fake, "initial"), o.initial);
  const base = settings();
  return runSkill({
    cwd,
    skill: o.skill,
    design: "AAA",
    adapter: "slurm",
    slurm: { partition: "eda", args: ["--mem=1G"] },
    settings: settings({
      slurm: {
        ...base.slurm,
        tool: "tclsh",
        poll_ms: 50,
        ...Object.fromEntries(Object.keys(FAKES).map((n) => [n, join(bin, n)])),
      },
    }),
    timings: { ...FAST, queueWaitTimeoutMs: o.queueWaitTimeoutMs ?? 10_000 },
    env: { FAKE_SLURM: fake },
    ...(o.onProgress ? { onProgress: o.onProgress } : {}),
  }).then((result) => {
    const { manifest, summary } = assertJobInvariants(result.runDir);
    const events = readFileSync(join(result.runDir, "job_timeline.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map(
        (l) => JSON.parse(l) as { event: string; level: string; data?: Record<string, unknown> },
      );
    return { manifest, summary, events };
  });
}

const state = () => readFileSync(join(fake, "state"), "utf8").trim();
const scancels = () =>
  existsSync(join(fake, "scancel.log")) ? readFileSync(join(fake, "scancel.log"), "utf8") : "";

describe("a session through a scheduler (fake Slurm commands)", () => {
  it("PASSes, records the job in manifest and timeline, and cancels it at the end", async () => {
    const { summary, manifest, events } = await slurmJob({
      skill: "summary_health",
      initial: "RUNNING",
    });
    expect(summary.status).toBe("PASS");
    expect(manifest.runtime.scheduler).toMatchObject({
      kind: "slurm",
      job_id: "7",
      node_list: "fakenode",
      state: "CANCELLED",
      cancelled_by: "runtime",
    });
    expect(readFileSync(join(fake, "srun.args"), "utf8").split("\n")).toEqual(
      expect.arrayContaining([
        `--job-name=skillpilot-${manifest.job_id}`,
        "--partition=eda",
        "--mem=1G",
      ]),
    );
    const names = events.map((e) => e.event);
    expect(names.filter((n) => n === "SCHEDULER_SUBMIT")).toHaveLength(1);
    expect(names).toContain("SCHEDULER_STATE");
    expect(names.filter((n) => n === "SCHEDULER_END")).toHaveLength(1);
    expect(scancels().trim()).toBe("7");
  });

  it("fails QUEUE_WAIT_TIMEOUT while the job stays pending, and cancels it", async () => {
    const progress: string[] = [];
    const { summary, manifest } = await slurmJob({
      skill: "summary_health",
      initial: "PENDING",
      queueWaitTimeoutMs: 600,
      onProgress: (m) => progress.push(m),
    });
    // the user waiting on the queue sees where the job is
    expect(progress).toContainEqual(expect.stringMatching(/^Slurm job 7: pending/));
    expect(summary).toMatchObject({
      error_type: "SESSION_START_FAIL",
      detail_code: "QUEUE_WAIT_TIMEOUT",
    });
    expect(summary.message).toContain("job 7 stayed PENDING");
    expect(scancels().trim()).toBe("7");
    expect(state()).toBe("CANCELLED");
    expect(manifest.runtime.scheduler?.state).toBe("CANCELLED");
  });

  it("tells a scheduler cancel mid-request from a tool crash", async () => {
    writeSkill(cwd, "long", {
      script: "set f [open reports/started w]; close $f\nafter 600000\n",
    });
    const job = slurmJob({ skill: "long", initial: "RUNNING" });
    const runs = join(cwd, ".skillpilot", "runs");
    // the cancel must come mid-request: wait for the script to start, however long that takes
    const started = () =>
      existsSync(runs) && spawnSync("sh", ["-c", `ls ${runs}/*/reports/started`]).status === 0;
    await expect.poll(started, { timeout: 25_000, interval: 25 }).toBe(true);
    spawnSync(join(bin, "scancel"), ["7"], { env: { ...process.env, FAKE_SLURM: fake } });
    const { summary, manifest, events } = await job;
    expect(summary).toMatchObject({
      error_type: "INNOVUS_CRASH",
      detail_code: "SCHEDULER_CANCELLED",
    });
    expect(summary.message).toContain(
      "Slurm job 7 was cancelled (scancel) on node fakenode; not a tool crash",
    );
    expect(manifest.runtime.scheduler).toMatchObject({ ending: "SCHEDULER_CANCELLED" });
    expect(manifest.runtime.scheduler?.cancelled_by).toBeUndefined();
    expect(events.find((e) => e.event === "SCHEDULER_END")?.level).toBe("WARN");
    // the bundle's advice is the scheduler's, not "reproduce the crash"
    const index = DebugIndexSchema.parse(
      JSON.parse(
        readFileSync(join(manifest.runtime.run_dir, "debug_bundle", "index.json"), "utf8"),
      ),
    );
    expect(index.next_actions[0]).toContain("the scheduler cancelled the job");
    expect(index.next_actions.join("\n")).not.toContain("reproduce the crash");
  });

  it("cancels the job when the session ends HEARTBEAT_LOST (a frozen tool)", async () => {
    writeFileSync(join(fake, "initial"), "RUNNING");
    const base = settings();
    const slurm = {
      ...base.slurm,
      tool: "tclsh" as const,
      poll_ms: 50,
      ...Object.fromEntries(Object.keys(FAKES).map((n) => [n, join(bin, n)])),
    };
    const { jobId, paths } = createRunDir({ cwd, clock: systemClock, random: systemRandom });
    const session = await startToolSession({
      runDir: paths.runDir,
      jobId,
      adapter: "slurm",
      settings: base,
      timings: FAST,
      clock: systemClock,
      io: defaultProtocolIo,
      env: { FAKE_SLURM: fake },
      scheduler: planSlurm({ settings: slurm, jobId, queueWaitTimeoutMs: 10_000 }),
    });
    try {
      process.kill(session.ready.pid, "SIGSTOP");
      await new Promise((r) => setTimeout(r, FAST.heartbeatStaleMs * 3));
      writeFileSync(join(paths.scripts, "noop.tcl"), "set x 1\n");
      const ack = await session.request({ requestId: "r1", script: "scripts/noop.tcl" });
      expect(ack).toMatchObject({ status: "FAIL", error_type: "HEARTBEAT_LOST" });
      expect(scancels().trim()).toBe("7");
      expect(state()).toBe("CANCELLED");
    } finally {
      await session.stop();
    }
  });
});
