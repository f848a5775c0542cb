import { randomBytes } from "node:crypto";
import { join } from "node:path";
import {
  appendEvent,
  type Clock,
  ErrorCode,
  faultPoint,
  inPresent,
  type OnProgress,
  TimewarpError,
  type WorkspacePaths,
} from "../core/index.ts";
import { readSnapshot, type SkippedPath } from "../store/index.ts";
import type { State, Transition } from "./state.ts";
import { writeState } from "./state-file.ts";
import {
  type CurrentState,
  type ManifestSource,
  type RestoredSince,
  readBackup,
  recordSource,
  restoreExactly,
  scanSource,
  verifyAgainst,
  watchMark,
} from "./store-adapter.ts";

/**
 * The steps travel, return and recover share. Each durable step is preceded by a journal write
 * (state.json, atomic) and followed by a fault point, so the crash tests can stop the process
 * between any two of them — and the restores themselves are by difference and idempotent, so
 * running a step again after a crash inside it is always safe.
 */

export interface StepContext {
  paths: WorkspacePaths;
  clock: Clock;
  /** Test hook: runs at every named step (after the fault point). */
  onStep?: ((step: string) => void) | undefined;
  /** Phases `restore` (entries applied of all) and `verify`. */
  onProgress?: OnProgress | undefined;
}

/** The restore's counts as the `restore` phase, for `restoreExactly`. */
function restoreProgress(
  ctx: StepContext,
): ((p: { done: number; total: number }) => void) | undefined {
  const on = ctx.onProgress;
  return on === undefined ? undefined : (p) => on({ phase: "restore", ...p });
}

export function step(ctx: StepContext, name: string): void {
  faultPoint(name);
  ctx.onStep?.(name);
}

export function nowIso(clock: Clock): string {
  return clock
    .now()
    .toISOString()
    .replace(/\.\d{3}Z$/, "Z");
}

/** A travel whose backup is complete: rewrite the workspace to the snapshot, then enter the past. */
export function finishTravel(
  ctx: StepContext,
  state: State,
  t: Transition,
  /** What travel() already has in hand; recover reads them from disk. */
  loaded?: {
    target: ManifestSource;
    excludes: readonly string[];
    current?: CurrentState;
    backupSkipped: readonly SkippedPath[];
  },
): {
  state: State;
  written: number;
  deleted: number;
  unchanged: number;
  untouched: string[];
  left_alone: string[];
} {
  if (t.backup_id === null)
    throw new TimewarpError(ErrorCode.INTERNAL, "travel restore without a backup");
  const backup = loaded === undefined ? readBackup(ctx.paths.root, t.backup_id).record : null;
  const excludes = loaded?.excludes ?? backup?.exclude_globs ?? [];
  const target =
    loaded?.target ?? recordSource(ctx.paths.root, readSnapshot(ctx.paths.root, t.snapshot_id));
  step(ctx, "travel:restore");
  const restored = restoreExactly(ctx.paths.root, target, excludes, {
    current: loaded?.current,
    requireReplacedObjects: true,
    // What the backup did not capture cannot be brought back: the travel must not touch it
    // either (a file over max_file_bytes, a FIFO, an unreadable directory and its subtree).
    alsoSkipped: loaded?.backupSkipped ?? backup?.skipped ?? [],
    onProgress: restoreProgress(ctx),
  });
  step(ctx, "travel:restored");
  const past: State = {
    ...state,
    mode: "past",
    current_snapshot_id: t.snapshot_id,
    backup_path: join(ctx.paths.backups, t.backup_id),
    entered_at: nowIso(ctx.clock),
    guard_token: randomBytes(8).toString("hex"),
    transition: null,
  };
  writeState(ctx.paths, past, { durable: false });
  step(ctx, "travel:done");
  appendEvent(
    ctx.paths.events,
    "travel.completed",
    {
      snapshot_id: t.snapshot_id,
      backup_id: t.backup_id,
      written: restored.written,
      deleted: restored.deleted,
    },
    ctx.clock,
  );
  return {
    state: past,
    written: restored.written,
    deleted: restored.deleted,
    unchanged: restored.unchanged,
    untouched: restored.untouched.map((u) => u.path),
    left_alone: restored.left_alone,
  };
}

/** A scan of the workspace (and the watch daemon's mark taken just before it) to restore from. */
export interface ScannedPresent {
  mark: string | undefined;
  current: CurrentState | undefined;
}

