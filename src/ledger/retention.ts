import { unlinkSync } from "node:fs";
import { join } from "node:path";
import { errnoCode, readConfig, readJsonFile, systemClock } from "../core/index.ts";
import { withLedgerWriter } from "./complete-pending-operation.ts";
import {
  type IndexEntry,
  idAt,
  indexEntryAt,
  loadIndex,
  positionOf,
  writeIndex,
} from "./history-index.ts";
import type { LedgerContext } from "./ledger-context.ts";
import { type LedgerPaths, ledgerPaths, recordRelativePath } from "./ledger-paths.ts";
import { listMilestones } from "./milestone-store.ts";
import { readJournal } from "./operation-journal.ts";
import { walkRecordFiles } from "./operation-store.ts";
import { type OperationRecord, OperationRecordSchema } from "./schema.ts";

/**
 * Add to the index every record file it lacks (a writer killed between the record and its index
 * line) and drop index lines whose record is gone. The caller holds the ledger lock. Returns
 * what was adopted and dropped.
 */
export function repairIndexLocked(paths: LedgerPaths): { adopted: string[]; dropped: string[] } {
  const index = loadIndex(paths.index);
  const entries: IndexEntry[] = [];
  const dropped: string[] = [];
  const present = new Set<string>();
  for (const file of walkRecordFiles(paths)) {
    const m = /_([0-9a-z]{10})\.json$/.exec(file);
    if (m?.[1]) present.add(m[1]);
  }
  for (let i = 0; i < index.count; i++) {
    const e = indexEntryAt(index, i);
    if (present.has(e.id)) entries.push(e);
    else dropped.push(e.id);
  }
  const adopted: string[] = [];
  const orphans: IndexEntry[] = [];
  for (const file of walkRecordFiles(paths)) {
    const m = /_([0-9a-z]{10})\.json$/.exec(file);
    if (!m?.[1] || positionOf(index, m[1]) !== undefined) continue;
    const r = readJsonFile(file, OperationRecordSchema);
    orphans.push({
      id: r.id,
      ts: Date.parse(r.timestamp),
      tool: r.tool,
      linesChanged: r.metadata.linesChanged,
      files: r.affectedFiles,
    });
    adopted.push(r.id);
  }
  if (adopted.length > 0 || dropped.length > 0) {
    orphans.sort((a, b) => a.ts - b.ts);
    writeIndex(paths.index, [...entries, ...orphans]);
  }
  return { adopted, dropped };
}

/** `repairIndexLocked` under the ledger lock. */
export async function repairIndex(
  ctx: LedgerContext,
): Promise<{ adopted: string[]; dropped: string[] }> {
  return withLedgerWriter(ctx, "repair ledger index", () =>
    repairIndexLocked(ledgerPaths(ctx.root)),
  );
}

export interface RetentionOptions {
  /** Default: `retention.history_max_age_days` of the config (0: no age limit). */
  maxAgeDays?: number;
  /** Default: `retention.history_max_operations` of the config (0: no count limit). */
  maxOperations?: number;
  dryRun?: boolean;
}

export interface RetentionResult {
  /** Operations removed (or that would be, on dryRun), oldest first. */
  removed: string[];
  /** Operations kept only because a milestone references them. */
  keptForMilestones: number;
  remaining: number;
  dryRun: boolean;
}

/**
 * Drop old operations by age and count, never one a milestone references. The index is
 * rewritten first (atomically), then the record files are deleted: a crash in between leaves
 * records without index lines, which the next run's repair adopts and judges again. Objects are
 * left to the store's gc (see `collectLedgerOids`).
 */
export async function applyRetention(
  ctx: LedgerContext,
  options: RetentionOptions = {},
): Promise<RetentionResult> {
  const paths = ledgerPaths(ctx.root);
  const config = readConfig(paths.config);
  const maxAgeDays = options.maxAgeDays ?? config.retention.history_max_age_days;
  const maxOps = options.maxOperations ?? config.retention.history_max_operations;
  const dryRun = options.dryRun === true;
  const run = (): RetentionResult => {
    if (!dryRun) repairIndexLocked(paths);
    const index = loadIndex(paths.index);
    const protectedIds = new Set(listMilestones(paths).flatMap((m) => m.snapshotIds));
    const now = (ctx.clock ?? systemClock).now().getTime();
    const cutoff = maxAgeDays > 0 ? now - maxAgeDays * 86_400_000 : Number.NEGATIVE_INFINITY;
    const drop = new Set<number>();
    let keptForMilestones = 0;
    const n = index.count;
    let excess = maxOps > 0 ? n - maxOps : 0;
    for (let i = 0; i < n; i++) {
      const old = (index.ts[i] ?? 0) < cutoff;
      const over = excess > 0;
      if (!old && !over) continue;
      if (protectedIds.has(idAt(index, i))) {
        keptForMilestones++;
        continue;
      }
      drop.add(i);
      excess--;
    }
    const removed = [...drop].map((i) => idAt(index, i));
    if (!dryRun && drop.size > 0) {
      const keep: IndexEntry[] = [];
      for (let i = 0; i < n; i++) if (!drop.has(i)) keep.push(indexEntryAt(index, i));
      const files = [...drop].map((i) =>
        join(paths.history, recordRelativePath(index.ts[i] ?? 0, idAt(index, i))),
      );
      writeIndex(paths.index, keep);
      for (const f of files) {
        try {
          unlinkSync(f);
        } catch (error) {
          if (errnoCode(error) !== "ENOENT") throw error;
        }
      }
    }
    return { removed, keptForMilestones, remaining: n - drop.size, dryRun };
  };
  return dryRun ? run() : withLedgerWriter(ctx, "ledger retention", run);
}

/**
 * Every object id the ledger still needs (pre/post images of every operation on disk), to be
 * added to gc's roots so a `timewarp gc` never drops an image a revert or milestone relies on.
 */
export function collectLedgerOids(root: string): Set<string> {
  const paths = ledgerPaths(root);
  const oids = new Set<string>();
  const add = (r: OperationRecord) => {
    for (const f of r.files) {
      if (f.before) oids.add(f.before.oid);
      if (f.after) oids.add(f.after.oid);
    }
  };
  for (const file of walkRecordFiles(paths)) add(readJsonFile(file, OperationRecordSchema));
  // A pending operation's pre-images are what a recovery restores the workspace from.
  const pending = readJournal(paths);
  if (pending !== null) add(pending.record);
  return oids;
}
