import {
  assertNoTransition,
  ErrorCode,
  readState,
  type Timeline,
  TimewarpError,
  timelineOf,
  workspacePaths,
} from "../core/index.ts";

/**
 * Version-control folders: one `Delete` of `.git` lost a repository while `.timewarp/` was
 * protected (issue 16, class 9). The ledger refuses to write in them unless forced.
 */
export const VCS_DIRS: readonly string[] = [".git", ".hg", ".svn", ".jj", ".bzr"];

/**
 * PROTECTED_PATH when a workspace-relative path is a VCS folder or lies inside one, at any depth
 * (a nested repository's `.git` too), unless `force`.
 */
export function assertNotVcsPath(rel: string, force: boolean): void {
  if (force) return;
  const hit = rel.split("/").find((part) => VCS_DIRS.includes(part));
  if (hit === undefined) return;
  throw new TimewarpError(
    ErrorCode.PROTECTED_PATH,
    `${rel} is ${rel.split("/").pop() === hit ? "" : "inside "}a version-control folder (${hit}); ` +
      "the ledger does not write there unless forced (--force, force: true)",
    { data: { path: rel, vcs_dir: hit } },
  );
}

/**
 * The guard at the entry of every ledger write to the workspace (edit tools, ReverseOp, milestone
 * reverts): TRANSITION_INTERRUPTED while a travel/return awaits `recover`, which would rewrite
 * the workspace under the edit (issue 16, class 4). Otherwise the timeline the edit lands in:
 * an edit during a travel is allowed (the optimization protocol experiments in the past) and
 * recorded as made there; `return` keeps that work as a patch.
 */
export function assertLedgerWritable(root: string): Timeline {
  const paths = workspacePaths(root);
  const state = readState(paths);
  assertNoTransition(state, paths);
  return timelineOf(state);
}

/** The record fields of an operation made in the past; none in the present. */
export function timelineFields(t: Timeline): {
  timeline?: "past";
  travel?: { snapshotId: string; backupId: string | null };
} {
  if (t.timeline !== "past") return {};
  return { timeline: "past", travel: { snapshotId: t.snapshot_id, backupId: t.backup_id } };
}
