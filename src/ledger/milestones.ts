import { appendEvent, ErrorCode, systemClock, TimewarpError } from "../core/index.ts";
import { type CreateFilePatchOptions, createPatch } from "../diff/index.ts";
import { createObjectStore } from "../store/index.ts";
import { withLedgerWriter } from "./complete-pending-operation.ts";
import { loadIndex, positionOf } from "./history-index.ts";
import type { LedgerContext } from "./ledger-context.ts";
import { type LedgerPaths, ledgerPaths } from "./ledger-paths.ts";
import {
  type CorruptMilestone,
  listMilestonesChecked,
  nextMilestoneId,
  writeMilestone,
} from "./milestone-store.ts";
import { readOperation } from "./operation-store.ts";
import { diffLineStats } from "./record-operation.ts";
import type { FileImage, Milestone, MilestoneSummary, OperationRecord } from "./schema.ts";

export interface CreateMilestoneParams {
  title: string;
  description: string;
  snapshotIds: string[];
  tags?: string[];
}

export interface CreateMilestoneResult {
  success: true;
  milestoneId: string;
  summary: MilestoneSummary;
}

/**
 * The net change of a set of operations, per file: from the first operation's pre-image to the
 * last one's post-image (an edit undone later in the set leaves no trace), as one git diff. The
 * images come from the object store; a file whose images are gone (gc) falls back to its
 * operations' own diffs, in order.
 */
export function combineOperations(paths: LedgerPaths, ops: OperationRecord[]): string {
  const first = new Map<string, FileImage | null>();
  const last = new Map<string, FileImage | null>();
  const order: string[] = [];
  for (const op of ops) {
    for (const fc of op.files) {
      for (const p of [fc.oldPath, fc.newPath]) {
        if (p === null) continue;
        if (!first.has(p)) {
          first.set(p, fc.oldPath === p ? fc.before : null);
          order.push(p);
        }
        last.set(p, fc.newPath === p ? fc.after : null);
      }
    }
  }
  const store = createObjectStore(paths.objects);
  const changes: CreateFilePatchOptions[] = [];
  const fallback: string[] = [];
  for (const p of order) {
    const a = first.get(p) ?? null;
    const b = last.get(p) ?? null;
    if (a?.oid === b?.oid && a?.mode === b?.mode) continue;
    if ((a !== null && !store.has(a.oid)) || (b !== null && !store.has(b.oid))) {
      fallback.push(p);
      continue;
    }
    changes.push({
      oldPath: a === null ? null : p,
      newPath: b === null ? null : p,
      before: a === null ? null : store.read(a.oid),
      after: b === null ? null : store.read(b.oid),
      ...(a === null ? {} : { oldMode: a.mode }),
      ...(b === null ? {} : { newMode: b.mode }),
    });
  }
  let diff = changes.length === 0 ? "" : createPatch(changes);
  for (const op of ops) {
    if (op.affectedFiles.some((f) => fallback.includes(f))) diff += op.diff;
  }
  return diff;
}

/** Validate ids and return the operations in recording order. */
function operationsInOrder(paths: LedgerPaths, ids: string[]): OperationRecord[] {
  if (ids.length === 0)
    throw new TimewarpError(ErrorCode.INVALID_INPUT, "a milestone needs at least one snapshotId");
  const index = loadIndex(paths.index);
  const unique = [...new Set(ids)];
  const ops = unique.map((id) => readOperation(paths, id));
  const pos = (id: string) => positionOf(index, id) ?? Number.MAX_SAFE_INTEGER;
  return ops.sort((a, b) => pos(a.id) - pos(b.id) || a.timestamp.localeCompare(b.timestamp));
}

/** CreateMilestone: group operations under a title, with their net diff and line counts. */
export async function createMilestone(
  ctx: LedgerContext,
  params: CreateMilestoneParams,
): Promise<CreateMilestoneResult> {
  if (params.title.trim() === "")
    throw new TimewarpError(ErrorCode.INVALID_INPUT, "a milestone needs a title");
  const paths = ledgerPaths(ctx.root);
  return withLedgerWriter(ctx, "CreateMilestone", () => {
    const ops = operationsInOrder(paths, params.snapshotIds);
    const combinedDiff = combineOperations(paths, ops);
    const stats = diffLineStats(combinedDiff);
    const files = new Set<string>();
    for (const op of ops) for (const f of op.affectedFiles) files.add(f);
    const summary: MilestoneSummary = {
      totalOperations: ops.length,
      affectedFiles: [...files],
      linesAdded: stats.added,
      linesRemoved: stats.removed,
    };
    const milestone: Milestone = {
      schema_version: 1,
      id: nextMilestoneId(paths),
      timestamp: (ctx.clock ?? systemClock).now().toISOString(),
      title: params.title,
      description: params.description,
      snapshotIds: ops.map((o) => o.id),
      summary,
      combinedDiff,
      tags: params.tags ?? [],
    };
    writeMilestone(paths, milestone);
    appendEvent(
      paths.events,
      "milestone.created",
      { milestone_id: milestone.id },
      ctx.clock ?? systemClock,
    );
    return { success: true, milestoneId: milestone.id, summary };
  });
}

export interface MilestoneItem {
  id: string;
  title: string;
  description: string;
  timestamp: string;
  snapshotIds: string[];
  summary: MilestoneSummary;
  combinedDiff?: string;
  tags: string[];
}

/**
 * GetMilestones: every milestone (oldest first), optionally only those with any of `tags`, and
 * every milestone file that does not read (`corrupt`, whatever the tags: its own cannot be
 * known), so one damaged file hides none of the others (issue 16).
 */
export function getMilestones(
  ctx: LedgerContext,
  params: { includeDiffs?: boolean; tags?: string[] } = {},
): { success: true; milestones: MilestoneItem[]; corrupt: CorruptMilestone[] } {
  const wanted = params.tags && params.tags.length > 0 ? new Set(params.tags) : undefined;
  const listed = listMilestonesChecked(ledgerPaths(ctx.root));
  const milestones = listed.milestones
    .filter((m) => wanted === undefined || m.tags.some((t) => wanted.has(t)))
    .map((m) => ({
      id: m.id,
      title: m.title,
      description: m.description,
      timestamp: m.timestamp,
      snapshotIds: m.snapshotIds,
      summary: m.summary,
      ...(params.includeDiffs === true ? { combinedDiff: m.combinedDiff } : {}),
      tags: m.tags,
    }));
  return { success: true, milestones, corrupt: listed.corrupt };
}
