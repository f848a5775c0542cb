import { mkdirSync } from "node:fs";
import {
  appendEvent,
  type Clock,
  fsyncAll,
  gitBlobId,
  type Random,
  systemClock,
  systemRandom,
  type Timeline,
} from "../core/index.ts";
import { createPatch, parsePatch, patchStats, reversePatchText } from "../diff/index.ts";
import { createObjectStore } from "../store/index.ts";
import { appendIndexEntries } from "./history-index.ts";
import type { LedgerPaths } from "./ledger-paths.ts";
import { createOperationId } from "./operation-id.ts";
import { writeOperationRecord } from "./operation-store.ts";
import type { DirectoryChange, FileChange, FileImage, OperationRecord } from "./schema.ts";
import type { FileState } from "./workspace-files.ts";
import { timelineFields } from "./write-guard.ts";

/** One file's change as bytes: what an edit tool computed, or what a hook saw. */
export interface FileEdit {
  /** Workspace-relative path before (null: the file was created). */
  oldPath: string | null;
  /** Workspace-relative path after (null: the file was deleted). */
  newPath: string | null;
  before: FileState | null;
  after: FileState | null;
}

export interface BuildOperationOptions {
  root: string;
  tool: string;
  description: string;
  toolParams: Record<string, unknown>;
  edits: FileEdit[];
  directories?: DirectoryChange[];
  executionTimeMs: number;
  sessionId?: string;
  reverts?: string[];
  /** Where the edit landed (`assertLedgerWritable`); past edits say so in the record. */
  timeline?: Timeline;
  clock?: Clock;
  random?: Random;
}

const oids = new WeakMap<Uint8Array, string>();

/** gitBlobId, remembered per buffer: a 1 MB image is hashed once per operation, not twice. */
export function oidOf(bytes: Uint8Array): string {
  let oid = oids.get(bytes);
  if (oid === undefined) {
    oid = gitBlobId(bytes);
    oids.set(bytes, oid);
  }
  return oid;
}

const image = (state: FileState | null): FileImage | null =>
  state === null ? null : { oid: oidOf(state.bytes), mode: state.mode, size: state.bytes.length };

/** The git-format diff of a set of file edits (pure). Empty when nothing changes. */
export function diffOfEdits(edits: FileEdit[]): string {
  return createPatch(
    edits.map((e) => ({
      oldPath: e.oldPath,
      newPath: e.newPath,
      before: e.before?.bytes ?? null,
      after: e.after?.bytes ?? null,
      ...(e.before ? { oldMode: e.before.mode } : {}),
      ...(e.after ? { newMode: e.after.mode } : {}),
    })),
  );
}

/** Lines added and removed by a diff text. */
export function diffLineStats(diff: string): { added: number; removed: number } {
  let added = 0;
  let removed = 0;
  if (diff === "") return { added, removed };
  for (const p of parsePatch(diff)) {
    const s = patchStats(p);
    added += s.added;
    removed += s.removed;
  }
  return { added, removed };
}

/** False for an "edit" that leaves the file as it was (same path, mode and bytes). */
export function isRealChange(e: FileEdit): boolean {
  if (e.oldPath !== e.newPath) return true;
  if (e.before === null || e.after === null) return e.before !== e.after;
  return e.before.mode !== e.after.mode || !Buffer.from(e.before.bytes).equals(e.after.bytes);
}

/** Build an operation record (pure apart from the id and the clock). */
export function buildOperationRecord(options: BuildOperationOptions): OperationRecord {
  const clock = options.clock ?? systemClock;
  const random = options.random ?? systemRandom;
  const edits = options.edits.filter(isRealChange);
  const diff = diffOfEdits(edits);
  const reverseDiff = diff === "" ? "" : reversePatchText(diff);
  const stats = diffLineStats(diff);
  const files: FileChange[] = edits.map((e) => ({
    oldPath: e.oldPath,
    newPath: e.newPath,
    before: image(e.before),
    after: image(e.after),
  }));
  const directories = options.directories ?? [];
  const affected = new Set<string>();
  for (const f of files) {
    if (f.oldPath !== null) affected.add(f.oldPath);
    if (f.newPath !== null) affected.add(f.newPath);
  }
  for (const d of directories) affected.add(d.path);
  const size = files.reduce((n, f) => n + (f.after?.size ?? f.before?.size ?? 0), 0);
  return {
    schema_version: 1,
    id: createOperationId(random),
    timestamp: clock.now().toISOString(),
    description: options.description,
    tool: options.tool,
    affectedFiles: [...affected],
    diff,
    reverseDiff,
    context: {
      sessionId: options.sessionId,
      workspacePath: options.root,
      toolParams: options.toolParams,
    },
    metadata: {
      filesSizeBytes: size,
      linesChanged: stats.added + stats.removed,
      linesAdded: stats.added,
      linesRemoved: stats.removed,
      executionTimeMs: options.executionTimeMs,
    },
    files,
    directories,
    reverts: options.reverts,
    ...(options.timeline === undefined ? {} : timelineFields(options.timeline)),
  };
}

