import { systemClock, type Timeline } from "../core/index.ts";
import { applyOperation } from "./apply-operation.ts";
import type { LedgerContext } from "./ledger-context.ts";
import type { LedgerPaths } from "./ledger-paths.ts";
import { buildOperationRecord, type FileEdit } from "./record-operation.ts";
import type { DirectoryChange, OperationRecord } from "./schema.ts";

export interface WriteOperationOptions {
  tool: string;
  description: string;
  toolParams: Record<string, unknown>;
  /** The planned changes, already filtered to real ones and checked (`assertWritable`). */
  edits: FileEdit[];
  directories: DirectoryChange[];
  /** Ids this operation reverts (a `ReverseOp`). */
  reverts?: string[];
  /** Where the operation lands: `assertLedgerWritable`'s answer, taken under the lock. */
  timeline: Timeline;
  event: "edit.applied" | "edit.reverted";
  /** `performance.now()` when the operation began. */
  started: number;
}

/**
 * The ledger's one write sequence: build the operation's record from the context (session,
 * clock, random) and apply it write-ahead (`applyOperation`: journal, workspace, record, index,
 * event). The caller holds the ledger lock (`withLedgerWriter`, or `holdLedgerForTransition`
 * with the pending operation completed) and has checked the state under it.
 */
export function writeOperation(
  ctx: LedgerContext,
  paths: LedgerPaths,
  options: WriteOperationOptions,
): OperationRecord {
  const record = buildOperationRecord({
    root: paths.root,
    tool: options.tool,
    description: options.description,
    toolParams: options.toolParams,
    edits: options.edits,
    directories: options.directories,
    timeline: options.timeline,
    executionTimeMs: Math.round((performance.now() - options.started) * 100) / 100,
    reverts: options.reverts,
    sessionId: ctx.sessionId,
    clock: ctx.clock,
    random: ctx.random,
  });
  applyOperation({
    paths,
    record,
    edits: options.edits,
    event: options.event,
    clock: ctx.clock ?? systemClock,
    started: options.started,
  });
  return record;
}
