import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { appendEvent, type Clock, workspacePaths, writeFileAtomic } from "../core/index.ts";
import { diffPastWork, type SavedPatch } from "./experiment-patch.ts";
import type { CurrentState, ManifestSource } from "./store-adapter.ts";

/** Where `recover` keeps what it found in the workspace and no record held, inside `.timewarp/`. */
export const LATE_WORK_DIR = "recover-kept";

/**
 * Before `recover` rewrites the workspace: every path whose state there no record holds — it
 * differs from the backup of the present and from `heldBy` (the snapshot the interrupted travel
 * or return was restoring from or to, whose content is kept already) — as a git-format patch
 * from the backup to the workspace (`git apply` in the present brings it back), written
 * atomically and fsynced before this returns, under a name no earlier recover used:
 * `.timewarp/recover-kept/<backup_id>-<time>[-n].patch`. Null, and nothing written, when
 * there is nothing to keep. What was written late during a return (RETURN_VERIFY_FAILED), or
 * while a travel or return lay interrupted, is never overwritten before it is kept.
 */
export function keepLateWork(options: {
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
  });
  if (work === null) return null;
  const paths = workspacePaths(options.root);
  const dir = join(paths.data, LATE_WORK_DIR);
  mkdirSync(dir, { recursive: true });
  const stamp = options.clock
    .now()
    .toISOString()
    .replace(/[-:]/g, "")
    .replace("T", "_")
    .replace(/\..*$/, "");
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
