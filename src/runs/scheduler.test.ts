import { describe, expect, it } from "vitest";
import { SchedulerFactsSchema } from "./scheduler.ts";
import { lsfPreset, parseBjobs } from "./scheduler-lsf.ts";
import { parseQstat, pbsPreset } from "./scheduler-pbs.ts";
import {
  classifySlurmState,
  parseSacct,
  parseScontrolJob,
  parseSqueue,
  planSlurm,
  slurmPreset,
} from "./scheduler-slurm.ts";

const SLURM = {
  srun: "srun",
  squeue: "squeue",
  scontrol: "scontrol",
  scancel: "scancel",
  sacct: "sacct",
};

describe("Slurm", () => {
  it("wraps the tool in srun with the job name, one task, partition, time and extra args", () => {
    const plan = planSlurm({
      settings: {
        ...SLURM,
        partition: "eda",
        time: "2:00:00",
        args: ["--mem=8G"],
        tool: "innovus",
        poll_ms: 500,
      },
      jobId: "20261126_230000_1_abcd",
      queueWaitTimeoutMs: 1000,
    });
    expect(plan.preset.wrap(["innovus", "-no_gui", "-init", "/b.tcl"], plan.request)).toEqual([
      "srun",
      "--job-name=skillpilot-20261126_230000_1_abcd",
      "-N1",
      "-n1",
      "--partition=eda",
      "--time=2:00:00",
      "--mem=8G",
      "innovus",
      "-no_gui",
      "-init",
      "/b.tcl",
    ]);
    expect(plan.preset.cancel("42")).toEqual(["scancel", "42"]);
  });

  it("reads squeue by name, then scontrol, squeue and sacct by id", () => {
    const p = slurmPreset(SLURM);
    expect(p.statusQueries({ jobName: "skillpilot-x" }).map((q) => q.argv[0])).toEqual(["squeue"]);
    expect(p.statusQueries({ jobName: "skillpilot-x", jobId: "7" }).map((q) => q.argv[0])).toEqual([
      "scontrol",
      "squeue",
      "sacct",
    ]);
  });

  it("parses squeue, scontrol and sacct output into one status", () => {
    expect(parseSqueue("12|PENDING|Resources|\n")).toEqual({
      jobId: "12",
      state: "PENDING",
      phase: "pending",
      reason: "Resources",
    });
    expect(parseSqueue("3|CANCELLED|None|n1\n9|RUNNING|None|n[1-2]\n")).toMatchObject({
      jobId: "9",
      phase: "running",
      nodeList: "n[1-2]",
    });
    expect(parseSqueue("")).toBeUndefined();
    const line =
      "JobId=42 JobName=skillpilot-j UserId=root(0) JobState=TIMEOUT Reason=TimeLimit Dependency=(null) ExitCode=0:15 NodeList=n1 BatchHost=n1 Command=tclsh /a b/boot.tcl";
    expect(parseScontrolJob(line)).toEqual({
      jobId: "42",
      state: "TIMEOUT",
      phase: "ended",
      reason: "TimeLimit",
      nodeList: "n1",
      exit: "0:15",
      ending: "TIME_LIMIT",
    });
    expect(parseScontrolJob("slurm_load_jobs error: Invalid job id specified")).toBeUndefined();
    expect(parseSacct("42|CANCELLED by 0|0:15|n1\n")).toMatchObject({
      state: "CANCELLED",
      ending: "SCHEDULER_CANCELLED",
    });
  });

  it("tells the scheduler's endings from the tool's own", () => {
    expect(classifySlurmState("CANCELLED").ending).toBe("SCHEDULER_CANCELLED");
    expect(classifySlurmState("PREEMPTED").ending).toBe("PREEMPTED");
    expect(classifySlurmState("NODE_FAIL").ending).toBe("NODE_FAIL");
    expect(classifySlurmState("TIMEOUT").ending).toBe("TIME_LIMIT");
    expect(classifySlurmState("FAILED")).toEqual({ state: "FAILED", phase: "ended" });
    expect(classifySlurmState("COMPLETED")).toEqual({ state: "COMPLETED", phase: "ended" });
    expect(classifySlurmState("COMPLETING").phase).toBe("running");
    expect(classifySlurmState("REQUEUED").phase).toBe("pending");
    // a state word this code does not know is not taken for an end
    expect(classifySlurmState("SOME_NEW_STATE").phase).toBe("running");
    expect(parseSqueue("7||None|n1")).toBeUndefined();
  });

  it("says plainly that it was the scheduler", () => {
    const p = slurmPreset(SLURM);
    const s = parseSqueue("42|CANCELLED|None|n1");
    expect(s && p.describe(s)).toBe(
      "Slurm job 42 was cancelled (scancel) on node n1; not a tool crash",
    );
  });
});

