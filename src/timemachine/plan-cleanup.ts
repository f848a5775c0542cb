import type { State } from "./state.ts";

export interface CleanupInput {
  snapshotIds: readonly string[];
  backupIds: readonly string[];
  /** Snapshot ids referenced by some issue.json. */
  issueRefs: ReadonlySet<string>;
  /** Snapshot ids of sessions that are still alive. */
  liveSessionRefs: ReadonlySet<string>;
  /** Snapshot ids the kept turn checkpoints name (`timewarp rewind` goes back to them). */
  turnRefs?: ReadonlySet<string>;
  state: State;
  newSnapshotId: string;
  /** Pinned snapshots (`snapshot pin`): never deleted. */
  pinned?: ReadonlySet<string>;
  /** Snapshots made by hand (`snapshot create`), with their creation time. */
  manual?: readonly { snapshot_id: string; created_at: string }[];
  /**
   * The config's retention for hand-made snapshots: keep the newest `keep` (0: all) and none
   * older than `maxAgeDays` (0: no limit). Absent: all are kept (the default).
   */
  manualRetention?: { keep: number; maxAgeDays: number; now: Date };
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
 * recover, never one a live session, a kept turn checkpoint, the state or the journal points
 * at, never a pinned one, and never one made by hand unless the config's retention lets it go (issue 16, class 9: the
 * user's own snapshots are the user's). Backups no state or journal points at are leftovers of
 * finished or undone transitions and go too.
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
  const pinned = input.pinned ?? new Set<string>();
  const keptManual = manualToKeep(input);
  const reasonFor = (id: string): string | null => {
    if (id === input.newSnapshotId) return "new session snapshot";
    if (pinned.has(id)) return "pinned";
    if (keptManual.has(id)) return "made by hand";
    if (input.issueRefs.has(id)) return "referenced by an issue";
    if (input.liveSessionRefs.has(id)) return "snapshot of a live session";
    if (input.turnRefs?.has(id)) return "turn checkpoint";
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

/** The hand-made snapshots the retention keeps: all by default. */
function manualToKeep(input: CleanupInput): Set<string> {
  const manual = input.manual ?? [];
  const r = input.manualRetention;
  if (r === undefined || (r.keep === 0 && r.maxAgeDays === 0)) {
    return new Set(manual.map((m) => m.snapshot_id));
  }
  const newestFirst = [...manual].sort((a, b) => (a.created_at < b.created_at ? 1 : -1));
  const byCount = r.keep === 0 ? newestFirst : newestFirst.slice(0, r.keep);
  const cutoff = r.now.getTime() - r.maxAgeDays * 86_400_000;
  const byAge =
    r.maxAgeDays === 0 ? byCount : byCount.filter((m) => Date.parse(m.created_at) >= cutoff);
  return new Set(byAge.map((m) => m.snapshot_id));
}
