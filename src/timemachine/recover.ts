import { mkdirSync } from "node:fs";
import { join } from "node:path";
import {
  acquireLock,
  appendEvent,
  type Clock,
  ErrorCode,
  isTimewarpError,
  systemClock,
  TimewarpError,
  workspacePaths,
} from "../core/index.ts";
import { type LedgerRecovery, recoverLedger } from "../ledger/index.ts";
import { readSnapshot } from "../store/index.ts";
import type { SavedPatch } from "./experiment-patch.ts";
import { scanKeepingLateWork } from "./late-work.ts";
import type { State, Transition } from "./state.ts";
import { readState, writeState } from "./state-file.ts";
import { readBackup, recordSource } from "./store-adapter.ts";
import {
  finishTravel,
  restorePresent,
  type ScannedPresent,
  type StepContext,
  step,
} from "./transition-steps.ts";

export type RecoverOutcome =
  /** A travel killed before its backup was complete: the workspace was never touched. */
  | "travel_undone"
  /** A travel killed while rewriting the workspace: finished, now in the past. */
  | "travel_finished"
  /** A travel that failed or was being undone: the present is back (verified). */
  | "travel_rolled_back"
  /** A return killed mid-way: finished, the present is back (verified). */
  | "return_finished"
  /** No travel or return was interrupted; only a ledger operation was pending (see `ledger`). */
  | "ledger_only";

export interface RecoverResult {
  outcome: RecoverOutcome;
  mode: "present" | "past";
  /** The journal that was found (null: only a ledger operation was pending). */
  transition: Transition | null;
  /** What finishing the ledger's pending operation (an edit or revert killed mid-way) did. */
  ledger: LedgerRecovery;
  snapshot_id: string | null;
  backup_path: string | null;
  /**
   * Where what the workspace held and no record did (a file written during the return, or
   * while the travel or return lay interrupted) was kept before the restore rewrote it: a
   * git-format patch from the backup to the workspace as recover found it, under
   * `.timewarp/recover-kept/`; null when there was nothing to keep.
   */
  kept_path: string | null;
  kept_files: number;
}

/**
 * `timewarp recover`: finish or undo a travel/return that a crash (kill -9, power loss, a full
 * disk) interrupted, from the journal in state.json. Ends in a consistent state — fully
 * present, or fully past with the backup intact — and loses nothing: the present lives in
 * `present_backup/` until a return has verified it back. First it finishes the ledger's pending
 * operation, if a crash left one (an edit or revert: recorded, or rolled back to its
 * pre-images). Before it rewrites the workspace it keeps what no record holds there (a write
 * during a return that failed its verify, an edit made since the crash) as a patch
 * (`kept_path`, see `scanKeepingLateWork`). NOTHING_TO_RECOVER when there is neither journal; LOCKED
 * when the interrupted process (or another) still holds the lock.
 */
export function recover(options: {
  root: string;
  clock?: Clock;
  onStep?: (step: string) => void;
}): RecoverResult {
  const paths = workspacePaths(options.root);
  const clock = options.clock ?? systemClock;
  const ctx: StepContext = { paths, clock, onStep: options.onStep };
  mkdirSync(paths.data, { recursive: true });
  const lock = acquireLock(paths.lock, { command: "recover" });
  try {
    const ledger = recoverLedger({ root: options.root, clock });
    const state = readState(paths);
    const t = state.transition;
    if (!t && ledger.outcome !== "none" && ledger.outcome !== "busy") {
      appendEvent(paths.events, "recover.completed", { outcome: "ledger_only", ledger }, clock);
      return {
        outcome: "ledger_only",
        mode: state.mode,
        transition: null,
        ledger,
        snapshot_id: state.current_snapshot_id,
        backup_path: state.backup_path,
        kept_path: null,
        kept_files: 0,
      };
    }
    if (!t) {
      throw new TimewarpError(
        ErrorCode.NOTHING_TO_RECOVER,
        `no interrupted travel or return in ${paths.state} (mode ${state.mode}), and no pending ledger operation${ledger.outcome === "busy" ? " but the one a live writer is applying" : ""}`,
        { data: { mode: state.mode } },
      );
    }
    step(ctx, "recover:start");
    const { outcome, kept } = recoverFrom(ctx, state, t);
    const after = readState(paths);
    appendEvent(
      paths.events,
      "recover.completed",
      { outcome, kind: t.kind, kept_path: kept?.patch_path ?? null },
      clock,
    );
    return {
      outcome,
      mode: after.mode,
      transition: t,
      ledger,
      snapshot_id: after.current_snapshot_id,
      backup_path: after.backup_path,
      kept_path: kept?.patch_path ?? null,
      kept_files: kept?.files ?? 0,
    };
  } finally {
    lock.release();
  }
}

