import { existsSync } from "node:fs";
import { join } from "node:path";
import {
  acquireLock,
  type Clock,
  isTimewarpError,
  type LockHandle,
  systemClock,
} from "../core/index.ts";
import { createObjectStore } from "../store/index.ts";
import {
  currentImage,
  matchesImage,
  removeWorkspaceDirectory,
  rollBackOperation,
} from "./apply-operation.ts";
import { firstPositionOf, loadIndex } from "./history-index.ts";
import { withLedgerLock } from "./ledger-lock.ts";
import { type LedgerPaths, ledgerPaths } from "./ledger-paths.ts";
import { clearJournal, pathImagesOf, readJournal } from "./operation-journal.ts";
import { recordFileOf } from "./operation-store.ts";
import { announceOperation, appendRecordIndexLine, commitRecord } from "./record-operation.ts";
import { resolveWorkspacePath } from "./safe-path.ts";
import { isDirectory } from "./workspace-files.ts";

/** What finishing a pending ledger operation did. */
export interface LedgerRecovery {
  /**
   * `none`: no operation was pending. `completed`: its record was written, only the index line
   * or the journal's removal was missing. `rolled_forward`: every file held its post-image, the
   * record was written. `rolled_back`: the workspace was put back to the pre-images. `busy`: a
   * live ledger writer holds the ledger lock (it finishes its own operation).
   */
  outcome: "none" | "completed" | "rolled_forward" | "rolled_back" | "busy";
  operationId?: string;
  tool?: string;
  /** rolled_back: the paths put back to their pre-image. */
  restored?: string[];
  /** rolled_back: paths left as they are (changed by someone else since, or pre-image gone). */
  kept?: string[];
}

/**
 * Finish the operation a crashed writer left in the journal; the caller holds the ledger lock.
 * Per path, the file's current blob id and mode are compared with the pre- and post-images:
 * a record on disk means the operation completed (its index line is added if missing); every
 * path at its post-image means it is rolled forward (the record is written); anything else is
 * rolled back to the pre-images from the store. Never "file changed, no record".
 */
export function completePendingOperation(paths: LedgerPaths, clock: Clock): LedgerRecovery {
  if (!existsSync(paths.journal)) return { outcome: "none" };
  const journal = readJournal(paths);
  if (journal === null) return { outcome: "none" };
  const { record } = journal;
  const about = { operationId: record.id, tool: record.tool };
  // The journal is a file on disk like a record: its paths are checked before any is touched
  // (UNSAFE_PATH for `..` or a symlink on the way; the journal then stays for a human).
  for (const p of [...record.affectedFiles, ...record.directories.map((d) => d.path)])
    resolveWorkspacePath(paths.root, p);
  if (existsSync(recordFileOf(paths, record))) {
    if (firstPositionOf(loadIndex(paths.index), record.id) === undefined)
      appendRecordIndexLine(paths, record);
    clearJournal(paths);
    announceOperation(paths, record, journal.event, clock);
    return { outcome: "completed", ...about };
  }
  const images = pathImagesOf(record);
  const allPost = images.every((p) => matchesImage(currentImage(paths.root, p.path), p.post));
  if (allPost && finishDirectories(paths.root, record.directories)) {
    commitRecord(paths, record);
    clearJournal(paths);
    announceOperation(paths, record, journal.event, clock);
    return { outcome: "rolled_forward", ...about };
  }
  const store = createObjectStore(paths.objects);
  const result = rollBackOperation({
    root: paths.root,
    record,
    preImage: (image) => (store.has(image.oid) ? store.read(image.oid, { verify: true }) : null),
  });
  clearJournal(paths);
  return { outcome: "rolled_back", ...about, restored: result.restored, kept: result.kept };
}

/**
 * Whether the directory steps agree with a finished operation: every directory it created is
 * there, and every one it removed is gone (an empty one a crash left is removed now).
 */
function finishDirectories(
  root: string,
  directories: { path: string; action: "created" | "removed" }[],
): boolean {
  for (const d of directories)
    if (d.action === "created" && !isDirectory(join(root, d.path))) return false;
  for (const d of directories) {
    if (d.action !== "removed" || !isDirectory(join(root, d.path))) continue;
    if (!removeWorkspaceDirectory(root, d.path)) return false;
  }
  return true;
}

/**
 * Run `fn` as a ledger writer: holding the ledger lock, after finishing any operation a crashed
 * writer left pending (so every writer starts from a workspace and a ledger that agree).
 */
export async function withLedgerWriter<T>(
  ctx: { root: string; clock?: Clock },
  command: string,
  fn: () => Promise<T> | T,
): Promise<T> {
  return withLedgerLock(ctx.root, command, () => {
    completePendingOperation(ledgerPaths(ctx.root), ctx.clock ?? systemClock);
    return fn();
  });
}

/**
 * `timewarp recover`'s ledger part: finish a pending ledger operation (see
 * `completePendingOperation`). Takes the ledger lock without waiting: a live writer holding it
 * finishes its own operation (`busy`). Creates nothing when no operation is pending.
 */
export function recoverLedger(options: { root: string; clock?: Clock }): LedgerRecovery {
  const paths = ledgerPaths(options.root);
  if (!existsSync(paths.journal)) return { outcome: "none" };
  let lock: LockHandle;
  try {
    lock = acquireLock(paths.lock, { command: "recover" });
  } catch (error) {
    if (isTimewarpError(error, "LOCKED")) return { outcome: "busy" };
    throw error;
  }
  try {
    return completePendingOperation(paths, options.clock ?? systemClock);
  } finally {
    lock.release();
  }
}
