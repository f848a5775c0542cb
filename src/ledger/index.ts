/**
 * ledger: the edit ledger of Snapshot System v2 (seed `snapshot-system-v2.zh.md`). Edit tools
 * with dryRun, one operation record per real edit (git diff + reverse diff + pre/post blob ids),
 * history queries over an append-only index, ReverseOp by the rollback ladder, milestones with
 * proposals, and retention. See README.md for the on-disk layout and the invariants.
 *
 * @example
 * const ctx = { root: "/path/to/workspace" };
 * const { snapshotId } = await applyEditBlock(ctx, { path: "src/a.ts", searchBlock: "old", replaceBlock: "new" });
 * await reverseOp(ctx, { snapshotId: snapshotId! });   // the file is byte-for-byte as before
 */

export type { LedgerRecovery } from "./complete-pending-operation.ts";
export { recoverLedger } from "./complete-pending-operation.ts";
export {
  applyEditBlock,
  applyRangedEdit,
  applyUnifiedDiff,
  applyWholeFileEdit,
  createDirectory,
  deletePath,
} from "./edit-tools.ts";
export { fsckLedger } from "./fsck-ledger.ts";
export type { HistoryItem } from "./history.ts";
export { getEditHistory, getOperation, readSnapshotDiff } from "./history.ts";
export type { LedgerContext } from "./ledger-context.ts";
export { holdLedgerForTransition } from "./ledger-lock.ts";
export { ledgerPaths } from "./ledger-paths.ts";
export {
  acceptMilestoneProposal,
  listMilestoneProposals,
  recordMilestoneSignal,
} from "./milestone-proposals.ts";
export { createMilestone, getMilestones } from "./milestones.ts";
export type { RecordedFile } from "./record-edit.ts";
export { recordEdit, recordEdits } from "./record-edit.ts";
export type { PathImage } from "./restore-images.ts";
export { lastOperationInEffect, restoreImages } from "./restore-images.ts";
export { applyRetention, collectLedgerOids, repairIndex } from "./retention.ts";
export { reverseOp } from "./reverse-op.ts";
export { revertOperation } from "./revert-operation.ts";
export type { FileChange, Milestone, OperationRecord } from "./schema.ts";
export { OperationRecordSchema } from "./schema.ts";