/** The events a recorded operation announces, by who made it. */
export type OperationEvent = "edit.applied" | "edit.recorded" | "edit.reverted";

/**
 * Store the pre- and post-images of `edits` (write-once, content-addressed). With `syncPre`,
 * each pre-image written now is fsynced: a write-ahead operation may need it to roll the
 * workspace back after a power cut, and its journal's fsync (which follows) commits the
 * object's rename with it on a journaled file system.
 */
export function storeImages(
  paths: LedgerPaths,
  edits: FileEdit[],
  options: { syncPre: boolean } = { syncPre: false },
): void {
  mkdirSync(paths.history, { recursive: true });
  const store = createObjectStore(paths.objects);
  const written: string[] = [];
  for (const e of edits) {
    if (e.before !== null) {
      const oid = oidOf(e.before.bytes);
      if (store.writeKnown(oid, e.before.bytes) && options.syncPre) written.push(store.pathOf(oid));
    }
    if (e.after !== null) store.writeKnown(oidOf(e.after.bytes), e.after.bytes);
  }
  // (all at once: a revert of many files is one wait, not one per file)
  if (written.length > 0) fsyncAll({ files: written });
}

/** The record (atomic rename, fsynced) and then its index line (one fsynced append). */
export function commitRecord(paths: LedgerPaths, record: OperationRecord): void {
  writeOperationRecord(paths, record);
  appendRecordIndexLine(paths, record);
}

/** The index line of a record whose file is written (one fsynced append). */
export function appendRecordIndexLine(paths: LedgerPaths, record: OperationRecord): void {
  appendIndexEntries(paths.index, [
    {
      id: record.id,
      ts: Date.parse(record.timestamp),
      tool: record.tool,
      linesChanged: record.metadata.linesChanged,
      files: record.affectedFiles,
    },
  ]);
}

/** Tell the event bus about a recorded operation. */
export function announceOperation(
  paths: LedgerPaths,
  record: OperationRecord,
  event: OperationEvent,
  clock: Clock,
): void {
  if (event === "edit.reverted") {
    appendEvent(
      paths.events,
      "edit.reverted",
      {
        operation_id: record.id,
        reverted: record.reverts ?? [],
        ...(record.context.sessionId === undefined ? {} : { session_id: record.context.sessionId }),
      },
      clock,
    );
  } else {
    appendEvent(
      paths.events,
      event,
      {
        operation_id: record.id,
        tool: record.tool,
        files: record.affectedFiles,
        // the dashboard's timeline groups edits by session without opening their records
        ...(record.context.sessionId === undefined ? {} : { session_id: record.context.sessionId }),
      },
      clock,
    );
  }
}

/**
 * Persist the record of an edit someone else already made (the workspace is not written here;
 * edits the ledger makes itself go through `applyOperation`, write-ahead). The caller holds the
 * ledger lock. Order, for kill -9 safety: the pre- and post-image objects, then the record
 * (atomic rename), then its index line (one append). A crash leaves at worst unreferenced
 * objects or a record without an index line: readers still find it by id, and `repairIndex`
 * adds it back.
 */
export function persistOperation(
  paths: LedgerPaths,
  record: OperationRecord,
  edits: FileEdit[],
  options: { clock: Clock; event: OperationEvent },
): void {
  storeImages(paths, edits);
  commitRecord(paths, record);
  announceOperation(paths, record, options.event, options.clock);
}
