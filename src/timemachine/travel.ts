import { mkdirSync } from "node:fs";
import { join } from "node:path";
import {
  acquireLock,
  type Clock,
  ErrorCode,
  fromSystemError,
  isTimewarpError,
  type LockHandle,
  type OnProgress,
  type Random,
  systemClock,
  systemRandom,
  TimewarpError,
  workspacePaths,
} from "../core/index.ts";
import { holdLedgerForTransition } from "../ledger/index.ts";
import { createSnapshot, deleteSnapshot, readSnapshot } from "../store/index.ts";
import { scanKeepingLateWork } from "./late-work.ts";
import type { State, Transition } from "./state.ts";
import { assertNoTransition, readState, writeState } from "./state-file.ts";
import {
  createdSource,
  listBackupIds,
  readBackup,
  readConfigOf,
  recordSource,
  travelExcludes,
} from "./store-adapter.ts";
import {
  finishTravel,
  nowIso,
  restorePresent,
  type StepContext,
  step,
} from "./transition-steps.ts";

export interface TravelOptions {
  root: string;
  snapshotId: string;
  clock?: Clock;
  random?: Random;
  /** Test hook: runs at every named step. */
  onStep?: (step: string) => void;
  /** Phases `back up` (entries scanned), `restore` (entries applied of all). */
  onProgress?: OnProgress;
}

export interface TravelResult {
  mode: "past";
  snapshot_id: string;
  backup_id: string;
  backup_path: string;
  entered_at: string;
  /** The present's fingerprint, recorded with the backup (seed §11). */
  backup_fingerprint: { files: number; bytes: number; manifest_hash: string };
  written: number;
  deleted: number;
  unchanged: number;
  /**
   * Paths neither the snapshot nor the backup captured (too large, special, unreadable, and
   * unreadable directories with their subtrees): not touched, so they are as the present had them.
   */
  untouched: string[];
  /** Snapshot entries not restored because they lie at or below one of `untouched`. */
  left_alone: string[];
  duration_ms: number;
}

/**
 * `travel(snapshot_id)` (seed §6): only from `present` (NESTED_TRAVEL otherwise), under the
 * workspace lock (LOCKED when another process holds it). Backs the present up into
 * `present_backup/<backup_id>/` with its fingerprint, checks that every object the restore needs
 * exists (OBJECT_NOT_FOUND listing them, before anything is touched), then rewrites only the
 * files that differ, never excluded paths or `.timewarp/`. A failure during the restore (disk full, a path
 * that cannot be written) puts the present back before reporting; a kill -9 at any point leaves
 * a journal `timewarp recover` completes.
 *
 * @example
 * const t = travel({ root, snapshotId: issue.snapshot_id }); // … experiment … then returnToPresent
 */
export function travel(options: TravelOptions): TravelResult {
  const started = performance.now();
  const paths = workspacePaths(options.root);
  const clock = options.clock ?? systemClock;
  const random = options.random ?? systemRandom;
  const ctx: StepContext = { paths, clock, onStep: options.onStep, onProgress: options.onProgress };
  mkdirSync(paths.data, { recursive: true });
  const lock = acquireLock(paths.lock, { command: `travel ${options.snapshotId}` });
  let ledger: LockHandle | undefined;
  try {
    // No edit may be half-way through the tree this rewrites (edits check the state, then write).
    ledger = holdLedgerForTransition(paths.root, `travel ${options.snapshotId}`);
    step(ctx, "travel:locked");
    const state = readState(paths);
    assertNoTransition(state, paths);
    if (state.mode === "past") {
      throw new TimewarpError(
        ErrorCode.NESTED_TRAVEL,
        `already in the past (at ${state.current_snapshot_id} since ${state.entered_at}); ` +
          "run `timewarp return` before travelling again",
        {
          data: { current_snapshot_id: state.current_snapshot_id, backup_path: state.backup_path },
        },
      );
    }
    const snapshot = readSnapshot(paths.root, options.snapshotId);
    const target = recordSource(paths.root, snapshot);
    target.tree(); // its root read and checked against its hash before anything is touched
    const excludes = travelExcludes(readConfigOf(paths.root), snapshot);

    let t: Transition = {
      kind: "travel",
      phase: "backup",
      snapshot_id: options.snapshotId,
      backup_id: null,
      started_at: nowIso(clock),
      pid: process.pid,
    };
    writeState(paths, { ...state, transition: t }, { durable: false });
    let backup: ReturnType<typeof createSnapshot>;
    try {
      step(ctx, "travel:backup");
      options.onProgress?.({ phase: "back up" });
      backup = createSnapshot(paths.root, {
        kind: "present_backup",
        excludes,
        sessionId: state.session_id,
        clock,
        random,
        ...(options.onProgress ? { onProgress: backupProgress(options.onProgress) } : {}),
      });
    } catch (error) {
      // The workspace was not touched yet: close the journal and report (a full disk, typically).
      writeState(paths, { ...state, transition: null });
      throw error;
    }
    step(ctx, "travel:backed-up");
    t = { ...t, phase: "restore", backup_id: backup.id };
    writeState(paths, { ...state, transition: t });
    step(ctx, "travel:journal-restore");

    let done: ReturnType<typeof finishTravel>;
    try {
      done = finishTravel(ctx, state, t, {
        target,
        excludes,
        // the backup scanned the workspace a moment ago, under the lock: no second scan
        current: { source: createdSource(paths.root, backup), skipped: backup.record.skipped },
        backupSkipped: backup.record.skipped,
      });
    } catch (error) {
      if (
        (isTimewarpError(error, ErrorCode.OBJECT_NOT_FOUND) ||
          isTimewarpError(error, ErrorCode.OBJECT_CORRUPT)) &&
        error.data?.touched === false
      ) {
        throw refuseUntouched(ctx, state, backup.id, options.snapshotId, error);
      }
      throw rollBack(ctx, state, t, error);
    }
    removeOldBackups(ctx, backup.id);
    return {
      mode: "past",
      snapshot_id: options.snapshotId,
      backup_id: backup.id,
      backup_path: join(paths.backups, backup.id),
      entered_at: done.state.entered_at ?? "",
      backup_fingerprint: {
        files: backup.record.files,
        bytes: backup.record.bytes,
        manifest_hash: backup.record.manifest.hash,
      },
      written: done.written,
      deleted: done.deleted,
      unchanged: done.unchanged,
      untouched: done.untouched,
      left_alone: done.left_alone,
      duration_ms: Math.round(performance.now() - started),
    };
  } finally {
    ledger?.release();
    lock.release();
  }
}

