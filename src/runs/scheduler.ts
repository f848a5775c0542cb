import { z } from "zod";

/**
 * A batch scheduler as SkillPilot sees it (pure): how the tool's argv becomes an interactive
 * submission whose launcher process blocks through the queue wait and then is the job step,
 * how to learn the job's id, state, reason and nodes, how to cancel it, and which of its endings
 * are the scheduler's doing rather than the tool's. Slurm is tested against real daemons
 * (test/slurm/); LSF and PBS are written from their documented formats, untested on a real farm.
 */

export const SCHEDULER_KINDS = ["slurm", "lsf", "pbs"] as const;
export type SchedulerKind = (typeof SCHEDULER_KINDS)[number];

/**
 * detail_codes of a scheduler ending (the job ended by the scheduler, not by the tool); the
 * error_type stays the seed's: SESSION_START_FAIL before ready, INNOVUS_CRASH after.
 */
export const SCHEDULER_DETAIL_CODES = [
  "SCHEDULER_CANCELLED",
  "PREEMPTED",
  "NODE_FAIL",
  "TIME_LIMIT",
] as const;
export type SchedulerDetailCode = (typeof SCHEDULER_DETAIL_CODES)[number];

/** Where a job is in its life, whatever the scheduler calls its states. */
export type SchedulerPhase = "pending" | "running" | "ended";

/** One reading of the job's status. */
export interface SchedulerStatus {
  jobId: string;
  /** The scheduler's own state word (Slurm CANCELLED, LSF EXIT, PBS F). */
  state: string;
  phase: SchedulerPhase;
  reason?: string;
  nodeList?: string;
  /** The exit as the scheduler reports it (Slurm `0:15`, LSF/PBS exit status). */
  exit?: string;
  /** Set on an ended job that the scheduler ended. */
  ending?: SchedulerDetailCode;
}

/** manifest `runtime.scheduler`: the job's facts, kept up to date while the session runs. */
export const SchedulerFactsSchema = z.object({
  kind: z.enum(SCHEDULER_KINDS),
  job_name: z.string(),
  job_id: z.string().optional(),
  state: z.string().optional(),
  reason: z.string().optional(),
  node_list: z.string().optional(),
  exit: z.string().optional(),
  ending: z.enum(SCHEDULER_DETAIL_CODES).optional(),
  /** The runtime cancelled the job itself (the session's end, a timeout, an interrupt). */
  cancelled_by: z.literal("runtime").optional(),
});
export type SchedulerFacts = z.infer<typeof SchedulerFactsSchema>;

/** What a submission asks for; empty fields are left to the site's defaults. */
export interface SubmitRequest {
  jobName: string;
  /** Slurm partition, LSF queue, PBS queue. */
  queue?: string;
  /** Wall-clock limit in the scheduler's own syntax (Slurm `--time`, LSF `-W`, PBS walltime). */
  time?: string;
  /** Extra launcher arguments, passed as given, before the tool's argv. */
  args: string[];
}

/** One way to ask for the status: a command, and the parse of what it prints. */
export interface StatusQuery {
  argv: string[];
  parse(stdout: string): SchedulerStatus | undefined;
}

export interface SchedulerPreset {
  kind: SchedulerKind;
  /** The launcher's argv: it blocks while the job waits, then runs the tool as the step. */
  wrap(tool: string[], request: SubmitRequest): string[];
  /** Queries tried in order until one answers (by name while the id is unknown, then by id). */
  statusQueries(ref: { jobName: string; jobId?: string }): StatusQuery[];
  cancel(jobId: string): string[];
  /** Plain words for an ending, naming the scheduler and saying it was not the tool. */
  describe(status: SchedulerStatus): string;
}

/** `<Scheduler> job <id> was <what> on node <n>; not a tool crash` — one phrasing for all. */
export function describeEnding(o: {
  scheduler: string;
  status: SchedulerStatus;
  cancelledBy: string;
}): string {
  const { status } = o;
  const what: Record<SchedulerDetailCode, string> = {
    SCHEDULER_CANCELLED: `was cancelled (${o.cancelledBy})`,
    PREEMPTED: "was preempted",
    NODE_FAIL: "lost its node (node failure)",
    TIME_LIMIT: "hit its time limit",
  };
  const verb = status.ending ? what[status.ending] : `ended (${status.state})`;
  const node = status.nodeList ? ` on node ${status.nodeList}` : "";
  const reason = status.reason && status.reason !== "None" ? `, reason ${status.reason}` : "";
  return `${o.scheduler} job ${status.jobId} ${verb}${node}${reason}; not a tool crash`;
}

/** The timeline events of a scheduler job: its submission, each change, its end. */
export type SchedulerEventName = "SCHEDULER_SUBMIT" | "SCHEDULER_STATE" | "SCHEDULER_END";

/** How a session goes through a scheduler: the preset, what to ask for, and its own clocks. */
export interface SchedulerPlan {
  preset: SchedulerPreset;
  request: SubmitRequest;
  /** What the job step runs. */
  tool: "tclsh" | "innovus";
  /** How often the runner asks the scheduler about the job. */
  pollMs: number;
  /** How long the job may stay pending before the start fails (QUEUE_WAIT_TIMEOUT). */
  queueWaitTimeoutMs: number;
}
