import { execFile } from "node:child_process";
import type {
  SchedulerDetailCode,
  SchedulerEventName,
  SchedulerFacts,
  SchedulerPreset,
  SchedulerStatus,
} from "./scheduler.ts";

export interface SchedulerEnding {
  detail_code: SchedulerDetailCode;
  message: string;
  status: SchedulerStatus;
}

/**
 * One scheduler job as the runner follows it: polled with the preset's status queries (never
 * assuming accounting exists), its facts handed to `onEvent` on every change, cancelled and
 * followed until the scheduler no longer holds it.
 */
export interface SchedulerWatch {
  status(): SchedulerStatus | undefined;
  /** Poll now (one poll at a time; concurrent callers share it). */
  poll(): Promise<SchedulerStatus | undefined>;
  /** Poll every `pollMs` in the background until the job ends or `close()`. */
  start(): void;
  /**
   * After the launcher exited: wait (bounded) until the job's end is known, and say whether the
   * scheduler ended it (cancel, preemption, node failure, time limit). Undefined: the tool's doing.
   */
  ending(timeoutMs?: number): Promise<SchedulerEnding | undefined>;
  /** Cancel the job unless it already ended, then wait until it is gone; true when released. */
  release(timeoutMs?: number): Promise<boolean>;
  close(): void;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Run one scheduler command; its stdout, or undefined when it failed (unknown job, no daemon). */
export function runSchedulerCommand(
  argv: string[],
  env: NodeJS.ProcessEnv,
  timeoutMs = 15_000,
): Promise<{ ok: boolean; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      argv[0] ?? "",
      argv.slice(1),
      { env, timeout: timeoutMs, maxBuffer: 4 * 1024 * 1024 },
      (error, stdout, stderr) =>
        resolve({ ok: !error, stdout: String(stdout), stderr: String(stderr) }),
    );
  });
}

function toFacts(o: {
  kind: SchedulerFacts["kind"];
  jobName: string;
  status: SchedulerStatus | undefined;
  cancelledByRuntime: boolean;
}): SchedulerFacts {
  const s = o.status;
  // the runtime's own cancel (the session's normal end) is not the scheduler's doing
  const ending = o.cancelledByRuntime ? undefined : s?.ending;
  return {
    kind: o.kind,
    job_name: o.jobName,
    ...(s ? { job_id: s.jobId, state: s.state } : {}),
    ...(s?.reason ? { reason: s.reason } : {}),
    ...(s?.nodeList ? { node_list: s.nodeList } : {}),
    ...(s?.exit ? { exit: s.exit } : {}),
    ...(ending ? { ending } : {}),
    ...(o.cancelledByRuntime ? { cancelled_by: "runtime" as const } : {}),
  };
}

/** Poll until the job has ended or `timeoutMs` passed; the last status seen. */
async function untilEnded(
  watch: SchedulerWatch,
  from: SchedulerStatus | undefined,
  timeoutMs: number,
): Promise<SchedulerStatus | undefined> {
  const until = performance.now() + timeoutMs;
  let s = from;
  while (s?.phase !== "ended" && performance.now() < until) {
    await sleep(200);
    s = await watch.poll();
  }
  return s;
}

export function createSchedulerWatch(o: {
  preset: SchedulerPreset;
  jobName: string;
  env: NodeJS.ProcessEnv;
  pollMs: number;
  onEvent: (event: SchedulerEventName, facts: SchedulerFacts) => void;
  log: (message: string) => void;
}): SchedulerWatch {
  let last: SchedulerStatus | undefined;
  let inFlight: Promise<SchedulerStatus | undefined> | undefined;
  let closed = false;
  let endReported = false;
  let cancelledByRuntime = false;
  const facts = (status: SchedulerStatus | undefined) =>
    toFacts({ kind: o.preset.kind, jobName: o.jobName, status, cancelledByRuntime });
  const key = (s?: SchedulerStatus) =>
    s ? [s.jobId, s.state, s.reason, s.nodeList, s.exit].join("|") : "";

  const record = (next: SchedulerStatus) => {
    const changed = key(next) !== key(last);
    last = next;
    // after close() the job's record may be final: a late poll must not append to it
    if (!changed || closed) return;
    if (next.phase === "ended") {
      if (endReported) return o.onEvent("SCHEDULER_STATE", facts(next));
      endReported = true;
      o.log(`scheduler job ${next.jobId} ended: ${next.state} ${next.reason ?? ""}`);
      return o.onEvent("SCHEDULER_END", facts(next));
    }
    o.onEvent("SCHEDULER_STATE", facts(next));
  };

  const pollOnce = async (): Promise<SchedulerStatus | undefined> => {
    const queries = o.preset.statusQueries({
      jobName: o.jobName,
      ...(last ? { jobId: last.jobId } : {}),
    });
    for (const q of queries) {
      const out = await runSchedulerCommand(q.argv, o.env);
      const parsed = out.ok ? q.parse(out.stdout) : undefined;
      if (parsed) {
        record(parsed);
        return parsed;
      }
    }
    return last;
  };

  const watch: SchedulerWatch = {
    status: () => last,
    poll() {
      inFlight ??= pollOnce().finally(() => {
        inFlight = undefined;
      });
      return inFlight;
    },
    start() {
      o.onEvent("SCHEDULER_SUBMIT", facts(undefined));
      void (async () => {
        while (!closed && last?.phase !== "ended") {
          await watch.poll();
          await sleep(o.pollMs);
        }
      })();
    },
    async ending(timeoutMs = 10_000) {
      const first = await watch.poll();
      // a job never seen (the launcher failed before submitting) gets a short look, not the full wait
      const s = await untilEnded(watch, first, first ? timeoutMs : Math.min(timeoutMs, 2_000));
      if (!s?.ending) return undefined;
      return { detail_code: s.ending, message: o.preset.describe(s), status: s };
    },
    async release(timeoutMs = 15_000) {
      const s = last ?? (await watch.poll());
      if (!s) return true; // never queued (the launcher failed) or already forgotten
      if (s.phase !== "ended") {
        cancelledByRuntime = true;
        const out = await runSchedulerCommand(o.preset.cancel(s.jobId), o.env);
        o.log(`cancel ${s.jobId}: ${out.ok ? "sent" : `failed: ${out.stderr.trim()}`}`);
      }
      return (await untilEnded(watch, s, timeoutMs))?.phase === "ended";
    },
    close() {
      closed = true;
    },
  };
  return watch;
}
