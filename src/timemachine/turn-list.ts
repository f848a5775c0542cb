import { workspacePaths } from "../core/index.ts";
import { readManifest, readSnapshot, type SnapshotRecord } from "../store/index.ts";
import { changedPaths, type PathChange, type TreeState } from "./plan-rewind.ts";
import { readConfigOf, scanNow, travelExcludes } from "./store-adapter.ts";
import { listTurnSessions, readSessionTurns, type TurnRecord } from "./turns.ts";

/** At most this many changed paths are listed per turn (`files_changed_count` has them all). */
const LISTED_PATHS = 200;

/** A turn as `rewind` lists it. */
export interface TurnView {
  turn: number;
  turn_id: string;
  created_at: string;
  agent: string | null;
  prompt: string;
  snapshot_id: string;
  /** False when nothing had changed since the turn before: its checkpoint stands for this one. */
  stored: boolean;
  /**
   * What changed from this prompt to the next one (`until: "next_turn"`), or to the workspace
   * now for the last turn (`until: "now"`), whoever changed it: the agent's tools, its shell, the
   * user, a rewind. At most 200 paths; `files_changed_count` counts them all.
   */
  files_changed: PathChange[];
  files_changed_count: number;
  until: "next_turn" | "now";
  /** Why the turn cannot be rewound to (its checkpoint's snapshot was deleted or does not read). */
  missing?: string;
}

export interface TurnListing {
  /** The session listed (default: the one that prompted last); null when none has turns. */
  session_id: string | null;
  turns: TurnView[];
  /** Every session with turns, the one that prompted last first. */
  sessions: { session_id: string; turns: number; last_at: string }[];
  /** Turn files of this session that do not read: named, never hidden. */
  corrupt: { file: string; code: string; message: string }[];
}

/**
 * The turns of a session (default: the one that prompted last), oldest first, each with what
 * changed between its prompt and the next (the last: until now; the workspace is scanned,
 * nothing is written). Reads only.
 */
export function listTurns(options: { root: string; sessionId?: string }): TurnListing {
  const root = workspacePaths(options.root).root;
  const sessions = listTurnSessions(root);
  const sessionId = options.sessionId ?? sessions[0]?.session_id;
  if (sessionId === undefined) return { session_id: null, turns: [], sessions, corrupt: [] };
  const { turns, corrupt } = readSessionTurns(root, sessionId);
  const config = readConfigOf(root);
  const trees = new Map<string, { record: SnapshotRecord; tree: TreeState } | string>();
  const treeOf = (id: string) => {
    let got = trees.get(id);
    if (got === undefined) {
      try {
        const record = readSnapshot(root, id);
        got = { record, tree: { manifest: readManifest(root, record), skipped: record.skipped } };
      } catch (error) {
        got = error instanceof Error ? error.message : String(error);
      }
      trees.set(id, got);
    }
    return got;
  };
  let now: TreeState | undefined;
  const views = turns.map((t: TurnRecord, i): TurnView => {
    const next = turns[i + 1];
    const from = treeOf(t.snapshot_id);
    const base = {
      turn: t.turn,
      turn_id: t.turn_id,
      created_at: t.created_at,
      agent: t.agent,
      prompt: t.prompt,
      snapshot_id: t.snapshot_id,
      stored: t.stored,
      until: next === undefined ? ("now" as const) : ("next_turn" as const),
    };
    if (typeof from === "string") {
      return { ...base, files_changed: [], files_changed_count: 0, missing: from };
    }
    const excludes = travelExcludes(config, from.record);
    let to: TreeState | string;
    if (next === undefined) {
      now ??= scanNow(root, excludes);
      to = now;
    } else {
      const got = treeOf(next.snapshot_id);
      to = typeof got === "string" ? got : got.tree;
    }
    const changed =
      typeof to === "string" || next?.snapshot_id === t.snapshot_id
        ? []
        : changedPaths(from.tree, to, excludes);
    return {
      ...base,
      files_changed: changed.slice(0, LISTED_PATHS),
      files_changed_count: changed.length,
    };
  });
  return { session_id: sessionId, turns: views, sessions, corrupt };
}

/** A turn whose checkpoint is a given snapshot (what `rewind` to that turn restores). */
export interface TurnAtSnapshot {
  session_id: string;
  turn: number;
  turn_id: string;
  created_at: string;
  prompt: string;
}

/**
 * The turns whose checkpoint is snapshot `snapshotId` (several when nothing changed between
 * prompts: they share one), from the turn records alone: no scan. A snapshot that names its
 * session is looked up there only; one that does not, in every session with turns.
 */
export function turnsAtSnapshot(options: {
  root: string;
  snapshotId: string;
  sessionId: string | null;
}): TurnAtSnapshot[] {
  const root = workspacePaths(options.root).root;
  const ids =
    options.sessionId !== null
      ? [options.sessionId]
      : listTurnSessions(root).map((s) => s.session_id);
  const out: TurnAtSnapshot[] = [];
  for (const id of ids) {
    let turns: TurnRecord[];
    try {
      turns = readSessionTurns(root, id).turns;
    } catch {
      continue; // a session id the turn folder cannot hold has no turns
    }
    for (const t of turns)
      if (t.snapshot_id === options.snapshotId)
        out.push({
          session_id: t.session_id,
          turn: t.turn,
          turn_id: t.turn_id,
          created_at: t.created_at,
          prompt: t.prompt,
        });
  }
  return out;
}
