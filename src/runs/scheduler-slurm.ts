import {
  describeEnding,
  type SchedulerDetailCode,
  type SchedulerPhase,
  type SchedulerPlan,
  type SchedulerPreset,
  type SchedulerStatus,
} from "./scheduler.ts";

/** The Slurm client programs (paths or names on PATH). */
export interface SlurmCommands {
  srun: string;
  squeue: string;
  scontrol: string;
  scancel: string;
  sacct: string;
}

// Slurm's job states (squeue(1) "JOB STATE CODES"). A word in none of the sets (a newer Slurm)
// counts as alive: the launcher's exit, not the word, then ends the session.
const PENDING = new Set(["PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD"]);
const ALIVE = new Set([
  "CONFIGURING",
  "RUNNING",
  "COMPLETING",
  "SUSPENDED",
  "RESIZING",
  "SIGNALING",
  "STAGE_OUT",
  "STOPPED",
]);

const ENDED = new Set([
  "COMPLETED",
  "CANCELLED",
  "FAILED",
  "TIMEOUT",
  "PREEMPTED",
  "NODE_FAIL",
  "BOOT_FAIL",
  "DEADLINE",
  "OUT_OF_MEMORY",
  "REVOKED",
  "SPECIAL_EXIT",
]);

const ENDINGS: Record<string, SchedulerDetailCode> = {
  CANCELLED: "SCHEDULER_CANCELLED",
  REVOKED: "SCHEDULER_CANCELLED",
  PREEMPTED: "PREEMPTED",
  NODE_FAIL: "NODE_FAIL",
  BOOT_FAIL: "NODE_FAIL",
  TIMEOUT: "TIME_LIMIT",
  DEADLINE: "TIME_LIMIT",
};

/** A Slurm state word (sacct may say `CANCELLED by 0`) as its phase and, if ended by Slurm, its code. */
export function classifySlurmState(raw: string): {
  state: string;
  phase: SchedulerPhase;
  ending?: SchedulerDetailCode;
} {
  const state = raw.trim().split(/\s+/)[0]?.replace(/\+$/, "") ?? "";
  if (PENDING.has(state)) return { state, phase: "pending" };
  if (ALIVE.has(state) || !ENDED.has(state)) return { state, phase: "running" };
  const ending = ENDINGS[state];
  return { state, phase: "ended", ...(ending ? { ending } : {}) };
}

function status(fields: {
  jobId: string;
  state: string;
  reason?: string | undefined;
  nodeList?: string | undefined;
  exit?: string | undefined;
}): SchedulerStatus | undefined {
  // a torn or empty answer says nothing about the job
  if (fields.state.trim() === "") return undefined;
  const c = classifySlurmState(fields.state);
  const clean = (v: string | undefined) =>
    v && v !== "(null)" && v !== "None" && v !== "" ? v : undefined;
  const reason = clean(fields.reason);
  const nodeList = clean(fields.nodeList);
  const exit = clean(fields.exit);
  return {
    jobId: fields.jobId,
    state: c.state,
    phase: c.phase,
    ...(reason ? { reason } : {}),
    ...(nodeList ? { nodeList } : {}),
    ...(exit ? { exit } : {}),
    ...(c.ending ? { ending: c.ending } : {}),
  };
}

/** The squeue format the runtime asks for: `%i|%T|%r|%N` (id, long state, reason, nodes). */
export const SQUEUE_FORMAT = "%i|%T|%r|%N";

/** `squeue -h -o '%i|%T|%r|%N'` output: the newest job of the lines (a name is unique per job). */
export function parseSqueue(stdout: string): SchedulerStatus | undefined {
  const rows = stdout
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l.length > 0)
    .map((l) => l.split("|"));
  const valid = rows.filter((r) => r.length >= 4 && /^\d+/.test(r[0] ?? ""));
  valid.sort((a, b) => Number.parseInt(b[0] ?? "", 10) - Number.parseInt(a[0] ?? "", 10));
  const row = valid[0];
  if (!row) return undefined;
  return status({ jobId: row[0] ?? "", state: row[1] ?? "", reason: row[2], nodeList: row[3] });
}

