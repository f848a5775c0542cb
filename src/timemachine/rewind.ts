import { lstatSync, readdirSync } from "node:fs";
import { join } from "node:path";
import {
  acquireLock,
  appendEvent,
  type Clock,
  ErrorCode,
  type LockHandle,
  type OnProgress,
  pathTextOf,
  type Random,
  safeChmod,
  systemClock,
  TimewarpError,
  toFsPath,
  workspacePaths,
} from "../core/index.ts";
import {
  holdLedgerForTransition,
  lastOperationInEffect,
  restoreImages,
  reverseOp,
} from "../ledger/index.ts";
import { notCaptured, pathsChangedSince, readManifest, readSnapshot } from "../store/index.ts";
import { type PathChange, planRewind, type RewindPlan, type TreeState } from "./plan-rewind.ts";
import { assertNoTransition, readState } from "./state-file.ts";
import { readConfigOf, scanNow, travelExcludes } from "./store-adapter.ts";
import { findTurn } from "./turns.ts";

/** The ledger tool name of a rewind; `rewind --undo` reverts the last one still in effect. */
export const REWIND_TOOL = "Rewind";

export interface RewindOptions {
  root: string;
  /** A turn number of the session (1, 2, …) or a turn id (`t_…`). */
  turn: string;
  /** The session whose turn number it is (default: the session that prompted last). */
  sessionId?: string;
  /** Show the plan, change nothing. */
  dryRun?: boolean;
  clock?: Clock;
  random?: Random;
  /** Phases `scan`, `write` (a dry run stops before it), `verify`. */
  onProgress?: OnProgress;
}

export interface RewindResult {
  session_id: string;
  turn: number;
  turn_id: string;
  /** The checkpoint the workspace was put back to. */
  snapshot_id: string;
  prompt: string;
  dry_run: boolean;
  /** The ledger operation that did it (null on a dry run, or when nothing differed). */
  operation_id: string | null;
  /** What the rewind changes, path by path, as the workspace sees it. */
  changes: PathChange[];
  /** Paths neither the checkpoint nor the workspace's scan captured: not touched. */
  untouched: string[];
  /** Paths the rewind leaves as they are, and why. */
  left_alone: { path: string; reason: string }[];
  /** The workspace checked against the checkpoint after writing (null on a dry run). */
  verified: { ok: true; checked: number } | null;
  /** How to take it back. */
  undo: string | null;
  duration_ms: number;
}

/**
 * Put the code back to how it was before a turn (its checkpoint, taken when the prompt
 * arrived), shell edits included, as ONE ledger operation (tool `Rewind`): write-ahead and
 * all or nothing, so a crash leaves what `timewarp recover` finishes, and every file it
 * overwrites or deletes is stored: `rewind --undo` (the ledger's revert) brings back what came
 * after. Never touches what the checkpoint or the workspace's scan did not capture (too large,
 * unreadable, special files), excluded paths (the config's and the checkpoint's), `.timewarp/`
 * or a version-control folder. The workspace is scanned again afterwards and must match the
 * checkpoint (REWIND_VERIFY_FAILED, with the operation to undo, if something wrote meanwhile).
 *
 * Refuses: REWIND_IN_PAST while a travel is active, TRANSITION_INTERRUPTED while one awaits
 * recover, LOCKED while another command holds the workspace (at once) or the ledger (after
 * 2 s), TURN_NOT_FOUND, SNAPSHOT_NOT_FOUND when the checkpoint was deleted, OBJECT_NOT_FOUND /
 * OBJECT_CORRUPT before anything is written.
 *
 * @example
 * const r = rewind({ root, turn: "3" }); // r.operation_id: `timewarp revert` or `rewind --undo` takes it back
 */
/**
 * CHANGED_SINCE_SCAN, before anything is written, when a path the rewind writes or deletes is no
 * longer as the scan it was planned from saw it (the lock stops only timewarp's writers). The
 * ledger reads each pre-image again as it writes; this keeps a write since the scan from being
 * silently replaced.
 */
function assertAsScanned(
  root: string,
  scanned: Parameters<typeof pathsChangedSince>[1],
  files: readonly { path: string }[],
  what: string,
): void {
  const changed = pathsChangedSince(
    root,
    scanned,
    files.map((f) => f.path),
  );
  if (changed.length === 0) return;
  throw new TimewarpError(
    ErrorCode.CHANGED_SINCE_SCAN,
    `${what} wrote nothing: ${changed.length} path(s) changed since the scan it was planned from ` +
      `(written by something other than timewarp meanwhile): ${changed.slice(0, 10).join(", ")}` +
      `${changed.length > 10 ? ", …" : ""}. Run the rewind again: it plans from a new scan`,
    { data: { paths: changed } },
  );
}

