import { existsSync } from "node:fs";
import { join } from "node:path";
import { ErrorCode, isTimewarpError, readJsonFile, TimewarpError } from "../core/index.ts";
import { formatPatch, type PatchFormat, parsePatch } from "../diff/index.ts";
import { filesAt, idAt, loadIndex, toolAt } from "./history-index.ts";
import type { LedgerContext } from "./ledger-context.ts";
import { ledgerPaths, recordRelativePath } from "./ledger-paths.ts";
import { readOperation } from "./operation-store.ts";
import { queryHistoryIndex } from "./query-history.ts";
import { type OperationRecord, OperationRecordSchema } from "./schema.ts";

export interface GetEditHistoryParams {
  /** 1..100, default 20. */
  limit?: number;
  includeDiffs?: boolean;
  /** ISO time, inclusive. */
  since?: string;
  until?: string;
  toolFilter?: string[];
  /** picomatch glob over workspace-relative paths; an operation matches if any of its files does. */
  fileFilter?: string;
  /** From `pagination.nextCursor` of the previous page. */
  cursor?: string;
}

export interface HistoryItem {
  id: string;
  timestamp: string;
  description: string;
  tool: string;
  affectedFiles: string[];
  diff?: string;
  metadata: { linesChanged: number; executionTimeMs: number };
  /** False when the index lists the operation but its record file is gone (it is then described from the index). */
  recordPresent?: boolean;
  /** "past" for an operation made during a travel; `travel` names the snapshot and backup. */
  timeline?: "past";
  travel?: { snapshotId: string; backupId: string | null };
}

/** The seed's GetEditHistoryReturns. */
export interface EditHistory {
  success: true;
  history: HistoryItem[];
  pagination: { total: number; hasMore: boolean; nextCursor?: string };
}

function parseTime(value: string | undefined, name: string): number | undefined {
  if (value === undefined) return undefined;
  const ms = Date.parse(value);
  if (!Number.isFinite(ms)) {
    throw new TimewarpError(
      ErrorCode.INVALID_INPUT,
      `${name} ${JSON.stringify(value)} is not an ISO time (e.g. 2026-01-06T14:30:00Z)`,
    );
  }
  return ms;
}

/**
 * GetEditHistory: newest first, filtered by time, tool and file glob, paginated by cursor. The
 * filters run on the index alone; only the page's own records (at most `limit`) are opened.
 */
export function getEditHistory(ctx: LedgerContext, params: GetEditHistoryParams = {}): EditHistory {
  const limit = params.limit ?? 20;
  if (!Number.isInteger(limit) || limit < 1 || limit > 100) {
    throw new TimewarpError(
      ErrorCode.INVALID_INPUT,
      `limit must be an integer in 1..100, got ${limit}`,
    );
  }
  const paths = ledgerPaths(ctx.root);
  const index = loadIndex(paths.index);
  const sinceMs = parseTime(params.since, "since");
  const untilMs = parseTime(params.until, "until");
  const page = queryHistoryIndex(
    index,
    {
      sinceMs,
      untilMs,
      tools: params.toolFilter,
      fileGlob: params.fileFilter,
    },
    { limit, cursor: params.cursor },
  );
  const history = page.positions.map((i): HistoryItem => {
    const id = idAt(index, i);
    const ts = index.ts[i] ?? 0;
    const file = join(paths.history, recordRelativePath(ts, id));
    if (!existsSync(file)) {
      return {
        id,
        timestamp: new Date(ts).toISOString(),
        description: "(record missing)",
        tool: toolAt(index, i),
        affectedFiles: filesAt(index, i),
        metadata: { linesChanged: index.linesChanged[i] ?? 0, executionTimeMs: 0 },
        recordPresent: false,
      };
    }
    const r = readJsonFile(file, OperationRecordSchema);
    return {
      id: r.id,
      timestamp: r.timestamp,
      description: r.description,
      tool: r.tool,
      affectedFiles: r.affectedFiles,
      ...(params.includeDiffs === true ? { diff: r.diff } : {}),
      metadata: {
        linesChanged: r.metadata.linesChanged,
        executionTimeMs: r.metadata.executionTimeMs,
      },
      timeline: r.timeline,
      travel: r.travel,
    };
  });
  return {
    success: true,
    history,
    pagination: {
      total: page.total,
      hasMore: page.hasMore,
      nextCursor: page.nextCursor,
    },
  };
}

/** The seed's ReadSnapshotDiffReturns (success is always true; a missing id throws). */
export interface SnapshotDiff {
  success: true;
  diff: string;
  snapshot: {
    id: string;
    timestamp: string;
    description: string;
    tool: string;
    affectedFiles: string[];
  };
}

/**
 * ReadSnapshotDiff: the diff an operation recorded, as `unified` (plain `---`/`+++`), `context`
 * (diff -c) or `git` (the record as stored, byte for byte). OPERATION_NOT_FOUND when absent.
 */
export function readSnapshotDiff(
  ctx: LedgerContext,
  params: { snapshotId: string; format?: PatchFormat },
): SnapshotDiff {
  const record = readOperation(ledgerPaths(ctx.root), params.snapshotId);
  const format = params.format ?? "unified";
  let diff = record.diff;
  if (format !== "git" && diff !== "") {
    try {
      diff = formatPatch(parsePatch(diff), format);
    } catch (error) {
      if (!isTimewarpError(error)) throw error;
      throw new TimewarpError(
        ErrorCode.CORRUPT_FILE,
        `operation ${record.id}: its diff does not parse (${error.message})`,
        {
          cause: error,
        },
      );
    }
  }
  return {
    success: true,
    diff,
    snapshot: {
      id: record.id,
      timestamp: record.timestamp,
      description: record.description,
      tool: record.tool,
      affectedFiles: record.affectedFiles,
    },
  };
}

/**
 * One operation's whole record (diff, reverse diff, per-file images, session, stats), as the
 * dashboard's edit view shows it. OPERATION_NOT_FOUND when absent.
 */
export function getOperation(ctx: LedgerContext, params: { snapshotId: string }): OperationRecord {
  return readOperation(ledgerPaths(ctx.root), params.snapshotId);
}
