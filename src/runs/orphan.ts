/**
 * What became of a RUNNING job's runner and its tool session, as far as this host can tell: the
 * runner still owns it, it is resumable (`skill resume`), or it is gone and the job is to be
 * closed (RUNNER_GONE). `judgeOrphan` is the rule (pure); `observeOrphan` gathers the facts.
 */
import { statSync } from "node:fs";
import { hostname } from "node:os";
import { isProcessAlive, readLockHolder } from "../core/index.ts";
import { beatSurvivesBusyLoop } from "./heartbeat.ts";
import { processGroupAlive } from "./process-group.ts";
import type { Manifest, OrphanFile, Ready } from "./protocol.ts";
import { readQueuedRequest, unansweredRequests } from "./queued-request.ts";
import type { RunPaths } from "./run-dir.ts";
import { readOrphanFile, readRunnerFile } from "./runner-file.ts";
import { readReady } from "./session.ts";

export interface OrphanFacts {
  thisHost: string;
  runner: { pid: number | undefined; host: string | undefined; alive: boolean };
  /** Another live process holds session/resume.lock (a resume, or a close, is under way). */
  lockHeld: boolean;
  /** `runtime.orphan_grace_ms` of the job (0 for jobs of older versions: they end at once). */
  graceMs: number;
  /** The manifest recorded a session (pgid), and session/ready.json is valid. */
  session: { pgid: number; ready: Ready } | undefined;
  toolAlive: boolean;
  heartbeatAgeMs: number | undefined;
  heartbeatStaleMs: number;
  /** A request in queue/ has no ack: the tool may be busy, so its heartbeat is not judged. */
  requestInFlight: boolean;
  /** The tool beats from a thread or its sidecar (ready.json): its heartbeat is judged in flight too. */
  beatSurvivesBusyLoop: boolean;
  /** When the earliest unanswered request's own deadline (created_at + timeout_s) passed, or will. */
  inFlightDeadlineMs: number | undefined;
  orphan: OrphanFile | undefined;
  nowMs: number;
}

export type OrphanVerdict =
  | { kind: "foreign" }
  | { kind: "owned"; pid: number | undefined }
  | { kind: "resumable"; until: string | null }
  | { kind: "gone"; why: string };

/** How long after its announced end an orphaned tool may take to notice it (a few beats). */
const END_SLACK_MS = 5_000;

/** The rule: who owns a RUNNING job, and whether its session can still be taken over. */
export function judgeOrphan(f: OrphanFacts): OrphanVerdict {
  if (f.runner.host !== undefined && f.runner.host !== f.thisHost) return { kind: "foreign" };
  if (f.runner.alive || f.lockHeld) return { kind: "owned", pid: f.runner.pid };
  if (f.graceMs === 0) return { kind: "gone", why: "orphan_grace_ms is 0" };
  const s = f.session;
  if (!s) return { kind: "gone", why: "no tool session was ready" };
  if (s.ready.host !== f.thisHost) {
    return { kind: "gone", why: `the tool runs on ${s.ready.host}, out of this host's sight` };
  }
  if (!f.toolAlive) return { kind: "gone", why: `the tool session (pid ${s.ready.pid}) ended` };
  if (f.orphan && f.nowMs > Date.parse(f.orphan.until) + END_SLACK_MS) {
    return { kind: "gone", why: `the tool outlived its grace (until ${f.orphan.until})` };
  }
  // a tool busy in a script never reaches its own orphan check: past the request's deadline and
  // the grace on top, nobody is coming for it
  if (f.inFlightDeadlineMs !== undefined && f.nowMs > f.inFlightDeadlineMs + f.graceMs) {
    return {
      kind: "gone",
      why: `its request passed its deadline (${new Date(f.inFlightDeadlineMs).toISOString()}) and the grace`,
    };
  }
  const stale = f.heartbeatAgeMs === undefined || f.heartbeatAgeMs > f.heartbeatStaleMs;
  if (stale && (!f.requestInFlight || f.beatSurvivesBusyLoop)) {
    return { kind: "gone", why: `the session's heartbeat is older than ${f.heartbeatStaleMs} ms` };
  }
  return { kind: "resumable", until: f.orphan?.until ?? null };
}

/** The earliest deadline (created_at + timeout_s) of the requests that have no ack. */
function earliestDeadline(paths: RunPaths, requestIds: string[]): number | undefined {
  let earliest: number | undefined;
  for (const id of requestIds) {
    const r = readQueuedRequest(paths, id);
    if (r?.timeout_s === undefined) continue;
    const at = Date.parse(r.created_at) + r.timeout_s * 1000;
    if (Number.isFinite(at) && (earliest === undefined || at < earliest)) earliest = at;
  }
  return earliest;
}

/** The facts about one RUNNING job, read from its run directory and this host's processes. */
export function observeOrphan(
  paths: RunPaths,
  m: Manifest,
  o: { heartbeatStaleMs: number; now: Date },
): { facts: OrphanFacts; verdict: OrphanVerdict } {
  const runnerFile = readRunnerFile(paths);
  const pid = runnerFile?.pid ?? m.runtime.pid;
  const host = runnerFile?.host ?? m.runtime.host;
  const holder = readLockHolder(paths.resumeLock);
  const thisHost = hostname();
  const pgid = m.runtime.session?.pgid;
  const ready = readReady(paths.ready);
  const session = pgid !== undefined && ready ? { pgid, ready } : undefined;
  let heartbeatAgeMs: number | undefined;
  try {
    heartbeatAgeMs = Math.max(0, o.now.getTime() - statSync(paths.heartbeat).mtimeMs);
  } catch {
    heartbeatAgeMs = undefined;
  }
  const grace = m.runtime.orphan_grace_ms;
  const unanswered = unansweredRequests(paths);
  const facts: OrphanFacts = {
    thisHost,
    runner: { pid, host, alive: pid !== undefined && isProcessAlive(pid) },
    // this process holds it while it judges (a resume, a close): that is no other owner
    lockHeld:
      holder !== null &&
      holder.host === thisHost &&
      holder.pid !== process.pid &&
      isProcessAlive(holder.pid),
    graceMs: typeof grace === "number" ? grace : (runnerFile?.orphan_grace_ms ?? 0),
    session,
    toolAlive:
      session !== undefined &&
      (session.ready.host === thisHost
        ? isProcessAlive(session.ready.pid)
        : processGroupAlive(session.pgid)),
    heartbeatAgeMs,
    heartbeatStaleMs: o.heartbeatStaleMs,
    requestInFlight: unanswered.length > 0,
    beatSurvivesBusyLoop: beatSurvivesBusyLoop(ready?.heartbeat_mode),
    inFlightDeadlineMs: earliestDeadline(paths, unanswered),
    orphan: readOrphanFile(paths),
    nowMs: o.now.getTime(),
  };
  return { facts, verdict: judgeOrphan(facts) };
}
