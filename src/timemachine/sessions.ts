import { existsSync, mkdirSync, readdirSync, unlinkSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import {
  type Clock,
  ErrorCode,
  isProcessAlive,
  isSameProcess,
  isTempName,
  processStartOf,
  readJsonFile,
  systemClock,
  TimewarpError,
  type WorkspacePaths,
  workspacePaths,
  writeJsonAtomic,
} from "../core/index.ts";

/**
 * One record per session in `.timewarp/sessions/<session_id>.json`. Several sessions share a
 * workspace (an agent and its subagents, two terminals); each keeps its own snapshot, so a
 * second session can neither overwrite nor let cleanup delete the first one's.
 */
export const SessionRecordSchema = z
  .object({
    schema_version: z.literal(1),
    session_id: z.string(),
    snapshot_id: z.string().nullable(),
    transcript_path: z.string().nullable(),
    /** A process whose life bounds the session's (the agent, or the terminal's shell). */
    pid: z.number().int().nullable(),
    /**
     * When that process started (`processStartOf`), where the OS tells: with it, a pid that is
     * gone, or now names a process that started at another time, ends the session at once.
     * Absent in older records and where the OS does not tell (then the TTL decides).
     */
    process_start: z.string().nullable().optional(),
    host: z.string(),
    started_at: z.string(),
    last_seen: z.string(),
    task_hint: z.string().nullable().optional(),
    /** Set by the SessionEnd hook: the session is over and no longer holds its snapshot. */
    ended_at: z.string().nullable().optional(),
    /**
     * When the session started again under its id (`claude --continue`/`--resume`): the same
     * session, so it kept its snapshot (issue 17). Absent until the first resume.
     */
    resumed_at: z.array(z.string()).optional(),
    /** The agent the session came from (the hook's `--agent`), for `timewarp doctor`. */
    agent: z.string().nullable().optional(),
  })
  .passthrough();

export type SessionRecord = z.infer<typeof SessionRecordSchema>;

const SESSION_ID = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;

/** A session whose pid is gone and that was not seen for this long no longer holds its snapshot. */
export const SESSION_TTL_MS = 12 * 60 * 60 * 1000;

export function assertSessionId(id: string): void {
  if (!SESSION_ID.test(id)) {
    throw new TimewarpError(
      ErrorCode.INVALID_INPUT,
      `invalid session id ${JSON.stringify(id)}: expected 1-128 characters of [A-Za-z0-9._:-]`,
      { data: { session_id: id } },
    );
  }
}

/** A session's name on disk (`:` is not portable in file names). */
export function sessionFileName(id: string): string {
  return id.replace(/:/g, "_");
}

function sessionFile(paths: WorkspacePaths, id: string): string {
  return join(paths.sessions, `${sessionFileName(id)}.json`);
}

export function readSession(paths: WorkspacePaths, id: string): SessionRecord | undefined {
  assertSessionId(id);
  const file = sessionFile(paths, id);
  return existsSync(file) ? readJsonFile(file, SessionRecordSchema) : undefined;
}

/** Every session record, most recently seen first. A corrupt record is CORRUPT_FILE, never skipped. */
export function listSessions(paths: WorkspacePaths): SessionRecord[] {
  if (!existsSync(paths.sessions)) return [];
  return readdirSync(paths.sessions)
    .filter((n) => n.endsWith(".json") && !isTempName(n))
    .map((n) => readJsonFile(join(paths.sessions, n), SessionRecordSchema))
    .sort((a, b) => b.last_seen.localeCompare(a.last_seen));
}

export function writeSession(paths: WorkspacePaths, record: SessionRecord): void {
  mkdirSync(paths.sessions, { recursive: true });
  writeJsonAtomic(sessionFile(paths, record.session_id), record, { durable: false });
}

export interface RememberSessionOptions {
  root: string;
  sessionId: string;
  /** Claude Code's `transcript_path` (JSONL), or any transcript file; `issue_report` exports it. */
  transcriptPath?: string | null;
  /**
   * The process that bounds the session; default the caller's parent (the agent or the shell).
   * Its start time is read when it is recorded (`process_start`).
   */
  pid?: number | null;
  taskHint?: string | null;
  /** Set by `startSession`. */
  snapshotId?: string;
  /** Set by `startSession` when the session starts again under its id: now joins `resumed_at`. */
  resumed?: boolean;
  /** The agent the session came from (`claude-code`, `codex`…), kept once known. */
  agent?: string;
  clock?: Clock;
}

/**
 * Create or refresh the record of a session (SessionStart hook; any later hook may call it to
 * mark the session as alive). Keeps what it is not told: a refresh without a transcript path
 * does not forget the one remembered.
 */
export function rememberSession(options: RememberSessionOptions): SessionRecord {
  assertSessionId(options.sessionId);
  const paths = workspacePaths(options.root);
  const now = (options.clock ?? systemClock).now().toISOString();
  const prev = readSession(paths, options.sessionId);
  const pid = options.pid === undefined ? (prev?.pid ?? process.ppid) : options.pid;
  const record: SessionRecord = {
    schema_version: 1,
    session_id: options.sessionId,
    snapshot_id: options.snapshotId ?? prev?.snapshot_id ?? null,
    transcript_path:
      options.transcriptPath === undefined
        ? (prev?.transcript_path ?? null)
        : options.transcriptPath,
    pid,
    process_start: pid === null ? null : processStartOf(pid),
    host: hostname(),
    started_at: prev?.started_at ?? now,
    last_seen: now,
    task_hint: options.taskHint ?? prev?.task_hint ?? null,
    // A session that starts again (`--resume`) is alive again.
    ended_at: null,
    ...((options.agent ?? prev?.agent) ? { agent: options.agent ?? prev?.agent } : {}),
    ...(options.resumed === true
      ? { resumed_at: [...(prev?.resumed_at ?? []), now] }
      : prev?.resumed_at === undefined
        ? {}
        : { resumed_at: prev.resumed_at }),
  };
  writeSession(paths, record);
  return record;
}

export interface EndSessionOptions {
  root: string;
  sessionId: string;
  clock?: Clock;
}

/**
 * Mark a session as over (the SessionEnd hook): from now on it is not live, so the next session
 * start's cleanup may delete its snapshot unless an issue references it. Returns the updated
 * record, or null when the session was never recorded (nothing to end).
 */
export function endSession(options: EndSessionOptions): SessionRecord | null {
  const paths = workspacePaths(options.root);
  const prev = readSession(paths, options.sessionId);
  if (prev === undefined) return null;
  const now = (options.clock ?? systemClock).now().toISOString();
  const record: SessionRecord = { ...prev, last_seen: now, ended_at: now };
  writeSession(paths, record);
  return record;
}

/**
 * Alive: not ended, and its process runs on this host, or it was seen within the TTL. A process
 * known by its start time decides alone: gone, or its pid now naming a process that started at
 * another time (reused), ends the session at once (an agent killed before its SessionEnd). A pid
 * of 1 or less bounds nothing (init: what a daemon's parent becomes; older versions recorded
 * it for sessions the hook server started), and a pid without a start time that is gone leaves
 * the TTL to decide.
 */
export function isSessionLive(record: SessionRecord, now: Date): boolean {
  if (record.ended_at) return false;
  const { pid } = record;
  if (pid !== null && pid > 1 && record.host === hostname()) {
    const known = record.process_start ?? null;
    if (known !== null) return isSameProcess(pid, known);
    if (isProcessAlive(pid)) return true;
  }
  return now.getTime() - Date.parse(record.last_seen) < SESSION_TTL_MS;
}

/** A session as `timewarp session list` shows it: its record, and whether it is live. */
export type SessionListing = SessionRecord & { live: boolean };

/**
 * Every session the workspace remembers, most recently seen first, each with `live`
 * (`isSessionLive`): which agent it came from, whether it ended, which snapshot it holds.
 * Reads only; no store, no sessions.
 */
export function listSessionStatus(root: string, clock: Clock = systemClock): SessionListing[] {
  const now = clock.now();
  return listSessions(workspacePaths(root)).map((s) => ({ ...s, live: isSessionLive(s, now) }));
}

export function deleteSession(paths: WorkspacePaths, id: string): void {
  try {
    unlinkSync(sessionFile(paths, id));
  } catch {
    // already gone
  }
}