/** The backup's scan as the `back up` phase. */
function backupProgress(on: OnProgress) {
  return (p: { entries: number; rehashed: number }) =>
    on({
      phase: "back up",
      done: p.entries,
      message: `backing up the present: ${p.entries} entries scanned, ${p.rehashed} read`,
    });
}

/**
 * The backups earlier returns left (a return does not delete its backup: that would need the
 * `present` state fsynced first). Safe now: the journal written durably before this travel's
 * restore references only its own backup. Each one alone, found by name: one that does not read
 * keeps only itself. Not synced: nothing refers to them, and one a power cut brings back is
 * removed again. Best effort: a session start's cleanup removes any left over.
 */
function removeOldBackups(ctx: StepContext, keep: string): void {
  let ids: string[];
  try {
    ids = listBackupIds(ctx.paths.root);
  } catch {
    return; // only disk space
  }
  for (const id of ids) {
    if (id === keep) continue;
    try {
      deleteSnapshot(ctx.paths.root, id, {
        kind: "present_backup",
        clock: ctx.clock,
        durable: false,
      });
    } catch {
      // only disk space
    }
  }
}

/**
 * The restore found, before writing anything, that objects it needs are missing: the workspace
 * is untouched, so close the journal, drop the backup just taken, and say what is missing.
 */
function refuseUntouched(
  ctx: StepContext,
  state: State,
  backupId: string,
  snapshotId: string,
  error: TimewarpError,
): TimewarpError {
  writeState(ctx.paths, { ...state, transition: null });
  try {
    deleteSnapshot(ctx.paths.root, backupId, { kind: "present_backup", clock: ctx.clock });
  } catch {
    // an undeleted backup is only disk space: session-start cleanup removes unreferenced ones
  }
  return new TimewarpError(
    error.code,
    `snapshot ${snapshotId} cannot be restored: ${error.message}`,
    {
      data: { snapshot_id: snapshotId, missing: error.data?.missing },
      cause: error,
    },
  );
}

/**
 * A travel that failed while rewriting the workspace: mark the journal `rolling_back` (so a
 * crash now makes recover finish the undo, not retry the travel), keep what the workspace holds
 * that neither the backup nor the snapshot does (a write since the backup's scan, which the
 * restore left alone: CHANGED_SINCE_SCAN) as a patch (`scanKeepingLateWork`), put the present back
 * from the backup and verify it. Returns the error to throw: the original one, saying the
 * present is back — or, if the undo failed too, TRANSITION_INTERRUPTED pointing to recover.
 */
function rollBack(ctx: StepContext, state: State, t: Transition, cause: unknown): TimewarpError {
  const original = fromSystemError(cause, `travel to ${t.snapshot_id}`);
  let kept: ReturnType<typeof scanKeepingLateWork>["kept"] = null;
  try {
    const undo: Transition = { ...t, rolling_back: true };
    writeState(ctx.paths, { ...state, transition: undo });
    step(ctx, "travel:rollback");
    const backup = readBackup(ctx.paths.root, t.backup_id ?? "");
    // One scan under the lock: what no record holds is kept from it, the restore planned from it.
    const done = scanKeepingLateWork(ctx.paths.root, t, backup, ctx.clock);
    kept = done.kept;
    const scanned = done.scanned;
    step(ctx, "travel:rollback-kept");
    restorePresent(ctx, state, undo, backup, scanned);
  } catch (undoError) {
    return new TimewarpError(
      ErrorCode.TRANSITION_INTERRUPTED,
      `travel to ${t.snapshot_id} failed (${original.code}: ${original.message}) and putting the present back ` +
        `failed too (${isTimewarpError(undoError) ? `${undoError.code}: ${undoError.message}` : String(undoError)}). ` +
        `The present is safe in ${join(ctx.paths.backups, t.backup_id ?? "")}; fix the cause, then run \`timewarp recover\``,
      { data: { transition: t, cause: original.toJSON() }, cause: undoError },
    );
  }
  const keptNote =
    kept === null
      ? ""
      : `; what ${kept.files} path(s) held that no record does was kept first as a patch: ${kept.patch_path} (\`git apply\` it to bring it back)`;
  return new TimewarpError(
    original.code,
    `travel to ${t.snapshot_id} failed: ${original.message}. The workspace was put back to the present (verified)${keptNote}`,
    {
      data: { ...(original.data ?? {}), rolled_back: true, kept_path: kept?.patch_path ?? null },
      cause: original,
    },
  );
}
