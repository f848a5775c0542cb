import { mkdirSync } from "node:fs";
import {
  acquireLock,
  appendEvent,
  type Clock,
  ErrorCode,
  isTimewarpError,
  type LockHandle,
  type OnProgress,
  systemClock,
  TimewarpError,
  workspacePaths,
} from "../core/index.ts";
import { holdLedgerForTransition } from "../ledger/index.ts";
import { readSnapshot } from "../store/index.ts";
import {
  diffPastWork,
  type SavedPatch,
  saveExperimentPatch,
  savePastWork,
} from "./experiment-patch.ts";
import type { Transition } from "./state.ts";
import { assertNoTransition, readState, writeState } from "./state-file.ts";
import { backupIdOf, readBackup, recordSource } from "./store-adapter.ts";
import { nowIso, restorePresent, type StepContext, scanPresent, step } from "./transition-steps.ts";

export interface ReturnOptions {
  root: string;
  /** Keep the experiment's changes as a patch file in this issue's folder (never applied). */
  savePatch?: string;
  clock?: Clock;
  /** Test hook: runs at every named step. */
  onStep?: (step: string) => void;
  /** Phases `keep past work`, `restore` (entries applied of all), `verify`. */
  onProgress?: OnProgress;
}

export interface ReturnResult {
  mode: "present";
  /** The snapshot the workspace was at. */
  snapshot_id: string;
  backup_id: string;
  /** The present's fingerprint, checked over the whole workspace (every path, content, mode). */
  verified: { files: number; bytes: number; manifest_hash: string; checked: number };
  written: number;
  deleted: number;
  patch_path: string | null;
  patch_files: number;
  /**
   * Where the work done in the past was kept (issue 16, class 9): the `--save-patch` issue's
   * patch, else `.timewarp/past-work/<backup_id>.patch`; null when the past was left unchanged.
   */
  past_work_path: string | null;
  past_work_files: number;
  duration_ms: number;
}

/**
 * `return()` (seed §6): only from `past` (NOT_IN_PAST otherwise), under the lock. First keeps
 * the work done in the past as a patch: in an issue's folder with `savePatch`, else in
 * `.timewarp/past-work/` (`past_work_path`; nothing when the past was left unchanged). Restores the present from
 * `backup_path` by difference, then verifies the whole workspace against the backup's manifest
 * — exactly, not sampled; on a mismatch it stops, keeps the backup and the journal, and throws
 * RETURN_VERIFY_FAILED with the differing paths (`timewarp recover` retries once the cause is
 * fixed). A kill -9 at any point is finished by `timewarp recover`.
 */
export function returnToPresent(options: ReturnOptions): ReturnResult {
  const started = performance.now();
  const paths = workspacePaths(options.root);
  const clock = options.clock ?? systemClock;
  const ctx: StepContext = { paths, clock, onStep: options.onStep, onProgress: options.onProgress };
  mkdirSync(paths.data, { recursive: true });
  const lock = acquireLock(paths.lock, { command: "return" });
  let ledger: LockHandle | undefined;
  try {
    // No edit may be half-way through the tree this rewrites (edits check the state, then write).
    ledger = holdLedgerForTransition(paths.root, "return");
    step(ctx, "return:locked");
    const state = readState(paths);
    assertNoTransition(state, paths);
    if (state.mode !== "past" || state.backup_path === null || state.current_snapshot_id === null) {
      throw new TimewarpError(
        ErrorCode.NOT_IN_PAST,
        `not in the past (mode ${state.mode} in ${paths.state}); nothing to return from`,
        { data: { mode: state.mode } },
      );
    }
    const backupId = backupIdOf(state.backup_path);
    const backup = readBackup(paths.root, backupId);
    // The work done in the past is written down before the restore rewrites it: never dropped.
    options.onProgress?.({ phase: "keep past work" });
    // One scan (after a watch mark) for the past work and the restore's plan, under the lock;
    // the verify reads what the daemon saw change since the mark, or what a walk by stat finds
    // changed since this scan (its stat cache), or in doubt scans the whole workspace again.
    const scanned = scanPresent(paths.root, backup.record.exclude_globs);
    const work = diffPastWork({
      root: paths.root,
      snapshot: recordSource(paths.root, readSnapshot(paths.root, state.current_snapshot_id)),
      present: backup.source,
      excludes: backup.record.exclude_globs,
      current: scanned.current,
    });
    let patch: SavedPatch | null = null;
    let kept: SavedPatch | null = null;
    if (options.savePatch !== undefined) {
      patch = saveExperimentPatch({ root: paths.root, issueId: options.savePatch, work, clock });
      kept = patch;
    } else if (work !== null) {
      kept = savePastWork({
        root: paths.root,
        work,
        snapshotId: state.current_snapshot_id,
        backupId,
        enteredAt: state.entered_at,
        clock,
      });
    }
    const t: Transition = {
      kind: "return",
      phase: "restore",
      snapshot_id: state.current_snapshot_id,
      backup_id: backupId,
      started_at: nowIso(clock),
      pid: process.pid,
    };
    writeState(paths, { ...state, transition: t });
    step(ctx, "return:journal-restore");
    let done: ReturnType<typeof restorePresent>;
    try {
      done = restorePresent(ctx, state, t, backup, scanned);
    } catch (error) {
      if (isTimewarpError(error, ErrorCode.RETURN_VERIFY_FAILED)) throw error;
      const e = isTimewarpError(error)
        ? error
        : new TimewarpError(ErrorCode.IO_ERROR, String(error));
      const next =
        e.code === ErrorCode.CHANGED_SINCE_SCAN
          ? "run `timewarp recover`: it keeps what these paths hold now as a patch in " +
            ".timewarp/recover-kept/, then restores the present"
          : "fix the cause, then run `timewarp recover`";
      throw new TimewarpError(
        e.code,
        `return failed while restoring the present: ${e.message}. The backup ${state.backup_path} is kept; ${next}`,
        { data: { ...(e.data ?? {}), backup_path: state.backup_path }, cause: error },
      );
    }
    appendEvent(paths.events, "return.completed", { backup_id: backupId }, clock);
    return {
      mode: "present",
      snapshot_id: t.snapshot_id,
      backup_id: backupId,
      verified: done.verified,
      written: done.written,
      deleted: done.deleted,
      patch_path: patch?.patch_path ?? null,
      patch_files: patch?.files ?? 0,
      past_work_path: kept?.patch_path ?? null,
      past_work_files: kept?.files ?? 0,
      duration_ms: Math.round(performance.now() - started),
    };
  } finally {
    ledger?.release();
    lock.release();
  }
}
