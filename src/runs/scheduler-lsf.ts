import {
  describeEnding,
  type SchedulerDetailCode,
  type SchedulerPhase,
  type SchedulerPreset,
  type SchedulerStatus,
} from "./scheduler.ts";

/**
 * LSF, written from IBM's documented formats and untested against a real LSF: `bsub -Is` blocks
 * while the job is pending, then runs the tool with a pseudo-terminal; `bjobs -o` with a
 * delimiter reads the job; `bkill` cancels it.
 */
export interface LsfCommands {
  bsub: string;
  bjobs: string;
  bkill: string;
}

/** The bjobs fields the runtime asks for, in this order. */
export const BJOBS_FIELDS = "jobid stat exit_code exit_reason exec_host";

// bjobs STAT values (bjobs(1)): PEND/PSUSP wait; RUN/USUSP/SSUSP/PROV run; DONE/EXIT ended;
// UNKWN/ZOMBI mean the execution host is lost.
const PENDING = new Set(["PEND", "PSUSP", "WAIT"]);
const ALIVE = new Set(["RUN", "USUSP", "SSUSP", "PROV"]);

/** The job's ending from its termination reason (bhist/bjobs TERM_* codes) and state. */
function lsfEnding(stat: string, reason: string): SchedulerDetailCode | undefined {
  if (
    stat === "UNKWN" ||
    stat === "ZOMBI" ||
    /TERM_(ZOMBIE|UNKNOWN)|host.*(unavail|lost)/i.test(reason)
  )
    return "NODE_FAIL";
  if (/TERM_PREEMPT/i.test(reason)) return "PREEMPTED";
  if (/TERM_(RUNLIMIT|DEADLINE)/i.test(reason)) return "TIME_LIMIT";
  if (
    /TERM_(OWNER|ADMIN|FORCE_OWNER|FORCE_ADMIN|REQUEUE_OWNER|REQUEUE_ADMIN)|killed by (owner|admin)/i.test(
      reason,
    )
  )
    return "SCHEDULER_CANCELLED";
  return undefined;
}

const ENDED = new Set(["DONE", "EXIT", "UNKWN", "ZOMBI"]);

/** A word in none of the sets counts as alive: the launcher's exit then ends the session. */
export function classifyLsfState(stat: string): SchedulerPhase {
  if (PENDING.has(stat)) return "pending";
  if (ALIVE.has(stat) || !ENDED.has(stat)) return "running";
  return "ended";
}

/** `bjobs -noheader -o "jobid stat exit_code exit_reason exec_host delimiter='|'"` output. */
export function parseBjobs(stdout: string): SchedulerStatus | undefined {
  const row = stdout
    .split("\n")
    .map((l) => l.trim().split("|"))
    .filter((r) => r.length >= 5 && /^\d+/.test(r[0] ?? ""))
    .sort((a, b) => Number.parseInt(b[0] ?? "", 10) - Number.parseInt(a[0] ?? "", 10))[0];
  if (!row) return undefined;
  const clean = (v: string | undefined) => (v && v !== "-" ? v : undefined);
  const [jobId = "", stat = "", exit, reason, hosts] = row;
  const phase = classifyLsfState(stat);
  const ending = phase === "ended" ? lsfEnding(stat, reason ?? "") : undefined;
  const r = clean(reason);
  const n = clean(hosts);
  const e = clean(exit);
  return {
    jobId,
    state: stat,
    phase,
    ...(r ? { reason: r } : {}),
    ...(n ? { nodeList: n } : {}),
    ...(e ? { exit: e } : {}),
    ...(ending ? { ending } : {}),
  };
}

export function lsfPreset(commands: LsfCommands): SchedulerPreset {
  const query = (target: string[]) => ({
    argv: [commands.bjobs, "-a", "-noheader", "-o", `${BJOBS_FIELDS} delimiter='|'`, ...target],
    parse: parseBjobs,
  });
  return {
    kind: "lsf",
    wrap(tool, request) {
      return [
        commands.bsub,
        "-Is",
        "-J",
        request.jobName,
        "-n",
        "1",
        ...(request.queue ? ["-q", request.queue] : []),
        ...(request.time ? ["-W", request.time] : []),
        ...request.args,
        ...tool,
      ];
    },
    statusQueries: ({ jobName, jobId }) => [query(jobId === undefined ? ["-J", jobName] : [jobId])],
    cancel: (jobId) => [commands.bkill, jobId],
    describe: (s) => describeEnding({ scheduler: "LSF", status: s, cancelledBy: "bkill" }),
  };
}
