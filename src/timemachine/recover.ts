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
import type { State, Transition } from "./state.ts";
import { readState, writeState } from "./state-file.ts";
import { finishTravel, restorePresent, type StepContext, step } from "./transition-steps.ts";

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
}

/**
 * `timewarp recover`: finish or undo a travel/return that a crash (kill -9, power loss, a full
 * disk) interrupted, from the journal in state.json. Ends in a consistent state — fully
 * present, or fully past with the backup intact — and loses nothing: the present lives in
 * `present_backup/` until a return has verified it back. First it finishes the ledger's pending
 * operation, if a crash left one (an edit or revert: recorded, or rolled back to its
 * pre-images). NOTHING_TO_RECOVER when there is neither journal; LOCKED when the interrupted
 * process (or another) still holds the lock.
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
    const outcome = recoverFrom(ctx, state, t);
    const after = readState(paths);
    appendEvent(paths.events, "recover.completed", { outcome, kind: t.kind }, clock);
    return {
      outcome,
      mode: after.mode,
      transition: t,
      ledger,
      snapshot_id: after.current_snapshot_id,
      backup_path: after.backup_path,
    };
  } finally {
    lock.release();
  }
}

function recoverFrom(ctx: StepContext, state: State, t: Transition): RecoverOutcome {
  if (t.kind === "return") {
    restorePresent(ctx, state, t);
    return "return_finished";
  }
  if (t.phase === "backup" || t.backup_id === null) {
    // Nothing in the workspace was touched; a backup that got published unreferenced is
    // removed by the next session-start cleanup.
    writeState(ctx.paths, { ...state, transition: null });
    return "travel_undone";
  }
  if (!t.rolling_back) {
    try {
      finishTravel(ctx, state, t);
      return "travel_finished";
    } catch (error) {
      // The snapshot cannot be reached (its objects went missing, the disk is full): go back.
      if (isTimewarpError(error, ErrorCode.LOCKED)) throw error;
    }
  }
  const undo: Transition = { ...t, rolling_back: true };
  writeState(ctx.paths, { ...state, transition: undo });
  try {
    restorePresent(ctx, state, undo);
  } catch (error) {
    if (isTimewarpError(error)) {
      throw new TimewarpError(
        error.code,
        `${error.message} (recovering the travel to ${t.snapshot_id}; the present is in ${join(ctx.paths.backups, t.backup_id)})`,
        { data: { ...(error.data ?? {}), transition: undo }, cause: error },
      );
    }
    throw error;
  }
  return "travel_rolled_back";
}
