import { join, resolve } from "node:path";

/** The name of the data directory; always excluded from snapshots, never touched by a restore. */
export const DATA_DIR = ".timewarp";

/** Every path inside `<workspace>/.timewarp/`, computed in one place. */
export interface WorkspacePaths {
  root: string;
  data: string;
  config: string;
  state: string;
  lock: string;
  objects: string;
  snapshots: string;
  backups: string;
  issues: string;
  history: string;
  memory: string;
  /** The goal of the work in progress (memory lab): the drift guards score edits against it. */
  goal: string;
  events: string;
  /** The stat cache of the last scan (store). */
  statCache: string;
  /**
   * A link to the manifest file of the last snapshot or backup, which the stat cache names: it
   * outlives that record (a return deletes its backup), so the next snapshot can still edit it.
   */
  lastManifest: string;
  /** Per-session records (time machine), one file per live session. */
  sessions: string;
  /** Turn checkpoints (time machine): `turns/<session>/<turn>.json`, one per user prompt. */
  turns: string;
  /** Scratch space for multi-step writes (folders built aside, then renamed in). */
  tmp: string;
}

export function workspacePaths(root: string): WorkspacePaths {
  const abs = resolve(root);
  const data = join(abs, DATA_DIR);
  return {
    root: abs,
    data,
    config: join(data, "config.json"),
    state: join(data, "state.json"),
    lock: join(data, "lock"),
    objects: join(data, "objects"),
    snapshots: join(data, "snapshots"),
    backups: join(data, "present_backup"),
    issues: join(data, "issues"),
    history: join(data, "history"),
    memory: join(data, "memory"),
    goal: join(data, "memory", "goal.json"),
    events: join(data, "events.jsonl"),
    statCache: join(data, "stat-cache.bin"),
    lastManifest: join(data, "last-manifest.json.br"),
    sessions: join(data, "sessions"),
    turns: join(data, "turns"),
    tmp: join(data, "tmp"),
  };
}
