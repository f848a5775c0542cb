import {
  describeEnding,
  type SchedulerDetailCode,
  type SchedulerPhase,
  type SchedulerPreset,
  type SchedulerStatus,
} from "./scheduler.ts";

/**
 * PBS Professional / OpenPBS, written from the documented `qstat -f` format and untested against a
 * real PBS: `qsub -I … -- <tool>` blocks while queued, then runs the tool; `qstat -x -f` (finished
 * jobs included) reads it; `qdel` cancels it.
 */
export interface PbsCommands {
  qsub: string;
  qstat: string;
  qdel: string;
}

// job_state letters (qstat(1B)): Q/H/W/T/B wait; R/E/S/U run or wind down; F/X are done.
const PENDING = new Set(["Q", "H", "W", "T", "B", "M"]);
const ALIVE = new Set(["R", "E", "S", "U"]);

const ENDED = new Set(["F", "X"]);

/** A letter in none of the sets counts as alive: the launcher's exit then ends the session. */
export function classifyPbsState(letter: string): SchedulerPhase {
  if (PENDING.has(letter)) return "pending";
  if (ALIVE.has(letter) || !ENDED.has(letter)) return "running";
  return "ended";
}

/** One job of `qstat -f` text: "Job Id: N" then indented `key = value` lines (continued by tabs). */
function parseBlocks(stdout: string): Map<string, string>[] {
  const blocks: Map<string, string>[] = [];
  let current: Map<string, string> | undefined;
  let lastKey: string | undefined;
  for (const raw of stdout.split("\n")) {
    const head = /^Job Id:\s*(\S+)/.exec(raw);
    if (head) {
      current = new Map([["Job_Id", head[1] ?? ""]]);
      blocks.push(current);
      lastKey = undefined;
      continue;
    }
    if (!current) continue;
    const kv = /^\s+([\w.]+) = (.*)$/.exec(raw);
    if (kv?.[1]) {
      lastKey = kv[1];
      current.set(lastKey, kv[2] ?? "");
    } else if (lastKey && /^\t/.test(raw)) {
      current.set(lastKey, `${current.get(lastKey) ?? ""}${raw.trim()}`);
    }
  }
  return blocks;
}

/** The scheduler's doing, read from the job's comment and exit status (PBS Pro wording). */
function pbsEnding(comment: string, exitStatus: string): SchedulerDetailCode | undefined {
  if (/walltime .*exceed|exceeded .*walltime/i.test(comment)) return "TIME_LIMIT";
  if (/preempt/i.test(comment)) return "PREEMPTED";
  if (/node.*(down|fail)|mom.*(down|lost|reject)|rerun.*node/i.test(comment)) return "NODE_FAIL";
  if (/deleted|qdel/i.test(comment) || exitStatus === "271") return "SCHEDULER_CANCELLED";
  return undefined;
}

/** `qstat -x -f [ID]` output; with `jobName`, the newest job of that name. */
export function parseQstat(stdout: string, jobName?: string): SchedulerStatus | undefined {
  const blocks = parseBlocks(stdout).filter(
    (b) => jobName === undefined || b.get("Job_Name") === jobName,
  );
  const block = blocks.at(-1);
  const jobId = block?.get("Job_Id");
  const state = block?.get("job_state");
  if (!block || !jobId || !state) return undefined;
  const phase = classifyPbsState(state);
  const comment = block.get("comment") ?? "";
  const exit = block.get("Exit_status");
  const nodes = block.get("exec_host");
  const ending = phase === "ended" ? pbsEnding(comment, exit ?? "") : undefined;
  return {
    jobId,
    state,
    phase,
    ...(comment ? { reason: comment } : {}),
    ...(nodes ? { nodeList: nodes } : {}),
    ...(exit !== undefined ? { exit } : {}),
    ...(ending ? { ending } : {}),
  };
}

export function pbsPreset(commands: PbsCommands): SchedulerPreset {
  return {
    kind: "pbs",
    wrap(tool, request) {
      return [
        commands.qsub,
        "-I",
        "-N",
        request.jobName,
        "-l",
        "select=1:ncpus=1",
        ...(request.queue ? ["-q", request.queue] : []),
        ...(request.time ? ["-l", `walltime=${request.time}`] : []),
        ...request.args,
        "--",
        ...tool,
      ];
    },
    statusQueries: ({ jobName, jobId }) => [
      {
        argv: [commands.qstat, "-x", "-f", ...(jobId ? [jobId] : [])],
        parse: (stdout) => parseQstat(stdout, jobId ? undefined : jobName),
      },
    ],
    cancel: (jobId) => [commands.qdel, jobId],
    describe: (s) => describeEnding({ scheduler: "PBS", status: s, cancelledBy: "qdel" }),
  };
}
