import { join } from "node:path";
import { assertSafeToRead, systemClock } from "../core/index.ts";
import { createObjectStore } from "../store/index.ts";
import { completePendingOperation } from "./complete-pending-operation.ts";
import { idAt, loadIndex, toolAt } from "./history-index.ts";
import type { LedgerContext } from "./ledger-context.ts";
import { ledgerPaths } from "./ledger-paths.ts";
import { readOperation } from "./operation-store.ts";
import { assertWritable, withCreatedParents } from "./plan-workspace-writes.ts";
import { diffOfEdits, type FileEdit, isRealChange } from "./record-operation.ts";
import type { DirectoryChange } from "./schema.ts";
import { type FileState, isDirectory, readFileState } from "./workspace-files.ts";
import { assertLedgerWritable } from "./write-guard.ts";
import { writeOperation } from "./write-operation.ts";

/**
 * One path and what it is to hold: a file whose bytes are a stored blob (with its git mode), a
 * symlink with its target's bytes, or nothing (null: absent).
 */
export interface PathImage {
  path: string;
  image: { oid: string; mode: "100644" | "100755" } | { target: Uint8Array; mode: "120000" } | null;
}

export interface RestoreImagesParams {
  /** The operation's tool name in the history (`Rewind`). */
  tool: string;
  description: string;
  toolParams: Record<string, unknown>;
  /** Every file or symlink to bring to its image (paths already at it are left out of the record). */
  files: PathImage[];
  /**
   * Directories to create (parents first) and to remove (deepest first; each must be empty once
   * the operation's files are gone, or the operation fails and is rolled back).
   */
  directories: DirectoryChange[];
  dryRun?: boolean;
}

export interface RestoreImagesResult {
  /** The operation recorded; null on a dry run and when every path already held its image. */
  operationId: string | null;
  /** The git-format diff of the change (the preview on a dry run). */
  diff: string;
  /** Paths the operation changes (files and directories). */
  affectedFiles: string[];
  dryRun: boolean;
}

/**
 * Bring workspace paths to images held in the object store as one ledger operation, applied
 * write-ahead like every ledger write (journal first, all or nothing, a crash left for
 * `recover`), so a multi-file restore (`timewarp rewind`) is one record that `ReverseOp`
 * undoes. The caller holds the ledger lock for the whole of its work
 * (`holdLedgerForTransition`); an operation a crashed writer left pending is completed first.
 * Every image is read and re-hashed before anything is written (OBJECT_NOT_FOUND,
 * OBJECT_CORRUPT), and the writes are checked as the edit tools' are (`assertWritable`). A dry
 * run reads only.
 */
export function restoreImages(
  ctx: LedgerContext,
  params: RestoreImagesParams,
): RestoreImagesResult {
  const started = performance.now();
  const paths = ledgerPaths(ctx.root);
  const clock = ctx.clock ?? systemClock;
  const dryRun = params.dryRun === true;
  if (!dryRun) completePendingOperation(paths, clock);
  const store = createObjectStore(paths.objects);
  const edits: FileEdit[] = [];
  for (const { path, image } of params.files) {
    assertSafeToRead(paths.root, path);
    const abs = join(paths.root, path);
    // A directory standing where the image's file goes: no file there now (the directory is
    // among those the operation removes, or `assertWritable` refuses).
    const before = isDirectory(abs) ? null : readFileState(abs, path, { links: true });
    const after: FileState | null =
      image === null
        ? null
        : "target" in image
          ? { bytes: image.target, mode: image.mode }
          : { bytes: store.read(image.oid, { verify: true }), mode: image.mode };
    const edit = {
      oldPath: before === null ? null : path,
      newPath: after === null ? null : path,
      before,
      after,
    };
    if (isRealChange(edit)) edits.push(edit);
  }
  const directories = withCreatedParents(paths.root, edits, params.directories);
  assertWritable(paths.root, edits, directories);
  const affected = [
    ...new Set([
      ...edits.map((e) => e.newPath ?? e.oldPath ?? ""),
      ...directories.map((d) => d.path),
    ]),
  ];
  if (dryRun || (edits.length === 0 && directories.length === 0)) {
    return { operationId: null, diff: diffOfEdits(edits), affectedFiles: affected, dryRun };
  }
  const timeline = assertLedgerWritable(ctx.root);
  const record = writeOperation(ctx, paths, {
    tool: params.tool,
    description: params.description,
    toolParams: params.toolParams,
    edits,
    directories,
    timeline,
    event: "edit.applied",
    started,
  });
  return { operationId: record.id, diff: record.diff, affectedFiles: record.affectedFiles, dryRun };
}

/**
 * The newest operation of `tool` that is still in effect: no later `ReverseOp` (itself not
 * reverted) undid it. Null when there is none. Reads the index and the records of the
 * `ReverseOp`s after it.
 */
export function lastOperationInEffect(
  ctx: LedgerContext,
  tool: string,
): { id: string; timestamp: string; description: string; affectedFiles: string[] } | null {
  const paths = ledgerPaths(ctx.root);
  const index = loadIndex(paths.index);
  const undone = new Set<string>();
  for (let i = index.count - 1; i >= 0; i--) {
    const id = idAt(index, i);
    const kind = toolAt(index, i);
    if (kind === "ReverseOp") {
      if (undone.has(id)) continue; // a revert that was itself reverted undoes nothing
      for (const r of readOperation(paths, id).reverts ?? []) undone.add(r);
    } else if (kind === tool && !undone.has(id)) {
      const op = readOperation(paths, id);
      return {
        id,
        timestamp: op.timestamp,
        description: op.description,
        affectedFiles: op.affectedFiles,
      };
    }
  }
  return null;
}