describe("LSF (documented format; untested on a real LSF)", () => {
  const p = lsfPreset({ bsub: "bsub", bjobs: "bjobs", bkill: "bkill" });
  it("wraps in bsub -Is and reads bjobs -o with a delimiter", () => {
    expect(
      p.wrap(["tclsh", "/b.tcl"], {
        jobName: "skillpilot-j",
        queue: "normal",
        time: "60",
        args: [],
      }),
    ).toEqual([
      "bsub",
      "-Is",
      "-J",
      "skillpilot-j",
      "-n",
      "1",
      "-q",
      "normal",
      "-W",
      "60",
      "tclsh",
      "/b.tcl",
    ]);
    expect(p.statusQueries({ jobName: "skillpilot-j" })[0]?.argv).toContain("-J");
    expect(p.cancel("77")).toEqual(["bkill", "77"]);
  });

  it("parses states and termination reasons", () => {
    expect(parseBjobs("77|PEND|-|-|-\n")).toEqual({ jobId: "77", state: "PEND", phase: "pending" });
    expect(parseBjobs("77|RUN|-|-|hostA\n")).toMatchObject({ phase: "running", nodeList: "hostA" });
    expect(parseBjobs("77|EXIT|130|TERM_OWNER: job killed by owner|hostA\n")?.ending).toBe(
      "SCHEDULER_CANCELLED",
    );
    expect(
      parseBjobs("77|EXIT|140|TERM_RUNLIMIT: job killed after reaching LSF run time limit|h")
        ?.ending,
    ).toBe("TIME_LIMIT");
    expect(parseBjobs("77|EXIT|-|TERM_PREEMPT: job killed after preemption|h")?.ending).toBe(
      "PREEMPTED",
    );
    expect(parseBjobs("77|UNKWN|-|-|h")?.phase).toBe("ended");
    expect(parseBjobs("77|UNKWN|-|-|h")?.ending).toBe("NODE_FAIL");
    expect(parseBjobs("77|EXIT|1|-|h")?.ending).toBeUndefined();
    expect(parseBjobs("Job <x> is not found")).toBeUndefined();
  });
});

describe("PBS (documented format; untested on a real PBS)", () => {
  const p = pbsPreset({ qsub: "qsub", qstat: "qstat", qdel: "qdel" });
  const qstat = (state: string, extra = "") =>
    [
      "Job Id: 1001.pbs-server",
      "    Job_Name = other",
      "    job_state = R",
      "",
      "Job Id: 1002.pbs-server",
      "    Job_Name = skillpilot-j",
      `    job_state = ${state}`,
      "    exec_host = node7/0",
      extra,
      "",
    ].join("\n");

  it("wraps in qsub -I … -- tool and cancels with qdel", () => {
    expect(
      p.wrap(["tclsh", "/b.tcl"], { jobName: "skillpilot-j", time: "01:00:00", args: [] }),
    ).toEqual([
      "qsub",
      "-I",
      "-N",
      "skillpilot-j",
      "-l",
      "select=1:ncpus=1",
      "-l",
      "walltime=01:00:00",
      "--",
      "tclsh",
      "/b.tcl",
    ]);
    expect(p.cancel("1002.pbs-server")).toEqual(["qdel", "1002.pbs-server"]);
  });

  it("finds the job by name in qstat -x -f and reads its ending", () => {
    expect(parseQstat(qstat("Q"), "skillpilot-j")).toMatchObject({
      jobId: "1002.pbs-server",
      phase: "pending",
    });
    expect(parseQstat(qstat("R"), "skillpilot-j")).toMatchObject({
      phase: "running",
      nodeList: "node7/0",
    });
    const walltime = qstat(
      "F",
      "    Exit_status = -29\n    comment = Job run at Thu Nov 26 at 10:00 on (node7:ncpus=1) and\n\tfailed: walltime 01:00:05 exceeded limit 01:00:00",
    );
    expect(parseQstat(walltime, "skillpilot-j")).toMatchObject({
      phase: "ended",
      ending: "TIME_LIMIT",
    });
    expect(parseQstat(qstat("F", "    Exit_status = 271"), "skillpilot-j")?.ending).toBe(
      "SCHEDULER_CANCELLED",
    );
    expect(parseQstat(qstat("F", "    Exit_status = 1"), "skillpilot-j")?.ending).toBeUndefined();
    expect(parseQstat(qstat("R"), "nope")).toBeUndefined();
  });
});

describe("manifest facts", () => {
  it("validates runtime.scheduler", () => {
    expect(
      SchedulerFactsSchema.safeParse({
        kind: "slurm",
        job_name: "skillpilot-j",
        ending: "NODE_FAIL",
      }).success,
    ).toBe(true);
    expect(
      SchedulerFactsSchema.safeParse({ kind: "slurm", job_name: "x", ending: "TOOL_EXITED" })
        .success,
    ).toBe(false);
  });
});
