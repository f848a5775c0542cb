import { readdirSync, rmSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import {
  type Clock,
  ErrorCode,
  faultPoint,
  fromSystemError,
  isTempName,
  isTimewarpError,
  TimewarpError,
} from "../core/index.ts";
import type { LedgerPaths } from "./ledger-paths.ts";
import { clearJournal, type PathImages, pathImagesOf, writeJournal } from "./operation-journal.ts";
import { recordFileOf } from "./operation-store.ts";
import {
  announceOperation,
  commitRecord,
  type FileEdit,
  oidOf,
  storeImages,
} from "./record-operation.ts";
import { resolveWorkspacePath } from "./safe-path.ts";
import type { FileImage, OperationRecord } from "./schema.ts";
import {
  type FileState,
  makeDirectory,
  readFileState,
  removeEmptyDirectory,
  writeFileState,
} from "./workspace-files.ts";

export interface ApplyOperationOptions {
  paths: LedgerPaths;
  /** Built before anything is written; its `files` and `directories` are the plan. */
  record: OperationRecord;
  /** The same changes as bytes (the record holds only their ids). */
  edits: FileEdit[];
  event: "edit.applied" | "edit.reverted";
  clock: Clock;
  /** `performance.now()` when the operation began: the record's executionTimeMs is set from it. */
  started?: number;
}

/**
 * Apply an operation to the workspace write-ahead (DESIGN "Ledger operations are write-ahead";
 * issue 16): the caller holds the ledger lock. Steps, each a fault point (`ledger:*`):
 *
 * 1. pre- and post-images into the object store (pre-images fsynced);
 * 2. the journal (the record, state pending) written and fsynced — `ledger:journal`;
 * 3. the workspace: deletions, removed directories, created directories, writes, each file
 *    atomic — `ledger:file` after each file;
 * 4. the record and its index line — `ledger:files` before, `ledger:record` after;
 * 5. the journal removed, the event announced.
 *
 * A failure in 3 or 4 (a full disk, EISDIR, a permission) rolls every path back to its
 * pre-image (bytes and mode; created files and directories removed, removed ones put back),
 * removes the journal and throws the failure's coded error: nothing changed. A crash anywhere
 * leaves the journal, which the next ledger writer or `timewarp recover` completes
 * (`completePendingOperation`). If the rollback itself fails, the journal stays for them too.
 */
export function applyOperation(options: ApplyOperationOptions): void {
  const { paths, record, edits } = options;
  storeImages(paths, edits, { syncPre: true });
  writeJournal(paths, {
    schema_version: 1,
    state: "pending",
    event: options.event,
    pid: process.pid,
    record,
  });
  faultPoint("ledger:journal");
  try {
    writeWorkspace(paths.root, edits, record);
    faultPoint("ledger:files");
    if (options.started !== undefined)
      record.metadata.executionTimeMs =
        Math.round((performance.now() - options.started) * 100) / 100;
    commitRecord(paths, record);
  } catch (error) {
    throw rollBackAfterFailure(options, error);
  }
  faultPoint("ledger:record");
  try {
    clearJournal(paths);
  } catch {
    // The operation is applied and recorded; a journal left behind is cleared, as complete, by
    // the next writer (it finds the record). Failing the edit here would misreport it.
  }
  announceOperation(paths, record, options.event, options.clock);
}

/**
 * The workspace steps in the one order that lets a single operation replace a file by a
 * directory or the reverse: deletions, then removed directories (deepest first, as planned),
 * then created directories (shallowest first), then writes.
 */
function writeWorkspace(root: string, edits: FileEdit[], record: OperationRecord): void {
  for (const e of edits) {
    if (e.oldPath === null || e.oldPath === e.newPath) continue;
    writeWorkspacePath(root, e.oldPath, null);
    faultPoint("ledger:file");
  }
  for (const d of record.directories) {
    if (d.action === "removed" && !removeWorkspaceDirectory(root, d.path)) {
      throw new TimewarpError(
        ErrorCode.IO_ERROR,
        `could not remove directory ${d.path}: not empty`,
        { data: { path: d.path } },
      );
    }
  }
  for (const d of record.directories)
    if (d.action === "created") makeWorkspaceDirectory(root, d.path);
  for (const e of edits) {
    if (e.newPath === null) continue;
    writeWorkspacePath(root, e.newPath, e.after);
    faultPoint("ledger:file");
  }
}

// The three workspace steps of the ledger, each through workspace-files' checked writes: the
// one place to change when those change.

/** Write (atomically, with its mode) or delete (null) the file `rel`. */
export function writeWorkspacePath(root: string, rel: string, state: FileState | null): void {
  writeFileState(root, rel, state);
}

/** Create the directory `rel` and its missing parents. */
export function makeWorkspaceDirectory(root: string, rel: string): void {
  makeDirectory(root, rel);
}

/** Remove the directory `rel` if it is empty; false when it is not empty or absent. */
export function removeWorkspaceDirectory(root: string, rel: string): boolean {
  return removeEmptyDirectory(root, rel);
}

/** Undo a failed application; the error to throw (the failure's code, what happened to the tree). */
function rollBackAfterFailure(options: ApplyOperationOptions, error: unknown): TimewarpError {
  const { paths, record, edits } = options;
  const failure = fromSystemError(error, `applying ${record.tool}`);
  const inMemory = new Map<string, Uint8Array>();
  for (const e of edits) if (e.before !== null) inMemory.set(oidOf(e.before.bytes), e.before.bytes);
  try {
    // The record goes first: a record on disk tells recovery the operation completed.
    rmSync(recordFileOf(paths, record), { force: true });
    const result = rollBackOperation({
      root: paths.root,
      record,
      preImage: (image) => inMemory.get(image.oid) ?? null,
    });
    clearJournal(paths);
    const kept =
      result.kept.length === 0
        ? ""
        : ` (left as they are, changed by someone else meanwhile: ${result.kept.join(", ")})`;
    return new TimewarpError(
      failure.code,
      `${failure.message}; the operation was rolled back, nothing was changed${kept}`,
      {
        data: { ...(failure.data ?? {}), rolledBack: result.restored, kept: result.kept },
        cause: error,
      },
    );
  } catch (rollbackError) {
    const why = rollbackError instanceof Error ? rollbackError.message : String(rollbackError);
    return new TimewarpError(
      failure.code,
      `${failure.message}; rolling the workspace back failed too (${why}): the operation stays pending in ${paths.journal} and the next ledger writer or \`timewarp recover\` completes it`,
      { data: { ...(failure.data ?? {}), journal: paths.journal }, cause: error },
    );
  }
}

/** A path's content as compared with an image: its id and mode, absent (null), or not a file. */
type Current = FileImage | null | "not-a-file";

/** What is at `rel` now, as an image (or why it cannot be one). */
export function currentImage(root: string, rel: string): Current {
  let state: FileState | null;
  try {
    state = readFileState(join(root, rel), rel);
  } catch (error) {
    // a directory, a symlink or another kind of entry stands there now
    if (isTimewarpError(error, "UNSAFE_PATH") || isTimewarpError(error, "INVALID_INPUT"))
      return "not-a-file";
    throw error;
  }
  return state === null
    ? null
    : { oid: oidOf(state.bytes), mode: state.mode, size: state.bytes.length };
}

/** True when the current content is exactly the image (null: both absent). */
export function matchesImage(current: Current, image: FileImage | null): boolean {
  if (current === "not-a-file") return false;
  if (current === null || image === null) return current === image;
  return current.oid === image.oid && current.mode === image.mode;
}

export interface RollBackResult {
  /** Paths put back to their pre-image. */
  restored: string[];
  /** Paths that hold neither the pre- nor the post-image (someone else's change), or whose pre-image is gone: left untouched. */
  kept: string[];
}

/**
 * Put every path of `record` back to its pre-image: a path still at its pre-image is left
 * alone; at its post-image (or absent) it is restored — unlinked first, so that on a full disk
 * the pre-image finds the blocks the post-image held (the pre-image is in the store, and the
 * journal is still there if this is interrupted); anything else is someone else's change since
 * and is kept. Directories the operation removed come back first, those it created go last
 * (when empty). Leftover temp files of interrupted atomic writes to these paths are removed.
 */
export function rollBackOperation(options: {
  root: string;
  record: OperationRecord;
  /** The bytes of a pre-image, or null when they are not available. */
  preImage: (image: FileImage) => Uint8Array | null;
}): RollBackResult {
  const { root, record } = options;
  const depth = (p: string) => p.split("/").length;
  const result: RollBackResult = { restored: [], kept: [] };
  const removed = record.directories.filter((d) => d.action === "removed");
  for (const d of [...removed].sort((a, b) => depth(a.path) - depth(b.path))) {
    if (currentImage(root, d.path) === null) makeWorkspaceDirectory(root, d.path);
  }
  for (const p of pathImagesOf(record)) {
    removeTempsOf(root, p.path);
    const current = currentImage(root, p.path);
    if (matchesImage(current, p.pre)) continue;
    if (current === "not-a-file" || (current !== null && !matchesImage(current, p.post))) {
      result.kept.push(p.path);
      continue;
    }
    restorePre(root, p, current !== null, options.preImage, result);
    faultPoint("ledger:rollback");
  }
  const created = record.directories.filter((d) => d.action === "created");
  for (const d of [...created].sort((a, b) => depth(b.path) - depth(a.path)))
    removeWorkspaceDirectory(root, d.path);
  return result;
}

function restorePre(
  root: string,
  p: PathImages,
  present: boolean,
  preImage: (image: FileImage) => Uint8Array | null,
  result: RollBackResult,
): void {
  const bytes = p.pre === null ? null : preImage(p.pre);
  if (p.pre !== null && bytes === null) {
    result.kept.push(p.path);
    return;
  }
  if (present) writeWorkspacePath(root, p.path, null);
  if (p.pre !== null && bytes !== null)
    writeWorkspacePath(root, p.path, { bytes, mode: p.pre.mode as FileState["mode"] });
  result.restored.push(p.path);
}

/** Remove `.<name>.tw-tmp-*` beside `rel`: an atomic write killed before its rename. */
function removeTempsOf(root: string, rel: string): void {
  try {
    resolveWorkspacePath(root, rel);
  } catch {
    return; // a parent is a symlink now: whatever lies behind it is not ours to delete
  }
  const dir = dirname(join(root, rel));
  const prefix = `.${basename(rel)}`;
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return;
  }
  for (const name of names) {
    if (!name.startsWith(prefix)) continue;
    const rest = name.slice(prefix.length);
    // exactly `.tw-tmp-<pid>-<hex>` after the name: never another file that merely shares it
    if (rest.startsWith(".") && isTempName(rest) && !rest.includes(".", 1))
      rmSync(join(dir, name), { force: true });
  }
}
