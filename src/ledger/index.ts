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
export type { LedgerFsckResult } from "./fsck-ledger.ts";
export { fsckLedger } from "./fsck-ledger.ts";
export type { EditHistory, GetEditHistoryParams, HistoryItem, SnapshotDiff } from "./history.ts";
export { getEditHistory, readSnapshotDiff } from "./history.ts";
export type {
  EditResult,
  LedgerContext,
  LedgerGuardedEdit,
  LedgerGuardVerdict,
} from "./ledger-context.ts";
export { holdLedgerForTransition } from "./ledger-lock.ts";
export type { LedgerPaths } from "./ledger-paths.ts";
export { ledgerPaths } from "./ledger-paths.ts";
export {
  acceptMilestoneProposal,
  listMilestoneProposals,
  recordMilestoneSignal,
} from "./milestone-proposals.ts";
export type { CorruptMilestone } from "./milestone-store.ts";
export type { CreateMilestoneParams, CreateMilestoneResult, MilestoneItem } from "./milestones.ts";
export { createMilestone, getMilestones } from "./milestones.ts";
export type {
  BoundaryReason,
  MilestoneProposal,
  MilestoneSignal,
  OperationSummary,
  ProposeOptions,
} from "./propose-milestones.ts";
export { proposeMilestones } from "./propose-milestones.ts";
export type {
  RecordEditOptions,
  RecordEditResult,
  RecordEditsOptions,
  RecordEditsResult,
  RecordedFile,
} from "./record-edit.ts";
export { recordEdit, recordEdits } from "./record-edit.ts";
export type { PathImage, RestoreImagesParams, RestoreImagesResult } from "./restore-images.ts";
export { lastOperationInEffect, restoreImages } from "./restore-images.ts";
export type { RetentionOptions, RetentionResult } from "./retention.ts";
export { applyRetention, collectLedgerOids, repairIndex } from "./retention.ts";
export type { ReverseConflict, ReverseOpParams, ReverseOpResult } from "./reverse-op.ts";
export { reverseOp } from "./reverse-op.ts";
export type {
  DirectoryChange,
  FileChange,
  FileImage,
  Milestone,
  MilestoneSummary,
  OperationRecord,
} from "./schema.ts";
export { MilestoneSchema, OperationRecordSchema } from "./schema.ts";
