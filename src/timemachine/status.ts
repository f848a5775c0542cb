import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import { type LockHolder, readJsonFile, readLockHolder, workspacePaths } from "../core/index.ts";
import { runningWatchDaemon } from "../store/index.ts";
import { PAST_WORK_DIR } from "./experiment-patch.ts";
import { initialState, type State, StateSchema, type Transition } from "./state.ts";

export interface WorkspaceStatus {
  workspace_root: string;
  initialized: boolean;
  mode: State["mode"];
  session_id: string | null;
  session_snapshot_id: string | null;
  current_snapshot_id: string | null;
  backup_path: string | null;
  entered_at: string | null;
  lock: LockHolder | null;
  /** A travel/return interrupted mid-way (run `timewarp recover`), else null. */
  transition: Transition | null;
  /** The watch daemon sparing scans their walk (`timewarp watch`), when one runs. */
  watcher: { pid: number; started_at: string; directories: number } | null;
  /** Work done in past travels that `return` kept as patches (`.timewarp/past-work/`), newest first. */
  past_work: PastWorkEntry[];
}

export interface PastWorkEntry {
  backup_id: string;
  snapshot_id: string;
  saved_at: string;
  files: number;
  patch_path: string;
}

/** `timewarp status`: mode, session, current snapshot, lock. Reads only; never creates `.timewarp/`. */
export function readStatus(root: string): WorkspaceStatus {
  const paths = workspacePaths(root);
  const initialized = existsSync(paths.data);
  const state = existsSync(paths.state)
    ? readJsonFile(paths.state, StateSchema)
    : initialState(paths.root);
  return {
    workspace_root: paths.root,
    initialized,
    mode: state.mode,
    session_id: state.session_id,
    session_snapshot_id: state.session_snapshot_id,
    current_snapshot_id: state.current_snapshot_id,
    backup_path: state.backup_path,
    entered_at: state.entered_at,
    lock: readLockHolder(paths.lock),
    transition: state.transition ?? null,
    watcher: watcherOf(paths.root),
    past_work: listPastWork(paths.data),
  };
}

const PastWorkSchema = z
  .object({
    backup_id: z.string(),
    snapshot_id: z.string(),
    saved_at: z.string(),
    patch: z.string(),
    files: z.array(z.string()),
  })
  .passthrough();

/** The kept past work; a description that cannot be read is skipped (status never fails on it). */
function listPastWork(data: string): PastWorkEntry[] {
  const dir = join(data, PAST_WORK_DIR);
  let names: string[];
  try {
    names = readdirSync(dir).filter((n) => n.endsWith(".json"));
  } catch {
    return [];
  }
  const out: PastWorkEntry[] = [];
  for (const name of names) {
    try {
      const w = PastWorkSchema.parse(JSON.parse(readFileSync(join(dir, name), "utf8")));
      out.push({
        backup_id: w.backup_id,
        snapshot_id: w.snapshot_id,
        saved_at: w.saved_at,
        files: w.files.length,
        patch_path: join(dir, w.patch),
      });
    } catch {
      // a torn or hand-edited description: the patch beside it is still there
    }
  }
  return out.sort((a, b) => (a.saved_at < b.saved_at ? 1 : -1));
}

function watcherOf(root: string): WorkspaceStatus["watcher"] {
  const w = runningWatchDaemon(root);
  return w === null ? null : { pid: w.pid, started_at: w.started_at, directories: w.directories };
}
