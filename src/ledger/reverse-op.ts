import { readdirSync } from "node:fs";
import { join } from "node:path";
import {
  assertSafeRelPath,
  assertSafeToRead,
  ErrorCode,
  isTimewarpError,
  pathTextOf,
  TimewarpError,
  toFsPath,
} from "../core/index.ts";
import { applyFilePatch, type FilePatch, parsePatch } from "../diff/index.ts";
import { createObjectStore, type ObjectStore } from "../store/index.ts";
import { withLedgerWriter } from "./complete-pending-operation.ts";
import { idAt, loadIndex, positionOf } from "./history-index.ts";
import type { LedgerContext } from "./ledger-context.ts";
import { type LedgerPaths, ledgerPaths } from "./ledger-paths.ts";
import { readMilestone } from "./milestone-store.ts";
import { readOperation } from "./operation-store.ts";
import { assertWritable, withCreatedParents } from "./plan-workspace-writes.ts";
import { diffOfEdits, type FileEdit, isRealChange, oidOf } from "./record-operation.ts";
import {
  type DirectoryChange,
  type FileChange,
  MILESTONE_ID_PATTERN,
  type OperationRecord,
} from "./schema.ts";
import { type FileState, isDirectory, readFileState } from "./workspace-files.ts";
import { assertLedgerWritable } from "./write-guard.ts";
import { writeOperation } from "./write-operation.ts";

export interface ReverseOpParams {
  /** The operation to revert, or a milestone id (`milestone_001`) to revert all its operations. */
  snapshotId: string;
  dryRun?: boolean;
  /** Revert every operation recorded after this one, newest first (`snapshotId` must be one of them). */
  targetSnapshot?: string;
  /** Overwrite later changes: restore the exact pre-image when stored, else apply with offset and fuzz. */
  force?: boolean;
}

/** One hunk (or whole-file condition, hunk 0) that keeps an operation from being reverted. */
export interface ReverseConflict {
  operationId: string;
  path: string;
  hunk: number;
  header: string;
  reason: string;
  expectedAt: number;
}

/** The seed's ReverseOpReturns, plus structured conflicts and the ids reverted. */
export interface ReverseOpResult {
  success: boolean;
  message: string;
  reversedDiff?: string;
  affectedFiles?: string[];
  /** One line per conflicting hunk: "path: hunk N @@ … @@: reason (operation id)". */
  conflicts?: string[];
  conflictDetails?: ReverseConflict[];
  newSnapshotId?: string;
  /** The operations reverted (or that would be, on dryRun), newest first. */
  revertedIds: string[];
  dryRun: boolean;
}

/** How the ladder restored one file, for the message. */
type Rung = "exact" | "reverse-diff" | "forced";

/**
 * A virtual tree over the workspace: reads fall through to disk until a planned step overrides
 * them, so a chain of reverts is planned completely before a single byte is written.
 */
class Overlay {
  readonly files = new Map<string, FileState | null>();
  readonly dirs = new Map<string, boolean>();
  readonly root: string;
  constructor(root: string) {
    this.root = root;
  }
  // Paths come from records (untrusted: hand-edited, or a parent swapped for a symlink since),
  // so each disk read is checked as a write would be: no `..`, no symlink on the way.
  file(rel: string): FileState | null {
    if (this.files.has(rel)) return this.files.get(rel) ?? null;
    assertSafeToRead(this.root, rel);
    // A directory where a file was (an operation that replaced a file by a directory): no file
    // here; whether the revert may put the file back is for the plan's directory steps and
    // assertWritable to say.
    if (isDirectory(join(this.root, rel))) return null;
    return readFileState(join(this.root, rel), rel, { links: true });
  }
  dir(rel: string): boolean {
    const planned = this.dirs.get(rel);
    if (planned !== undefined) return planned;
    assertSafeToRead(this.root, rel);
    return isDirectory(join(this.root, rel));
  }
}

/** Every path a record names must be a plain workspace-relative path (UNSAFE_PATH otherwise). */
function assertRecordPaths(op: OperationRecord): void {
  const what = `operation ${op.id} names the path`;
  for (const fc of op.files)
    for (const p of [fc.oldPath, fc.newPath]) if (p !== null) assertSafeRelPath(p, what);
  for (const d of op.directories) assertSafeRelPath(d.path, what);
  for (const p of op.reverseDiff === "" ? [] : parsePatch(op.reverseDiff))
    for (const q of [p.oldPath, p.newPath]) if (q !== null) assertSafeRelPath(q, what);
}

