import { closeSync, mkdirSync, openSync, writeSync } from "node:fs";
import { join } from "node:path";
import type { Clock, Random } from "../core/index.ts";
import {
  createJobId,
  ErrorCode,
  errnoCode,
  fromSystemError,
  TimewarpError,
  writeFileAtomic,
} from "../core/index.ts";
import { SCHEMA_VERSION, type TimelineEvent } from "./protocol.ts";

/** Every path of one run directory (seed §2.3), computed in one place. */
export interface RunPaths {
  runDir: string;
  manifest: string;
  timeline: string;
  scripts: string;
  queue: string;
  ack: string;
  reports: string;
  session: string;
  summaryJson: string;
  summaryMd: string;
  debugBundle: string;
  heartbeat: string;
  ready: string;
  /** Who runs the job now (pid, host, since): written at start and by `skill resume`; read by the tool. */
  runner: string;
  /** Written by the tool when it finds its runner gone: since when, and until when it waits. */
  orphan: string;
  /** Held by `skill resume` (and by the close of a stale job) so two never take one job over. */
  resumeLock: string;
  boot: string;
  supervisorLog: string;
  toolStdout: string;
  toolStderr: string;
}

/** `CWD/.skillpilot/runs` (seed §2.1). */
export function runsRootFor(cwd: string): string {
  return join(cwd, ".skillpilot", "runs");
}

export function runPathsFor(runDir: string): RunPaths {
  const session = join(runDir, "session");
  return {
    runDir,
    manifest: join(runDir, "job_manifest.json"),
    timeline: join(runDir, "job_timeline.jsonl"),
    scripts: join(runDir, "scripts"),
    queue: join(runDir, "queue"),
    ack: join(runDir, "ack"),
    reports: join(runDir, "reports"),
    session,
    summaryJson: join(runDir, "summary.json"),
    summaryMd: join(runDir, "summary.md"),
    debugBundle: join(runDir, "debug_bundle"),
    heartbeat: join(session, "heartbeat"),
    ready: join(session, "ready.json"),
    runner: join(session, "runner.json"),
    orphan: join(session, "orphan.json"),
    resumeLock: join(session, "resume.lock"),
    boot: join(session, "boot.tcl"),
    supervisorLog: join(session, "supervisor.log"),
    toolStdout: join(session, "tool.stdout.log"),
    toolStderr: join(session, "tool.stderr.log"),
  };
}

/**
 * How protocol files reach the disk. Injectable so tests can make a write fail (ENOSPC) at a
 * chosen file; the default is core's temp-file + rename, and one O_APPEND write per line.
 */
export interface ProtocolIo {
  writeFile(path: string, data: string): void;
  appendLine(path: string, line: string): void;
}

export const defaultProtocolIo: ProtocolIo = {
  writeFile: (path, data) => writeFileAtomic(path, data, { durable: false }),
  appendLine: (path, line) => {
    let fd: number | undefined;
    try {
      fd = openSync(path, "a", 0o644);
      // one write of one whole line: concurrent appenders never interleave inside a line
      writeSync(fd, line.endsWith("\n") ? line : `${line}\n`);
    } catch (error) {
      throw fromSystemError(error, `appending to ${path}`);
    } finally {
      if (fd !== undefined) closeSync(fd);
    }
  },
};

/**
 * Create `CWD/.skillpilot/runs/<job_id>/` with its fixed layout. The job directory is made with
 * an exclusive mkdir, so two jobs started in the same second by the same pid still get distinct
 * ids (§2.2: unique within a CWD, never reused).
 */
export function createRunDir(options: { cwd: string; clock: Clock; random: Random }): {
  jobId: string;
  paths: RunPaths;
} {
  const root = runsRootFor(options.cwd);
  try {
    mkdirSync(root, { recursive: true });
  } catch (error) {
    throw fromSystemError(error, `creating ${root}`);
  }
  for (let attempt = 0; attempt < 20; attempt++) {
    const jobId = createJobId(options.clock, options.random);
    const runDir = join(root, jobId);
    try {
      mkdirSync(runDir);
    } catch (error) {
      if (errnoCode(error) === "EEXIST") continue;
      throw fromSystemError(error, `creating ${runDir}`);
    }
    const paths = runPathsFor(runDir);
    try {
      for (const dir of [paths.scripts, paths.queue, paths.ack, paths.reports, paths.session]) {
        mkdirSync(dir);
      }
    } catch (error) {
      throw fromSystemError(error, `creating the layout of ${runDir}`);
    }
    return { jobId, paths };
  }
  throw new TimewarpError(ErrorCode.INTERNAL, `could not find a free job id under ${root}`);
}

export type TimelineInput = Omit<TimelineEvent, "schema_version" | "ts" | "job_id">;

/** The append-only timeline of one job (§4). */
export interface Timeline {
  append(event: TimelineInput): void;
}

export function createTimeline(options: {
  path: string;
  jobId: string;
  clock: Clock;
  io: ProtocolIo;
}): Timeline {
  return {
    append(event) {
      const line: TimelineEvent = {
        schema_version: SCHEMA_VERSION,
        ts: options.clock.now().toISOString(),
        job_id: options.jobId,
        ...event,
      };
      options.io.appendLine(options.path, JSON.stringify(line));
    },
  };
}
