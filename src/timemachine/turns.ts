import { mkdirSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import {
  acquireLockQueued,
  appendEvent,
  type Clock,
  createTurnId,
  ErrorCode,
  isTempName,
  type Random,
  readEachFlagged,
  readJsonFile,
  systemClock,
  systemRandom,
  TimewarpError,
  TURN_ID_PATTERN,
  type WorkspacePaths,
  workspacePaths,
  writeJsonAtomic,
} from "../core/index.ts";
import { createSnapshot, readSnapshot, type ScanHow, type SnapshotRecord } from "../store/index.ts";
import { redactSecrets } from "./redact.ts";
import { assertSessionId, readSession, sessionFileName } from "./sessions.ts";
import { assertNoTransition, readState } from "./state-file.ts";

/**
 * A turn checkpoint: one per user prompt, in `.timewarp/turns/<session>/<turn>.json` (written
 * whole: temp + rename). It names the snapshot of the workspace as the prompt found it, so
 * `rewind` can put the code back to before that turn, whatever changed it since (the agent's
 * tools, its shell, the user).
 */
export const TurnRecordSchema = z
  .object({
    schema_version: z.literal(1),
    turn_id: z.string().regex(TURN_ID_PATTERN),
    session_id: z.string(),
    /** 1 for the session's first prompt, then counting up. */
    turn: z.number().int().positive(),
    created_at: z.string(),
    /** The agent the prompt came from (`claude-code`, `codex`, `gemini`, `opencode`), if known. */
    agent: z.string().nullable(),
    /** The prompt's first line, secrets redacted, cut at `PROMPT_CHARS`. */
    prompt: z.string(),
    snapshot_id: z.string(),
    /**
     * False when nothing had changed since the previous checkpoint: its snapshot stands for this
     * one, and nothing new was stored.
     */
    stored: z.boolean(),
  })
  .passthrough();

export type TurnRecord = z.infer<typeof TurnRecordSchema>;

/** How much of the prompt's first line a turn keeps. */
const PROMPT_CHARS = 120;
/** How long a checkpoint waits for another command holding the workspace lock. */
const LOCK_WAIT_MS = 5_000;

const turnFileName = (turn: number) => `${String(turn).padStart(6, "0")}.json`;
const TURN_FILE = /^\d{6,}\.json$/;

function sessionTurnsDir(paths: WorkspacePaths, sessionId: string): string {
  return join(paths.turns, sessionFileName(sessionId));
}

/** The turn numbers recorded for a session (from the file names), ascending. */
function turnNumbers(dir: string): number[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  return names
    .filter((n) => TURN_FILE.test(n) && !isTempName(n))
    .map((n) => Number.parseInt(n, 10))
    .sort((a, b) => a - b);
}

function readTurnFile(dir: string, turn: number): TurnRecord {
  return readJsonFile(join(dir, turnFileName(turn)), TurnRecordSchema);
}

/** The prompt's first non-blank line, secrets redacted, cut to `PROMPT_CHARS`. */
export async function promptHeadline(prompt: string | null | undefined): Promise<string> {
  const line = (prompt ?? "").split(/\r?\n/).find((l) => l.trim() !== "") ?? "";
  // Redacted whole before it is cut: a cut could leave a secret's head no detector knows.
  const redacted = (await redactSecrets(line.trim())).replace(/\s+/g, " ");
  return redacted.length > PROMPT_CHARS ? `${redacted.slice(0, PROMPT_CHARS - 1)}…` : redacted;
}

export interface CheckpointTurnOptions {
  root: string;
  sessionId: string;
  /** The user's prompt; only its first line is kept, redacted. */
  prompt?: string | null;
  agent?: string | null;
  /**
   * Hand the writing (the snapshot's record, the stat cache, the turn file, the event) to the
   * caller, to run after it has answered (the hook server: `ctx.later`). The scan, and with it
   * what the checkpoint holds, is done before this returns; the workspace lock is held until
   * the task has run. Without it everything is written before this returns.
   */
  later?: (task: () => void) => void;
  clock?: Clock;
  random?: Random;
}

export interface CheckpointTurnResult {
  /** The turn recorded; null when none was (`skipped` says why). */
  turn: TurnRecord | null;
  skipped: string | null;
  /** How the workspace was scanned (null when skipped). */
  scan: ScanHow | null;
  duration_ms: number;
}

/**
 * A turn checkpoint (a user prompt: Claude Code's and Codex's UserPromptSubmit, Gemini CLI's
 * BeforeAgent, OpenCode's chat message): snapshot the workspace, incrementally (the stat cache
 * and the watch daemon's journal: only what changed is read), and record the turn. When nothing
 * changed since the session's previous checkpoint (or its session snapshot, before the first
 * prompt), no snapshot is written: the turn names the previous one (`stored: false`). Under
 * the workspace lock, waited for up to 5 s without blocking the event loop. In the past (a
 * travel is active) no turn is recorded: the tree is the travel's, not the session's
 * (`skipped`). TRANSITION_INTERRUPTED while a travel or return awaits recover.
 */
export async function checkpointTurn(
  options: CheckpointTurnOptions,
): Promise<CheckpointTurnResult> {
  const started = performance.now();
  assertSessionId(options.sessionId);
  const paths = workspacePaths(options.root);
  const clock = options.clock ?? systemClock;
  const random = options.random ?? systemRandom;
  const done = (turn: TurnRecord | null, skipped: string | null, scan: ScanHow | null) => ({
    turn,
    skipped,
    scan,
    duration_ms: Math.round(performance.now() - started),
  });
  assertNoTransition(readState(paths), paths);
  const prompt = await promptHeadline(options.prompt);
  const lock = await acquireLockQueued(paths.lock, {
    command: `turn checkpoint ${options.sessionId}`,
    waitMs: LOCK_WAIT_MS,
  });
  // Released when the writing is done, or here when nothing is handed over.
  let handedOver = false;
  try {
    const state = readState(paths);
    assertNoTransition(state, paths);
    if (state.mode === "past") {
      return done(
        null,
        `a travel is active (at ${state.current_snapshot_id}): no checkpoint in the past`,
        null,
      );
    }
    const dir = sessionTurnsDir(paths, options.sessionId);
    const last = turnNumbers(dir).at(-1) ?? 0;
    const base = previousCheckpoint(paths, options.sessionId, dir, last);
    const snap = createSnapshot(paths.root, {
      sessionId: options.sessionId,
      origin: "turn",
      ...(base === null ? {} : { reuse: base }),
      deferRecord: true,
      clock,
      random,
    });
    const record: TurnRecord = {
      schema_version: 1,
      turn_id: createTurnId(clock, random),
      session_id: options.sessionId,
      turn: last + 1,
      created_at: clock.now().toISOString(),
      agent: options.agent ?? null,
      prompt,
      snapshot_id: snap.id,
      stored: snap.reused !== true,
    };
    // The snapshot's record first, then the turn naming it: a crash between leaves a snapshot
    // no turn names (cleanup deletes it), never a turn without its snapshot.
    const write = () => {
      try {
        snap.publish?.();
        mkdirSync(dir, { recursive: true });
        writeJsonAtomic(join(dir, turnFileName(record.turn)), record, { durable: false });
        appendEvent(
          paths.events,
          "turn.checkpointed",
          {
            session_id: record.session_id,
            turn: record.turn,
            snapshot_id: record.snapshot_id,
            stored: record.stored,
            // the dashboard's timeline shows the turn without opening its file
            agent: record.agent,
            prompt: record.prompt,
          },
          clock,
        );
      } finally {
        lock.release();
      }
    };
    handedOver = true;
    if (options.later === undefined) write();
    else options.later(write);
    return done(record, null, snap.scan);
  } finally {
    if (!handedOver) lock.release();
  }
}

/**
 * The checkpoint a new one is compared with: the session's last turn's snapshot, else its
 * session snapshot, while it is there and reads; null when there is none (then one is taken).
 */
function previousCheckpoint(
  paths: WorkspacePaths,
  sessionId: string,
  dir: string,
  last: number,
): SnapshotRecord | null {
  const candidates: (() => string | null | undefined)[] = [
    () => (last > 0 ? readTurnFile(dir, last).snapshot_id : null),
    () => readSession(paths, sessionId)?.snapshot_id,
  ];
  for (const id of candidates) {
    try {
      const snapshotId = id();
      if (snapshotId) return readSnapshot(paths.root, snapshotId);
    } catch {
      // gone or unreadable: the next candidate, or a snapshot of its own
    }
  }
  return null;
}

/** A session's turns as recorded, and the turn files that did not read. */
export interface SessionTurns {
  session_id: string;
  turns: TurnRecord[];
  corrupt: { file: string; code: string; message: string }[];
}

/** Every turn of one session, oldest first; a turn file that does not read is flagged, not hidden. */
export function readSessionTurns(root: string, sessionId: string): SessionTurns {
  assertSessionId(sessionId);
  const paths = workspacePaths(root);
  const dir = sessionTurnsDir(paths, sessionId);
  const { read, failed } = readEachFlagged(turnNumbers(dir), (n) => readTurnFile(dir, n));
  return {
    session_id: sessionId,
    turns: read,
    corrupt: failed.map(({ key, error }) => ({
      file: join(dir, turnFileName(key)),
      code: error.code,
      message: error.message,
    })),
  };
}

/** The sessions with turns, the one that prompted last first: its id, turn count, last prompt time. */
export function listTurnSessions(
  root: string,
): { session_id: string; turns: number; last_at: string }[] {
  const paths = workspacePaths(root);
  let names: string[];
  try {
    names = readdirSync(paths.turns);
  } catch {
    return [];
  }
  const out: { session_id: string; turns: number; last_at: string }[] = [];
  for (const name of names) {
    const dir = join(paths.turns, name);
    const numbers = turnNumbers(dir);
    const last = numbers.at(-1);
    if (last === undefined) continue;
    try {
      const record = readTurnFile(dir, last);
      out.push({
        session_id: record.session_id,
        turns: numbers.length,
        last_at: record.created_at,
      });
    } catch {
      // a session whose last turn does not read is listed when asked for by name
    }
  }
  return out.sort((a, b) => (a.last_at < b.last_at ? 1 : a.last_at > b.last_at ? -1 : 0));
}

/**
 * The turn `ref` names: a turn number of `sessionId` (default: the session that prompted last)
 * or a turn id (`t_…`, any session). TURN_NOT_FOUND, with the turns there are, otherwise.
 */
export function findTurn(root: string, ref: string, sessionId?: string): TurnRecord {
  const sessions = listTurnSessions(root);
  if (TURN_ID_PATTERN.test(ref)) {
    const ids = sessionId === undefined ? sessions.map((s) => s.session_id) : [sessionId];
    for (const id of ids) {
      const hit = readSessionTurns(root, id).turns.find((t) => t.turn_id === ref);
      if (hit !== undefined) return hit;
    }
    throw new TimewarpError(ErrorCode.TURN_NOT_FOUND, `turn ${ref} is not recorded`, {
      data: { turn: ref },
    });
  }
  const session = sessionId ?? sessions[0]?.session_id;
  if (session === undefined) {
    throw new TimewarpError(
      ErrorCode.TURN_NOT_FOUND,
      "no turn is recorded in this workspace: turns are checkpointed on each user prompt once the agent's hooks are installed (`timewarp install <agent>`)",
      { data: { turn: ref, available: [] } },
    );
  }
  const n = /^\d+$/.test(ref) ? Number.parseInt(ref, 10) : Number.NaN;
  if (!Number.isInteger(n) || n < 1) {
    throw new TimewarpError(
      ErrorCode.INVALID_INPUT,
      `turn ${JSON.stringify(ref)}: expected a turn number (1, 2, …) or a turn id (t_…)`,
      { data: { turn: ref } },
    );
  }
  const { turns } = readSessionTurns(root, session);
  const hit = turns.find((t) => t.turn === n);
  if (hit !== undefined) return hit;
  throw new TimewarpError(
    ErrorCode.TURN_NOT_FOUND,
    `turn ${n} of session ${session} is not recorded (have ${turns.length}: ${turns.map((t) => t.turn).join(", ") || "none"})`,
    { data: { turn: ref, session_id: session, available: turns.map((t) => t.turn) } },
  );
}

/**
 * What a session start's cleanup keeps of the turns: the sessions that are live or among the
 * `keep` that prompted last (0: all), and the snapshots their turns name (`refs`); `drop` lists
 * the other sessions, whose turn folders `removeTurnSessions` deletes before their snapshots go
 * (so no kept turn ever names a deleted snapshot). Reads only.
 */
export function turnRetention(
  root: string,
  options: { keep: number; live: ReadonlySet<string> },
): { refs: Set<string>; drop: string[] } {
  const sessions = listTurnSessions(root);
  const drop = sessions
    .filter((s, i) => options.keep !== 0 && i >= options.keep && !options.live.has(s.session_id))
    .map((s) => s.session_id);
  const dropped = new Set(drop);
  const refs = new Set<string>();
  const paths = workspacePaths(root);
  let names: string[] = [];
  try {
    names = readdirSync(paths.turns);
  } catch {
    // no turns yet
  }
  for (const name of names) {
    const dir = join(paths.turns, name);
    for (const n of turnNumbers(dir)) {
      // An unreadable turn cannot be rewound to: it keeps nothing (`rewind` lists it as corrupt).
      try {
        const t = readTurnFile(dir, n);
        if (!dropped.has(t.session_id)) refs.add(t.snapshot_id);
      } catch {
        // flagged by the listing
      }
    }
  }
  return { refs, drop };
}

/** Delete the turn folders of these sessions (`turnRetention`'s `drop`). */
export function removeTurnSessions(root: string, sessionIds: readonly string[]): void {
  const paths = workspacePaths(root);
  for (const id of sessionIds) rmSync(sessionTurnsDir(paths, id), { recursive: true, force: true });
}