function formatConflict(c: ReverseConflict): string {
  const where =
    c.hunk === 0
      ? ""
      : ` hunk ${c.hunk} ${c.header}${c.expectedAt > 0 ? ` (expected at line ${c.expectedAt})` : ""}`;
  return `${c.path}:${where}: ${c.reason} [operation ${c.operationId}]`;
}

function findReversePatch(patches: FilePatch[], fc: FileChange): FilePatch | undefined {
  // Record paths keep a name's exact bytes (`pathTextOf`); so must the comparison.
  const name = (text: string | null, bytes: Uint8Array | null | undefined) =>
    text === null ? null : bytes ? pathTextOf(bytes) : text;
  return patches.find(
    (p) =>
      name(p.oldPath, p.oldPathBytes) === fc.newPath &&
      name(p.newPath, p.newPathBytes) === fc.oldPath,
  );
}

/** The operations a request reverts, newest first (index order, which is recording order). */
function selectOperations(paths: LedgerPaths, params: ReverseOpParams): string[] {
  const index = loadIndex(paths.index);
  const position = (id: string) => {
    const at = positionOf(index, id);
    if (at === undefined) {
      readOperation(paths, id); // OPERATION_NOT_FOUND with the usual message when truly absent
      throw new TimewarpError(
        ErrorCode.OPERATION_NOT_FOUND,
        `operation ${id} is not in the history index; run repairIndex`,
        {
          data: { id },
        },
      );
    }
    return at;
  };
  if (MILESTONE_ID_PATTERN.test(params.snapshotId)) {
    const milestone = readMilestone(paths, params.snapshotId);
    return [...milestone.snapshotIds].sort((a, b) => position(b) - position(a));
  }
  const at = position(params.snapshotId);
  if (params.targetSnapshot === undefined) return [params.snapshotId];
  const target = position(params.targetSnapshot);
  if (at <= target) {
    throw new TimewarpError(
      ErrorCode.INVALID_INPUT,
      `targetSnapshot ${params.targetSnapshot} must be older than snapshotId ${params.snapshotId}: every operation after the target is reverted`,
    );
  }
  const ids: string[] = [];
  for (let i = index.count - 1; i > target; i--) ids.push(idAt(index, i));
  return ids;
}

interface PlanResult {
  conflicts: ReverseConflict[];
  rungs: Map<string, Rung>;
}

/** Plan the reversal of one operation onto the overlay (pure apart from reads). */
function planOne(options: {
  op: OperationRecord;
  overlay: Overlay;
  store: ObjectStore;
  force: boolean;
  out: PlanResult;
}): void {
  const { op, overlay, store, force, out } = options;
  const conflict = (path: string, reason: string, hunk = 0, header = "", expectedAt = 0) =>
    out.conflicts.push({ operationId: op.id, path, hunk, header, reason, expectedAt });
  const patches = op.reverseDiff === "" ? [] : parsePatch(op.reverseDiff);
  // Directories an operation removed come back before its files.
  for (const d of [...op.directories].reverse()) {
    if (d.action !== "removed") continue;
    if (overlay.file(d.path) !== null)
      conflict(d.path, "a file now stands where the removed directory was");
    else overlay.dirs.set(d.path, true);
  }
  for (const fc of op.files) {
    const path = fc.newPath ?? fc.oldPath ?? "";
    const cur = fc.newPath === null ? null : overlay.file(fc.newPath);
    if (fc.newPath !== null && cur === null) {
      conflict(fc.newPath, "the file no longer exists");
      continue;
    }
    if (fc.oldPath !== null && fc.oldPath !== fc.newPath && overlay.file(fc.oldPath) !== null) {
      conflict(
        fc.oldPath,
        fc.newPath === null ? "the deleted file exists again" : "the rename source exists again",
      );
      continue;
    }
    const patch = findReversePatch(patches, fc);
    const exactPre = (): Uint8Array | null => {
      if (fc.before === null) return null;
      if (store.has(fc.before.oid)) return store.read(fc.before.oid, { verify: true });
      return null;
    };
    let restored: FileState | null | undefined;
    let rung: Rung = "exact";
    // Rung 1: the file is exactly what the operation left, so the pre-image is restored exactly.
    if (cur === null || (fc.after !== null && oidOf(cur.bytes) === fc.after.oid)) {
      if (fc.before === null) restored = null;
      else {
        let bytes = exactPre();
        if (bytes === null && patch) {
          const got = tryApply(cur?.bytes ?? null, patch, {});
          if (got.ok && got.bytes !== null && oidOf(got.bytes) === fc.before.oid) bytes = got.bytes;
        }
        if (bytes !== null) restored = { bytes, mode: fc.before.mode as FileState["mode"] };
      }
    }
    // Rung 2: the file changed since; the reverse diff must apply strictly (no offset, no fuzz).
    if (restored === undefined && cur !== null) {
      rung = "reverse-diff";
      if (!patch) {
        conflict(
          path,
          "the operation recorded no reversible diff for this file and its pre-image is not stored",
        );
        continue;
      }
      const got = tryApply(cur.bytes, patch, { checkOid: false });
      if (got.ok) {
        restored = got.bytes === null ? null : { bytes: got.bytes, mode: revertedMode(fc, cur) };
      } else if (force) {
        rung = "forced";
        const pre = exactPre();
        if (fc.before === null) restored = null;
        else if (pre !== null) restored = { bytes: pre, mode: fc.before.mode as FileState["mode"] };
        else {
          const loose = tryApply(cur.bytes, patch, { checkOid: false, allowOffset: true, fuzz: 2 });
          if (loose.ok)
            restored =
              loose.bytes === null ? null : { bytes: loose.bytes, mode: revertedMode(fc, cur) };
          else
            for (const c of loose.conflicts)
              conflict(path, c.reason, c.hunk, c.header, c.expectedAt);
        }
      } else {
        for (const c of got.conflicts) conflict(path, c.reason, c.hunk, c.header, c.expectedAt);
      }
    }
    if (restored === undefined) {
      if (cur === null)
        conflict(path, "the pre-image is neither stored nor reconstructible from the diff");
      continue;
    }
    if (fc.newPath !== null && fc.newPath !== fc.oldPath) overlay.files.set(fc.newPath, null);
    if (fc.oldPath !== null) overlay.files.set(fc.oldPath, restored);
    else if (fc.newPath !== null) overlay.files.set(fc.newPath, null);
    out.rungs.set(path, rung);
  }
  // Directories the operation created go away after its files, deepest first.
  for (const d of [...op.directories].reverse()) {
    if (d.action !== "created") continue;
    if (!overlay.dir(d.path)) continue;
    const left = liveEntries(overlay, d.path);
    if (left.length > 0 && !force)
      conflict(d.path, `the created directory is not empty now (${left.slice(0, 3).join(", ")})`);
    else if (left.length === 0) overlay.dirs.set(d.path, false);
  }
}

