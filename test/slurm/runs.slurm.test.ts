import { type ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { makeTempDir } from "../helpers/cli.ts";
import { assertJobInvariants, copyDesign, FAST, writeSkill } from "../runs-helpers.ts";
import { slurmCmd } from "./cluster.ts";
import {
  cluster,
  heldJobs,
  runningJobId,
  runSlurmJob,
  slurmEnv,
  slurmSettings,
  squeueState,
  startJobInChild,
  waitFor,
  writeSlurmConfig,
} from "./jobs.ts";

let tmp: { dir: string; cleanup: () => void };
let cwd: string;
beforeEach(() => {
  tmp = makeTempDir("tw-slurm-job-");
  cwd = join(tmp.dir, "design");
  copyDesign(cwd);
});
afterEach(() => tmp.cleanup());

/** A script that says it started, then waits (a long Innovus command). */
const LONG = "set f [open reports/started w]; close $f\nafter 600000\n";

describe.skipIf(cluster.skip !== undefined)("SkillPilot through a real Slurm", () => {
  it("runs a job to PASS as a Slurm step, with the scheduler facts in manifest and timeline", async () => {
    const { summary, manifest, events } = await runSlurmJob({ cwd, skill: "summary_health" });
    expect(summary).toMatchObject({ status: "PASS", error_type: "OK" });
    expect(manifest.runtime.adapter).toBe("slurm");
    const facts = manifest.runtime.scheduler;
    expect(facts).toMatchObject({
      kind: "slurm",
      job_name: `skillpilot-${manifest.job_id}`,
      node_list: cluster.node,
      cancelled_by: "runtime",
    });
    expect(facts?.job_id).toMatch(/^\d+$/);
    expect(facts?.ending).toBeUndefined();
    expect(manifest.runtime.session?.command?.slice(0, 4)).toEqual([
      "srun",
      `--job-name=skillpilot-${manifest.job_id}`,
      "-N1",
      "-n1",
    ]);
    const kinds = events.map((e) => e.event);
    expect(kinds).toContain("SCHEDULER_SUBMIT");
    expect(kinds).toContain("SCHEDULER_END");
    expect(events.some((e) => e.event === "SCHEDULER_STATE" && e.data?.state === "RUNNING")).toBe(
      true,
    );
    expect(kinds.indexOf("SCHEDULER_SUBMIT")).toBeLessThan(kinds.indexOf("SCHEDULER_END"));
    expect(heldJobs()).toBe("");
  });

  it("takes --partition, --time and repeated --slurm-arg on the CLI", async () => {
    writeSlurmConfig(cwd);
    const child = startJobInChild({
      cwd,
      skill: "summary_health",
      args: [
        "--partition",
        "debug",
        "--time",
        "5",
        "--slurm-arg=--mem=100",
        "--slurm-arg=--comment=tw",
      ],
    });
    let stdout = "";
    child.stdout?.on("data", (d: Buffer) => {
      stdout += d.toString();
    });
    const code = await new Promise((r) => child.once("exit", r));
    expect(code).toBe(0);
    const summary = JSON.parse(stdout) as { status: string; evidence: { run_dir: string } };
    expect(summary.status).toBe("PASS");
    const { manifest } = assertJobInvariants(summary.evidence.run_dir);
    expect(manifest.runtime.session?.command).toEqual(
      expect.arrayContaining(["--partition=debug", "--time=5", "--mem=100", "--comment=tw"]),
    );
    expect(manifest.runtime.scheduler?.node_list).toBe(cluster.node);
    expect(heldJobs()).toBe("");
  });

  it("fails SESSION_START_FAIL with srun's own words for a partition that does not exist", async () => {
    const { summary } = await runSlurmJob({
      cwd,
      skill: "summary_health",
      slurm: { partition: "no_such_partition" },
    });
    expect(summary).toMatchObject({
      error_type: "SESSION_START_FAIL",
      detail_code: "EXITED_BEFORE_READY",
    });
    expect(summary.message).toMatch(/invalid partition/i);
    expect(heldJobs()).toBe("");
  });

  it("ends a hung script QUEUE_TIMEOUT and releases the allocation (scancel)", async () => {
    writeSkill(cwd, "hang", { script: "while 1 {}\n" });
    const { summary, manifest } = await runSlurmJob({
      cwd,
      skill: "hang",
      timings: { ...FAST, readyTimeoutMs: 20_000, requestTimeoutMs: 3_000 },
    });
    expect(summary.error_type).toBe("QUEUE_TIMEOUT");
    expect(manifest.runtime.scheduler?.cancelled_by).toBe("runtime");
    const jobId = manifest.runtime.scheduler?.job_id ?? "";
    expect(squeueState(jobId)).toBe("CANCELLED");
    expect(heldJobs()).toBe("");
  });

  it("reports an scancel mid-job as SCHEDULER_CANCELLED, not a tool crash", async () => {
    writeSkill(cwd, "long", { script: LONG });
    const job = runSlurmJob({
      cwd,
      skill: "long",
      timings: { ...FAST, readyTimeoutMs: 20_000, requestTimeoutMs: 120_000 },
    });
    const jobId = await waitFor("the script to start", () => runningJobId(cwd));
    slurmCmd(slurmEnv, ["scancel", jobId]);
    const { summary, manifest, events } = await job;
    expect(summary).toMatchObject({
      error_type: "INNOVUS_CRASH",
      detail_code: "SCHEDULER_CANCELLED",
    });
    expect(summary.message).toMatch(
      new RegExp(
        `Slurm job ${jobId} was cancelled \\(scancel\\) on node ${cluster.node}.*not a tool crash`,
      ),
    );
    expect(manifest.runtime.scheduler).toMatchObject({
      state: "CANCELLED",
      ending: "SCHEDULER_CANCELLED",
    });
    expect(manifest.runtime.scheduler?.cancelled_by).toBeUndefined();
    const end = events.find((e) => e.event === "SCHEDULER_END");
    expect(end).toMatchObject({ level: "WARN", data: { ending: "SCHEDULER_CANCELLED" } });
    expect(heldJobs()).toBe("");
  });

  it("fails QUEUE_WAIT_TIMEOUT while the only CPU is taken, and cancels the pending job", async () => {
    const blocker: ChildProcess = spawn("srun", ["--job-name=blocker", "sleep", "300"], {
      env: slurmEnv,
      stdio: "ignore",
    });
    try {
      const blockerId = await waitFor("the blocker to run", () => {
        const out = slurmCmd(slurmEnv, [
          "squeue",
          "-h",
          "--name=blocker",
          "-t",
          "RUNNING",
          "-o",
          "%i",
        ]).trim();
        return out || undefined;
      });
      const { summary, manifest } = await runSlurmJob({
        cwd,
        skill: "summary_health",
        timings: { ...FAST, readyTimeoutMs: 2_000, queueWaitTimeoutMs: 3_000 },
      });
      expect(summary).toMatchObject({
        error_type: "SESSION_START_FAIL",
        detail_code: "QUEUE_WAIT_TIMEOUT",
      });
      expect(summary.message).toMatch(/stayed PENDING \(reason (Resources|Priority)\)/);
      const ours = manifest.runtime.scheduler?.job_id ?? "";
      expect(ours).toMatch(/^\d+$/);
      expect(squeueState(ours)).toBe("CANCELLED");
      expect(heldJobs()).toBe(`${blockerId} blocker RUNNING`);
    } finally {
      slurmCmd(slurmEnv, ["scancel", "--name=blocker"]);
      await new Promise((r) => blocker.once("exit", r));
    }
    await waitFor("the blocker to go", () => (heldJobs() === "" ? true : undefined));
  });

  it("fails SESSION_START_FAIL / SCHEDULER_CANCELLED when the pending job is cancelled", async () => {
    const blocker: ChildProcess = spawn("srun", ["--job-name=blocker", "sleep", "300"], {
      env: slurmEnv,
      stdio: "ignore",
    });
    try {
      await waitFor("the blocker to run", () => {
        const out = slurmCmd(slurmEnv, [
          "squeue",
          "-h",
          "--name=blocker",
          "-t",
          "RUNNING",
          "-o",
          "%i",
        ]);
        return out.trim() || undefined;
      });
      const job = runSlurmJob({ cwd, skill: "summary_health" });
      const ours = await waitFor("our job to pend", () => {
        const out = slurmCmd(slurmEnv, ["squeue", "-h", "-t", "PENDING", "-o", "%i %j"]).trim();
        return out.includes("skillpilot-") ? out.split(" ")[0] : undefined;
      });
      slurmCmd(slurmEnv, ["scancel", ours ?? ""]);
      const { summary } = await job;
      expect(summary).toMatchObject({
        error_type: "SESSION_START_FAIL",
        detail_code: "SCHEDULER_CANCELLED",
      });
      expect(summary.message).toContain(`Slurm job ${ours} was cancelled (scancel)`);
    } finally {
      slurmCmd(slurmEnv, ["scancel", "--name=blocker"]);
      await new Promise((r) => blocker.once("exit", r));
    }
    await waitFor("the blocker to go", () => (heldJobs() === "" ? true : undefined));
  });

  it("reports a node taken down mid-job as NODE_FAIL", async () => {
    writeSkill(cwd, "long", { script: LONG });
    const node = cluster.node ?? "";
    try {
      const job = runSlurmJob({
        cwd,
        skill: "long",
        timings: { ...FAST, readyTimeoutMs: 20_000, requestTimeoutMs: 120_000 },
      });
      await waitFor("the script to start", () => runningJobId(cwd));
      slurmCmd(slurmEnv, [
        "scontrol",
        "update",
        `nodename=${node}`,
        "state=down",
        "reason=skillpilot-test",
      ]);
      const { summary, manifest } = await job;
      expect(summary).toMatchObject({ error_type: "INNOVUS_CRASH", detail_code: "NODE_FAIL" });
      expect(summary.message).toMatch(/lost its node.*not a tool crash/);
      expect(manifest.runtime.scheduler?.state).toBe("NODE_FAIL");
    } finally {
      slurmCmd(slurmEnv, ["scontrol", "update", `nodename=${node}`, "state=resume"]);
      await waitFor("the node to be idle again", () =>
        /^idle/.test(slurmCmd(slurmEnv, ["sinfo", "-h", "-n", node, "-o", "%T"]).trim())
          ? true
          : undefined,
      );
    }
  });

  it("reports a job preempted by a higher-tier partition as PREEMPTED", async () => {
    writeSkill(cwd, "long", { script: LONG });
    const job = runSlurmJob({
      cwd,
      skill: "long",
      timings: { ...FAST, readyTimeoutMs: 20_000, requestTimeoutMs: 120_000 },
    });
    await waitFor("the script to start", () => runningJobId(cwd));
    // the one CPU is ours: a job in "urgent" (PriorityTier=2, PreemptMode=CANCEL) takes it
    expect(
      slurmCmd(slurmEnv, ["srun", "-p", "urgent", "--job-name=urgent", "hostname"]).trim(),
    ).toBe(cluster.node);
    const { summary, manifest } = await job;
    expect(summary).toMatchObject({ error_type: "INNOVUS_CRASH", detail_code: "PREEMPTED" });
    expect(summary.message).toMatch(/was preempted on node .*not a tool crash/);
    expect(manifest.runtime.scheduler).toMatchObject({ state: "PREEMPTED", ending: "PREEMPTED" });
    expect(heldJobs()).toBe("");
  });

  it("cancels the job when the runner is interrupted (SIGINT)", async () => {
    writeSkill(cwd, "long", { script: LONG });
    const abort = new AbortController();
    const job = runSlurmJob({
      cwd,
      skill: "long",
      signal: abort.signal,
      timings: { ...FAST, readyTimeoutMs: 20_000, requestTimeoutMs: 120_000 },
    });
    const jobId = await waitFor("the script to start", () => runningJobId(cwd));
    abort.abort("SIGINT");
    const { summary } = await job;
    expect(summary).toMatchObject({ error_type: "INTERNAL_ERROR", detail_code: "INTERRUPTED" });
    expect(squeueState(jobId)).toBe("CANCELLED");
    expect(heldJobs()).toBe("");
  });

  it("reports Slurm's time limit as TIME_LIMIT (fires 60-90 s after start)", async () => {
    writeSkill(cwd, "long", { script: LONG });
    const { summary, manifest } = await runSlurmJob({
      cwd,
      skill: "long",
      settings: slurmSettings({ time: "1" }),
      timings: { ...FAST, readyTimeoutMs: 20_000, requestTimeoutMs: 170_000 },
    });
    expect(summary).toMatchObject({ error_type: "INNOVUS_CRASH", detail_code: "TIME_LIMIT" });
    expect(summary.message).toMatch(/hit its time limit.*not a tool crash/);
    expect(manifest.runtime.scheduler).toMatchObject({ state: "TIMEOUT", ending: "TIME_LIMIT" });
    expect(heldJobs()).toBe("");
  }, 200_000);
});