/** `scanKeepingLateWork`, then the fault point a test kills at. */
function scanAndKeep(
  ctx: StepContext,
  t: Transition,
  backup: ReturnType<typeof readBackup>,
): { scanned: ScannedPresent; kept: SavedPatch | null } {
  const done = scanKeepingLateWork(ctx.paths.root, t, backup, ctx.clock);
  step(ctx, "recover:kept");
  return done;
}

function recoverFrom(
  ctx: StepContext,
  state: State,
  t: Transition,
): { outcome: RecoverOutcome; kept: SavedPatch | null } {
  if (t.kind === "travel" && (t.phase === "backup" || t.backup_id === null)) {
    // Nothing in the workspace was touched; a backup that got published unreferenced is
    // removed by the next session-start cleanup.
    writeState(ctx.paths, { ...state, transition: null });
    return { outcome: "travel_undone", kept: null };
  }
  if (t.backup_id === null) throw new TimewarpError(ErrorCode.INTERNAL, "return without a backup");
  const backup = readBackup(ctx.paths.root, t.backup_id);
  const { scanned, kept } = scanAndKeep(ctx, t, backup);
  if (t.kind === "return") {
    try {
      restorePresent(ctx, state, t, backup, scanned);
    } catch (error) {
      throw changedAgain(error, kept);
    }
    return { outcome: "return_finished", kept };
  }
  let fresh = true;
  if (!t.rolling_back) {
    try {
      fresh = false; // from here the workspace may differ from the scan
      finishTravel(ctx, state, t, {
        target: recordSource(ctx.paths.root, readSnapshot(ctx.paths.root, t.snapshot_id)),
        excludes: backup.record.exclude_globs,
        current: scanned.current,
        backupSkipped: backup.record.skipped,
      });
      return { outcome: "travel_finished", kept };
    } catch (error) {
      // The snapshot cannot be reached (its objects went missing, the disk is full), or a file
      // it would overwrite holds content no record has (a late write, kept above): go back.
      if (isTimewarpError(error, ErrorCode.LOCKED)) throw error;
      if (isTimewarpError(error) && error.data?.touched === false) fresh = true;
    }
  }
  const undo: Transition = { ...t, rolling_back: true };
  writeState(ctx.paths, { ...state, transition: undo });
  let keptNow = kept;
  try {
    // After a finish that failed part-way the scan is stale: scan again, and keep what no record
    // holds first (a write since the first scan, which the finish left alone), then go back.
    let from = scanned;
    if (!fresh) {
      const again = scanAndKeep(ctx, t, backup);
      from = again.scanned;
      keptNow = again.kept ?? kept;
    }
    restorePresent(ctx, state, undo, backup, from);
  } catch (error) {
    if (isTimewarpError(error, ErrorCode.CHANGED_SINCE_SCAN)) throw changedAgain(error, keptNow);
    if (isTimewarpError(error)) {
      throw new TimewarpError(
        error.code,
        `${error.message} (recovering the travel to ${t.snapshot_id}; the present is in ${join(ctx.paths.backups, t.backup_id)})`,
        { data: { ...(error.data ?? {}), transition: undo }, cause: error },
      );
    }
    throw error;
  }
  return { outcome: "travel_rolled_back", kept: keptNow };
}

/**
 * A restore that found paths written since its scan (CHANGED_SINCE_SCAN) left them alone: say
 * so, and that running recover again keeps them as a patch before it restores. Other errors
 * pass unchanged.
 */
function changedAgain(error: unknown, kept: SavedPatch | null): unknown {
  if (!isTimewarpError(error, ErrorCode.CHANGED_SINCE_SCAN)) return error;
  return new TimewarpError(
    error.code,
    `recover did not finish: ${error.message}. The backup and the journal are kept` +
      `${kept === null ? "" : `, and what no record held before was kept in ${kept.patch_path}`}; ` +
      "run `timewarp recover` again: it keeps what these paths hold now as a patch in " +
      ".timewarp/recover-kept/, then restores",
    { data: { ...(error.data ?? {}), kept_path: kept?.patch_path ?? null }, cause: error },
  );
}