export function rewind(options: RewindOptions): RewindResult {
  const started = performance.now();
  const paths = workspacePaths(options.root);
  const clock = options.clock ?? systemClock;
  const dryRun = options.dryRun === true;
  const turn = findTurn(paths.root, options.turn, options.sessionId);
  const what = `rewind to turn ${turn.turn} of ${turn.session_id}`;
  let lock: LockHandle | undefined;
  let ledger: LockHandle | undefined;
  try {
    if (!dryRun) {
      lock = acquireLock(paths.lock, { command: what });
      // No edit may land half-way: the plan, the write and the check see one tree.
      ledger = holdLedgerForTransition(paths.root, what);
    }
    assertPresent(paths.root);
    const record = readSnapshot(paths.root, turn.snapshot_id);
    const target: TreeState = {
      manifest: readManifest(paths.root, record),
      skipped: record.skipped,
    };
    const excludes = travelExcludes(readConfigOf(paths.root), record);
    options.onProgress?.({ phase: "scan" });
    const present = scanNow(paths.root, excludes);
    const plan = planRewind(present, target, excludes);
    const kept = keepFullDirectories(paths.root, plan);
    const untouched = [...notCaptured(present.skipped, target.skipped).roots].sort();
    const base = {
      session_id: turn.session_id,
      turn: turn.turn,
      turn_id: turn.turn_id,
      snapshot_id: turn.snapshot_id,
      prompt: turn.prompt,
      dry_run: dryRun,
      changes: plan.changes.filter((c) => !kept.has(c.path)),
      untouched,
      left_alone: plan.leftAlone,
    };
    if (!dryRun)
      options.onProgress?.({ phase: "write", message: `writing ${plan.files.length} file(s)…` });
    if (!dryRun) assertAsScanned(paths.root, present.manifest, plan.files, what);
    const applied = restoreImages(
      { root: paths.root, clock, ...(options.random ? { random: options.random } : {}) },
      {
        tool: REWIND_TOOL,
        description: `Rewind to before turn ${turn.turn} of session ${turn.session_id} (${turn.snapshot_id})`,
        toolParams: {
          session_id: turn.session_id,
          turn: turn.turn,
          turn_id: turn.turn_id,
          snapshot_id: turn.snapshot_id,
        },
        files: plan.files,
        directories: [
          ...plan.makeDirs.map((path) => ({ path, action: "created" as const })),
          ...plan.removeDirs.map((path) => ({ path, action: "removed" as const })),
        ],
        dryRun,
      },
    );
    if (dryRun) {
      return {
        ...base,
        operation_id: null,
        verified: null,
        undo: null,
        duration_ms: Math.round(performance.now() - started),
      };
    }
    setModes(paths.root, plan);
    options.onProgress?.({ phase: "verify" });
    const verified = verifyRewind(paths.root, target, excludes, applied.operationId, base);
    if (applied.operationId !== null) {
      appendEvent(
        paths.events,
        "turn.rewound",
        { session_id: turn.session_id, turn: turn.turn, operation_id: applied.operationId },
        clock,
      );
    }
    return {
      ...base,
      operation_id: applied.operationId,
      verified,
      undo: applied.operationId === null ? null : "timewarp rewind --undo",
      duration_ms: Math.round(performance.now() - started),
    };
  } finally {
    ledger?.release();
    lock?.release();
  }
}

/** REWIND_IN_PAST during a travel; TRANSITION_INTERRUPTED while one awaits recover. */
function assertPresent(root: string): void {
  const paths = workspacePaths(root);
  const state = readState(paths);
  assertNoTransition(state, paths);
  if (state.mode === "past") {
    throw new TimewarpError(
      ErrorCode.REWIND_IN_PAST,
      `a travel is active (at ${state.current_snapshot_id} since ${state.entered_at}): a rewind works on the present; run \`timewarp return\` first`,
      { data: { current_snapshot_id: state.current_snapshot_id } },
    );
  }
}

/**
 * Directories the plan removes that would not be empty (they hold what the checkpoint does not
 * cover: an excluded or skipped file): they stay, with what stands in their place in the
 * plan dropped (a file the checkpoint has there is left alone). Deepest first, so a parent
 * holding a kept directory stays too. Returns the paths kept.
 */
function keepFullDirectories(root: string, plan: RewindPlan): Set<string> {
  const gone = new Set<string>();
  for (const f of plan.files) if (f.image === null) gone.add(f.path);
  const kept = new Set<string>();
  const removable: string[] = [];
  for (const dir of plan.removeDirs) {
    let names: string[];
    try {
      names = readdirSync(toFsPath(join(root, dir)), { encoding: "buffer" }).map(pathTextOf);
    } catch {
      names = [];
    }
    if (names.every((n) => gone.has(`${dir}/${n}`))) {
      removable.push(dir);
      gone.add(dir);
    } else kept.add(dir);
  }
  plan.removeDirs = removable;
  if (kept.size > 0) {
    for (const f of plan.files) {
      if (f.image !== null && kept.has(f.path))
        plan.leftAlone.push({
          path: f.path,
          reason: "a directory holding paths the checkpoint does not cover stands there",
        });
    }
    plan.files = plan.files.filter((f) => f.image === null || !kept.has(f.path));
    plan.modes = plan.modes.filter((m) => !kept.has(m.path));
  }
  return kept;
}