/** Entries of a directory that the overlay has not planned away. */
function liveEntries(overlay: Overlay, rel: string): string[] {
  let names: string[] = [];
  try {
    names = readdirSync(toFsPath(join(overlay.root, rel)), { encoding: "buffer" }).map(pathTextOf);
  } catch {
    names = [];
  }
  const prefix = `${rel}/`;
  const live = new Set(
    names
      .map((n) => prefix + n)
      .filter((p) =>
        overlay.files.has(p) ? overlay.files.get(p) !== null : overlay.dirs.get(p) !== false,
      ),
  );
  for (const [p, s] of overlay.files)
    if (s !== null && p.startsWith(prefix) && !p.slice(prefix.length).includes("/")) live.add(p);
  for (const [p, s] of overlay.dirs)
    if (s && p.startsWith(prefix) && !p.slice(prefix.length).includes("/")) live.add(p);
  return [...live];
}

/** Keep a mode changed since; undo the operation's own mode change. */
function revertedMode(fc: FileChange, cur: FileState): FileState["mode"] {
  if (fc.before && fc.after && fc.before.mode !== fc.after.mode && cur.mode === fc.after.mode) {
    return fc.before.mode as FileState["mode"];
  }
  return cur.mode;
}

function tryApply(
  bytes: Uint8Array | null,
  patch: FilePatch,
  options: { checkOid?: boolean; allowOffset?: boolean; fuzz?: number },
):
  | { ok: true; bytes: Uint8Array | null }
  | {
      ok: false;
      conflicts: { hunk: number; header: string; reason: string; expectedAt: number }[];
    } {
  try {
    return { ok: true, bytes: applyFilePatch(bytes, patch, options) };
  } catch (error) {
    if (isTimewarpError(error, "DIFF_APPLY_CONFLICT")) {
      const raw = error.data?.conflicts;
      const conflicts = Array.isArray(raw)
        ? raw.map(
            (c: { hunk?: number; header?: string; reason?: string; expectedAt?: number }) => ({
              hunk: c.hunk ?? 0,
              header: c.header ?? "",
              reason: c.reason ?? error.message,
              expectedAt: c.expectedAt ?? 0,
            }),
          )
        : [{ hunk: 0, header: "", reason: error.message, expectedAt: 0 }];
      return { ok: false, conflicts };
    }
    throw error;
  }
}