/** Take the watch mark, then the scan (unless given), then restore; the scan is let go. */
export function scanPresent(root: string, excludes: readonly string[]): ScannedPresent {
  const mark = watchMark(root, excludes);
  return { mark, current: scanSource(root, excludes, { keepStatCache: true }) };
}

/**
 * Restore the present from the backup, planned from `scanned` (else a scan taken now, after a
 * watch mark), and what a verify needs to read only what may differ since.
 */
function restoreScanned(
  ctx: StepContext,
  target: ManifestSource,
  excludes: readonly string[],
  scanned: ScannedPresent | undefined,
): { restored: ReturnType<typeof restoreExactly>; since: RestoredSince | undefined } {
  const given = scanned ?? scanPresent(ctx.paths.root, excludes);
  const current = given.current ?? scanSource(ctx.paths.root, excludes, { keepStatCache: true });
  given.current = undefined; // the caller's hold on the scan goes too
  const restored = restoreExactly(ctx.paths.root, target, excludes, {
    current,
    onProgress: restoreProgress(ctx),
  });
  // The verify needs the scan's stat cache (a walk's), not its tree: that goes with `current`.
  const { walked, skipped: scanSkipped } = current;
  const since =
    given.mark === undefined && walked === undefined
      ? undefined
      : { mark: given.mark, walked, restored, scanSkipped };
  return { restored, since };
}

export interface PresentRestored {
  state: State;
  written: number;
  deleted: number;
  verified: { files: number; bytes: number; manifest_hash: string; checked: number };
}

/**
 * Bring the present back from the backup `t.backup_id` and prove it: restore by difference, then
 * verify the whole workspace against the backup's manifest. On a mismatch the journal stays, the
 * backup stays, and RETURN_VERIFY_FAILED lists the differing paths. On success state.json says
 * `present`, written without an fsync, and the backup stays on disk, no longer referenced: a
 * power cut that loses this write leaves the journal, and recover restores the backup again
 * (over what was written in the few seconds before the cut, on a file system that does not
 * keep renames in order; ext4's journal does). The files a restore writes are not fsynced
 * either, so the kept backup is also what makes such a cut recoverable. The next travel deletes
 * it once its own journal is durable (or a session start's cleanup does), and its objects go at
 * the next gc.
 */
export function restorePresent(
  ctx: StepContext,
  state: State,
  t: Transition,
  loaded?: ReturnType<typeof readBackup>,
  /**
   * The workspace as a scan found it under the lock a moment ago (return: the scan that kept the
   * past work), taken after `mark`. Dropped once the restore is planned but for a walk's stat
   * cache, which the verify compares the workspace with: it must not hold two scans at once.
   */
  scanned?: ScannedPresent,
): PresentRestored {
  if (t.backup_id === null) throw new TimewarpError(ErrorCode.INTERNAL, "restore without a backup");
  const backup = loaded ?? readBackup(ctx.paths.root, t.backup_id);
  const excludes = backup.record.exclude_globs;
  step(ctx, `${t.kind}:restore-present`);
  const { restored, since } = restoreScanned(ctx, backup.source, excludes, scanned);
  step(ctx, `${t.kind}:verify`);
  ctx.onProgress?.({ phase: "verify" });
  const check = verifyAgainst(ctx.paths.root, backup.source, excludes, since);
  if (!check.ok) {
    const shown = check.differences.slice(0, 10).map((d) => `${d.path} (${d.kind})`);
    throw new TimewarpError(
      ErrorCode.RETURN_VERIFY_FAILED,
      `after restoring ${join(ctx.paths.backups, t.backup_id)} the workspace still differs from it in ` +
        `${check.differences.length} path(s): ${shown.join(", ")}${check.differences.length > 10 ? ", …" : ""}. ` +
        "The backup is kept; fix what blocks these paths, then run `timewarp recover`: it keeps " +
        "what was written to them during the return as a patch in .timewarp/recover-kept/, then " +
        "restores them from the backup",
      {
        data: {
          paths: check.differences.map((d) => d.path),
          differences: check.differences,
          backup_path: join(ctx.paths.backups, t.backup_id),
        },
      },
    );
  }
  const present = inPresent(state);
  writeState(ctx.paths, present, { durable: false });
  step(ctx, `${t.kind}:present`);
  return {
    state: present,
    written: restored.written,
    deleted: restored.deleted,
    verified: {
      files: backup.record.files,
      bytes: backup.record.bytes,
      manifest_hash: backup.record.manifest.hash,
      checked: check.checked,
    },
  };
}