/** `scontrol show job -o ID`: one line of Key=Value pairs. */
export function parseScontrolJob(stdout: string): SchedulerStatus | undefined {
  const line = stdout.split("\n").find((l) => l.includes("JobId="));
  if (!line) return undefined;
  const fields = new Map<string, string>();
  for (const m of line.matchAll(/(?:^|\s)([A-Za-z][\w/:]*)=(\S*)/g)) {
    if (m[1] && !fields.has(m[1])) fields.set(m[1], m[2] ?? "");
  }
  const jobId = fields.get("JobId");
  const state = fields.get("JobState");
  if (!jobId || !state) return undefined;
  return status({
    jobId,
    state,
    reason: fields.get("Reason"),
    nodeList: fields.get("NodeList"),
    exit: fields.get("ExitCode"),
  });
}

/** `sacct -n -P -X -j ID -o JobID,State,ExitCode,NodeList` (only where accounting exists). */
export function parseSacct(stdout: string): SchedulerStatus | undefined {
  const row = stdout
    .split("\n")
    .map((l) => l.trim().split("|"))
    .find((r) => r.length >= 4 && /^\d+/.test(r[0] ?? ""));
  if (!row) return undefined;
  return status({ jobId: row[0] ?? "", state: row[1] ?? "", exit: row[2], nodeList: row[3] });
}

/**
 * Slurm: `srun -N1 -n1 --job-name=… [--partition] [--time] [args…] <tool>`. srun blocks while the
 * job is pending and then runs the tool as the job's step, so the launcher's life is the job's.
 * squeue (all states) by name finds the id; scontrol then reads the state, reason, nodes and exit
 * code of ended jobs (kept for MinJobAge); sacct is the last resort, where accounting exists.
 */
export function slurmPreset(commands: SlurmCommands): SchedulerPreset {
  return {
    kind: "slurm",
    wrap(tool, request) {
      return [
        commands.srun,
        `--job-name=${request.jobName}`,
        "-N1",
        "-n1",
        ...(request.queue ? [`--partition=${request.queue}`] : []),
        ...(request.time ? [`--time=${request.time}`] : []),
        ...request.args,
        ...tool,
      ];
    },
    statusQueries({ jobName, jobId }) {
      if (jobId === undefined) {
        return [
          {
            argv: [commands.squeue, "--states=all", "-h", `--name=${jobName}`, "-o", SQUEUE_FORMAT],
            parse: parseSqueue,
          },
        ];
      }
      return [
        { argv: [commands.scontrol, "show", "job", "-o", jobId], parse: parseScontrolJob },
        {
          argv: [commands.squeue, "--states=all", "-h", `--jobs=${jobId}`, "-o", SQUEUE_FORMAT],
          parse: parseSqueue,
        },
        {
          argv: [
            commands.sacct,
            "-n",
            "-P",
            "-X",
            "-j",
            jobId,
            "-o",
            "JobID,State,ExitCode,NodeList",
          ],
          parse: parseSacct,
        },
      ];
    },
    cancel: (jobId) => [commands.scancel, jobId],
    describe: (s) => describeEnding({ scheduler: "Slurm", status: s, cancelledBy: "scancel" }),
  };
}

/** The `skillpilot.slurm` settings (core config). */
export interface SlurmSettings extends SlurmCommands {
  partition?: string | undefined;
  time?: string | undefined;
  args: string[];
  tool: "tclsh" | "innovus";
  poll_ms: number;
}

/** The job name that ties a Slurm job to its run directory. */
export function slurmJobName(jobId: string): string {
  return `skillpilot-${jobId}`;
}

export function planSlurm(o: {
  settings: SlurmSettings;
  jobId: string;
  queueWaitTimeoutMs: number;
}): SchedulerPlan {
  const { settings } = o;
  return {
    preset: slurmPreset(settings),
    request: {
      jobName: slurmJobName(o.jobId),
      ...(settings.partition ? { queue: settings.partition } : {}),
      ...(settings.time ? { time: settings.time } : {}),
      args: settings.args,
    },
    tool: settings.tool,
    pollMs: settings.poll_ms,
    queueWaitTimeoutMs: o.queueWaitTimeoutMs,
  };
}