/**
 * ReverseOp: undo one operation, every operation after `targetSnapshot`, or a whole milestone,
 * by the rollback ladder — exact pre-image if the file is still what the operation left, else
 * the reverse diff applied strictly, else the conflicting hunks are reported and nothing is
 * changed (unless `force`). Everything is planned first and written only if every file plans
 * cleanly (all or nothing); the rollback is recorded as an operation of its own.
 *
 * Conflicts are an expected outcome, returned as `success: false` with `conflicts`; the CLI turns
 * them into REVERT_CONFLICT.
 */
export async function reverseOp(
  ctx: LedgerContext,
  params: ReverseOpParams,
): Promise<ReverseOpResult> {
  const started = performance.now();
  const paths = ledgerPaths(ctx.root);
  const dryRun = params.dryRun === true;
  const run = (): ReverseOpResult => {
    const ids = selectOperations(paths, params);
    const ops = ids.map((id) => readOperation(paths, id));
    for (const op of ops) assertRecordPaths(op);
    const overlay = new Overlay(paths.root);
    const store = createObjectStore(paths.objects);
    const out: PlanResult = { conflicts: [], rungs: new Map() };
    const initialFiles = new Map<string, FileState | null>();
    const initialDirs = new Map<string, boolean>();
    for (const op of ops) {
      for (const fc of op.files) {
        for (const p of [fc.oldPath, fc.newPath])
          if (p !== null && !initialFiles.has(p)) initialFiles.set(p, overlay.file(p));
      }
      for (const d of op.directories)
        if (!initialDirs.has(d.path)) initialDirs.set(d.path, overlay.dir(d.path));
      planOne({ op, overlay, store, force: params.force === true, out });
    }
    if (out.conflicts.length > 0) {
      return {
        success: false,
        message: `cannot revert ${ids.join(", ")}: ${out.conflicts.length} conflict(s); nothing was changed`,
        conflicts: out.conflicts.map(formatConflict),
        conflictDetails: out.conflicts,
        revertedIds: ids,
        dryRun,
      };
    }
    const edits: FileEdit[] = [];
    for (const [rel, before] of initialFiles) {
      const after = overlay.files.has(rel) ? (overlay.files.get(rel) ?? null) : before;
      const edit = {
        oldPath: before === null ? null : rel,
        newPath: after === null ? null : rel,
        before,
        after,
      };
      if (isRealChange(edit)) edits.push(edit);
    }
    const created: DirectoryChange[] = [];
    const removed: DirectoryChange[] = [];
    for (const [rel, was] of initialDirs) {
      const now = overlay.dir(rel);
      if (now && !was) created.push({ path: rel, action: "created" });
      if (!now && was) removed.push({ path: rel, action: "removed" });
    }
    const depth = (p: string) => p.split("/").length;
    created.sort((a, b) => depth(a.path) - depth(b.path));
    removed.sort((a, b) => depth(b.path) - depth(a.path));
    const dirs = withCreatedParents(paths.root, edits, [...created, ...removed]);
    assertWritable(paths.root, edits, dirs);
    const ladder = [...out.rungs.entries()].map(([p, r]) => `${p} (${r})`).join(", ");
    if (dryRun) {
      const diff = diffOfEdits(edits);
      return {
        success: true,
        message: `dry run: would revert ${ids.join(", ")}${ladder ? `: ${ladder}` : ""}`,
        reversedDiff: diff,
        affectedFiles: [...new Set([...initialFiles.keys(), ...initialDirs.keys()])],
        revertedIds: ids,
        dryRun,
      };
    }
    const timeline = assertLedgerWritable(ctx.root); // under the lock: a travel may have begun
    const record = writeOperation(ctx, paths, {
      tool: "ReverseOp",
      description: `Revert ${ids.length === 1 ? `operation ${ids[0]}` : `${ids.length} operations (${ids.join(", ")})`}`,
      toolParams: { ...params },
      edits,
      directories: dirs,
      reverts: ids,
      timeline,
      event: "edit.reverted",
      started,
    });
    return {
      success: true,
      message: `reverted ${ids.join(", ")}${ladder ? `: ${ladder}` : ""}`,
      reversedDiff: record.diff,
      affectedFiles: record.affectedFiles,
      newSnapshotId: record.id,
      revertedIds: ids,
      dryRun,
    };
  };
  if (dryRun) return run();
  // TRANSITION_INTERRUPTED before anything (issue 16, class 4): recover would rewrite the result.
  assertLedgerWritable(ctx.root);
  return withLedgerWriter(ctx, "ReverseOp", run);
}
