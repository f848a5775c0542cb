import type { State } from "./state.ts";

export interface CleanupInput {
  snapshotIds: readonly string[];
  backupIds: readonly string[];
  /** Snapshot ids referenced by some issue.json. */
  issueRefs: ReadonlySet<string>;
  /** Snapshot ids of sessions that are still alive. */
  liveSessionRefs: ReadonlySet<string>;
  state: State;
  newSnapshotId: string;
}

export interface CleanupPlan {
  /** Null when cleanup runs; else why it was skipped (seed §9: never while `mode=past`). */
  skipped: string | null;
  deleteSnapshots: string[];
  deleteBackups: string[];
  /** Each kept snapshot with the first reason it is kept. */
  kept: { snapshot_id: string; reason: string }[];
}

/**
 * The seed's cleanup (§9), pure: after a new session snapshot, delete the snapshots no issue
 * references — never the new one, never while in the past or while a travel/return awaits
 * recover, never one a live session, the state or the journal points at. Backups no state or
 * journal points at are leftovers of finished or undone transitions and go too.
 */
export function planCleanup(input: CleanupInput): CleanupPlan {
  const { state } = input;
  if (state.mode === "past") {
    return { skipped: "mode=past", deleteSnapshots: [], deleteBackups: [], kept: [] };
  }
  if (state.transition) {
    return {
      skipped: `a ${state.transition.kind} awaits recover`,
      deleteSnapshots: [],
      deleteBackups: [],
      kept: [],
    };
  }
  const reasonFor = (id: string): string | null => {
    if (id === input.newSnapshotId) return "new session snapshot";
    if (input.issueRefs.has(id)) return "referenced by an issue";
    if (input.liveSessionRefs.has(id)) return "snapshot of a live session";
    if (id === state.current_snapshot_id) return "current snapshot";
    if (id === state.session_snapshot_id) return "state.session_snapshot_id";
    return null;
  };
  const deleteSnapshots: string[] = [];
  const kept: CleanupPlan["kept"] = [];
  for (const id of input.snapshotIds) {
    const reason = reasonFor(id);
    if (reason === null) deleteSnapshots.push(id);
    else kept.push({ snapshot_id: id, reason });
  }
  const neededBackup = state.backup_path?.split("/").pop();
  const deleteBackups = input.backupIds.filter((id) => id !== neededBackup);
  return { skipped: null, deleteSnapshots, deleteBackups, kept };
}
