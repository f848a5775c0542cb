import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import {
  appendEvent,
  type Clock,
  errnoCode,
  fsyncDirectory,
  gitFileMode,
  timeStamp,
  workspacePaths,
  writeFileAtomic,
} from "../core/index.ts";
import { parsePatch } from "../diff/index.ts";
import { type ManifestEntry, readSnapshot, type SnapshotRecord } from "../store/index.ts";
import { diffPastWork, PAST_WORK_DIR, type SavedPatch } from "./experiment-patch.ts";
import type { Transition } from "./state.ts";
import { type CurrentState, type ManifestSource, recordSource } from "./store-adapter.ts";
import { type ScannedPresent, scanPresent } from "./transition-steps.ts";

/** Where `recover` keeps what it found in the workspace and no record held, inside `.timewarp/`. */
const LATE_WORK_DIR = "recover-kept";

/**
 * One scan of the workspace under the lock (after a watch mark), and what no record holds kept
 * from it (`keepLateWork`, durable before this returns): the restore that follows is planned
 * from that scan. `t` is the interrupted or failed travel or return; `backup` its present's
 * backup. For `recover` and for travel's own roll-back.
 */
export function scanKeepingLateWork(
  root: string,
  t: Transition,
  backup: { record: SnapshotRecord; source: ManifestSource },
  clock: Clock,
): { scanned: ScannedPresent; kept: SavedPatch | null } {
  const excludes = backup.record.exclude_globs;
  const scanned = scanPresent(root, excludes);
  const kept = keepLateWork({
    root,
    backupId: t.backup_id ?? "",
    backup: backup.source,
    heldBy: snapshotOrNull(root, t.snapshot_id),
    excludes,
    current: scanned.current,
    clock,
  });
  return { scanned, kept };
}

/** The snapshot a travel went to (or a return came from); null when it no longer reads. */
function snapshotOrNull(root: string, snapshotId: string): ManifestSource | null {
  try {
    const source = recordSource(root, readSnapshot(root, snapshotId));
    source.tree();
    return source;
  } catch {
    // then only the backup holds anything: every path that differs from it is kept
    return null;
  }
}

/**
 * Before `recover` rewrites the workspace: every path whose state there no record holds — it
 * differs from the backup of the present and from `heldBy` (the snapshot the interrupted travel
 * or return was restoring from or to, whose content is kept already) and from the work a return
 * kept before its restore (`.timewarp/past-work/<backup_id>.patch`) — as a git-format patch
 * from the backup to the workspace (`git apply` in the present brings it back), written
 * atomically and fsynced before this returns, under a name no earlier recover used:
 * `.timewarp/recover-kept/<backup_id>-<time>[-n].patch`. Null, and nothing written, when
 * there is nothing to keep. What was written late during a return (RETURN_VERIFY_FAILED), or
 * while a travel or return lay interrupted, is never overwritten before it is kept.
 */
function keepLateWork(options: {
  root: string;
  backupId: string;
  backup: ManifestSource;
  heldBy: ManifestSource | null;
  excludes: readonly string[];
  /** The scan the restore is planned from (taken under the lock): no second scan. */
  current: CurrentState | undefined;
  clock: Clock;
}): SavedPatch | null {
  const work = diffPastWork({
    root: options.root,
    snapshot: options.backup,
    excludes: options.excludes,
    current: options.current,
    heldBy: options.heldBy ?? undefined,
    alsoHeld: pastWorkHolds(options.root, options.backupId),
  });
  if (work === null) return null;
  const paths = workspacePaths(options.root);
  const dir = join(paths.data, LATE_WORK_DIR);
  // a new folder's own entry is made durable too (a power cut, not only a kill -9)
  if (mkdirSync(dir, { recursive: true }) !== undefined) fsyncDirectory(paths.data);
  const stamp = timeStamp(options.clock.now());
  // Never over an earlier one (a recover killed after keeping, then run again within the
  // second): the workspace lock keeps any other recover from choosing a name meanwhile.
  let file = join(dir, `${options.backupId}-${stamp}.patch`);
  for (let n = 2; existsSync(file); n++)
    file = join(dir, `${options.backupId}-${stamp}-${n}.patch`);
  // durable (file and directory fsynced) before the restore writes anything
  writeFileAtomic(file, work.patch, { faultPoint: "recover:keeping" });
  appendEvent(
    paths.events,
    "recover.kept",
    { backup_id: options.backupId, patch_path: file, files: work.files },
    options.clock,
  );
  return { patch_path: file, files: work.files.length };
}

/**
 * What the past work a return kept holds: each path's state after the patch (its blob id and
 * mode, or absent), read from the patch's own lines. A killed return leaves that work on the
 * paths its restore had yet to write: kept already, not late. A symlink, or a patch that does
 * not read, holds nothing here (what it names is then kept twice, never lost).
 */
function pastWorkHolds(
  root: string,
  backupId: string,
): (path: string, entry: ManifestEntry | null) => boolean {
  let text: string;
  try {
    text = readFileSync(
      join(workspacePaths(root).data, PAST_WORK_DIR, `${backupId}.patch`),
      "utf8",
    );
  } catch (error) {
    if (errnoCode(error) === "ENOENT") return () => false;
    throw error;
  }
  const after = new Map<string, { oid: string; mode: string } | null>();
  try {
    for (const p of parsePatch(text)) {
      if (p.newPath === null && p.oldPath !== null) after.set(p.oldPath, null);
      else if (p.newPath !== null && p.newOid !== undefined && p.newOid.length === 40)
        after.set(p.newPath, { oid: p.newOid, mode: p.newMode ?? p.oldMode ?? "100644" });
    }
  } catch {
    return () => false;
  }
  return (path, entry) => {
    if (!after.has(path)) return false;
    const held = after.get(path);
    if (held === null || held === undefined) return entry === null && held === null;
    return (
      entry?.type === "file" && entry.oid === held.oid && gitFileMode(entry.mode) === held.mode
    );
  };
}