/** The exact permission bits the checkpoint has (the ledger writes 644 or 755). */
function setModes(root: string, plan: RewindPlan): void {
  for (const { path, mode } of plan.modes) {
    let now: number;
    try {
      const st = lstatSync(toFsPath(join(root, path)));
      if (st.isSymbolicLink()) continue;
      now = st.mode & 0o7777;
    } catch {
      continue; // the verify reports it
    }
    if (now !== mode) safeChmod(root, path, mode);
  }
}

/**
 * Scan again and plan again: a rewind is verified when there is nothing left to do (what the
 * rewind leaves alone aside). REWIND_VERIFY_FAILED otherwise: something wrote meanwhile.
 */
function verifyRewind(
  root: string,
  target: TreeState,
  excludes: readonly string[],
  operationId: string | null,
  base: { left_alone: { path: string }[] },
): { ok: true; checked: number } {
  const now = scanNow(root, excludes);
  const again = planRewind(now, target, excludes);
  const kept = keepFullDirectories(root, again);
  const alone = new Set(base.left_alone.map((l) => l.path));
  const left = again.changes.filter((c) => !kept.has(c.path) && !alone.has(c.path));
  const modes = again.modes.filter((m) => {
    try {
      const st = lstatSync(toFsPath(join(root, m.path)));
      return !st.isSymbolicLink() && (st.mode & 0o7777) !== m.mode;
    } catch {
      return true;
    }
  });
  if (left.length > 0 || modes.length > 0) {
    const paths = [...left.map((c) => c.path), ...modes.map((m) => m.path)];
    throw new TimewarpError(
      ErrorCode.REWIND_VERIFY_FAILED,
      `the workspace does not match the checkpoint after the rewind (${paths.length} path(s): ${paths.slice(0, 5).join(", ")}${paths.length > 5 ? ", …" : ""}); something wrote meanwhile${operationId === null ? "" : `. The rewind is recorded as ${operationId}: \`timewarp rewind --undo\` takes it back`}`,
      { data: { paths, operation_id: operationId } },
    );
  }
  return { ok: true, checked: now.manifest.entries.length };
}

export interface UndoRewindOptions {
  root: string;
  dryRun?: boolean;
  /** Overwrite changes made since the rewind (the ledger's `revert --force`). */
  force?: boolean;
  clock?: Clock;
  random?: Random;
}

export interface UndoRewindResult {
  /** The rewind taken back. */
  rewind_operation_id: string;
  description: string;
  dry_run: boolean;
  /** The ledger operation that took it back (null on a dry run). */
  operation_id: string | null;
  affected_files: string[];
  message: string;
}

/**
 * `rewind --undo`: revert the last rewind still in effect through the ledger's `ReverseOp` (its
 * ladder: each file still as the rewind left it gets its exact pre-rewind bytes back; a file
 * changed since must take the reverse diff strictly, else REVERT_CONFLICT and nothing changes,
 * unless `force`). Undoing again takes back the rewind before it. NOTHING_TO_UNDO when there
 * is none; REWIND_IN_PAST, TRANSITION_INTERRUPTED and LOCKED as for `rewind`.
 */
export async function undoRewind(options: UndoRewindOptions): Promise<UndoRewindResult> {
  const paths = workspacePaths(options.root);
  const dryRun = options.dryRun === true;
  const ctx = {
    root: paths.root,
    ...(options.clock ? { clock: options.clock } : {}),
    ...(options.random ? { random: options.random } : {}),
  };
  const lock = dryRun ? undefined : acquireLock(paths.lock, { command: "rewind --undo" });
  try {
    assertPresent(paths.root);
    const last = lastOperationInEffect(ctx, REWIND_TOOL);
    if (last === null) {
      throw new TimewarpError(
        ErrorCode.NOTHING_TO_UNDO,
        "no rewind to undo: every rewind recorded in the ledger was taken back already (or none was made)",
      );
    }
    const r = await reverseOp(ctx, {
      snapshotId: last.id,
      dryRun,
      ...(options.force === true ? { force: true } : {}),
    });
    if (!r.success) {
      throw new TimewarpError(
        ErrorCode.REVERT_CONFLICT,
        `${r.message}: files changed since the rewind (${(r.conflicts ?? []).slice(0, 3).join("; ")}); \`rewind --undo --force\` overwrites them`,
        { data: { conflicts: r.conflicts ?? [], operation_id: last.id } },
      );
    }
    return {
      rewind_operation_id: last.id,
      description: last.description,
      dry_run: dryRun,
      operation_id: r.newSnapshotId ?? null,
      affected_files: r.affectedFiles ?? [],
      message: r.message,
    };
  } finally {
    lock?.release();
  }
}
