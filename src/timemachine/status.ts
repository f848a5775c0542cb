import { existsSync } from "node:fs";
import { type LockHolder, readJsonFile, readLockHolder, workspacePaths } from "../core/index.ts";
import { runningWatchDaemon } from "../store/index.ts";
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
  };
}

function watcherOf(root: string): WorkspaceStatus["watcher"] {
  const w = runningWatchDaemon(root);
  return w === null ? null : { pid: w.pid, started_at: w.started_at, directories: w.directories };
}
