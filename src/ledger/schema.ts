import { z } from "zod";

/**
 * One side of a file change: git blob id, git mode (`100644`, `100755`, or `120000` for a
 * symlink a patch made, whose blob is its target) and size in bytes.
 */
export const FileImageSchema = z.object({
  oid: z.string().regex(/^[0-9a-f]{40}$/),
  mode: z.string().regex(/^1(00644|00755|20000)$/),
  size: z.number().int().nonnegative(),
});
export type FileImage = z.infer<typeof FileImageSchema>;

/**
 * One file touched by an operation. `oldPath` null is a creation, `newPath` null a deletion,
 * two different paths a rename. `before` describes `oldPath`'s content, `after` `newPath`'s.
 */
export const FileChangeSchema = z.object({
  oldPath: z.string().nullable(),
  newPath: z.string().nullable(),
  before: FileImageSchema.nullable(),
  after: FileImageSchema.nullable(),
});
export type FileChange = z.infer<typeof FileChangeSchema>;

/** A directory an operation created or removed (git diffs cannot say so). */
export const DirectoryChangeSchema = z.object({
  path: z.string(),
  action: z.enum(["created", "removed"]),
});
export type DirectoryChange = z.infer<typeof DirectoryChangeSchema>;

/**
 * An operation record, `history/snapshots/YYYY/MM/DD/HHMMSS_<id>.json`: the seed v2 "Snapshot
 * format" fields as the seed names them, plus `schema_version`, the per-file pre/post images
 * (`files`), directory changes, and for rollbacks the ids they reverted.
 */
export const OperationRecordSchema = z.object({
  schema_version: z.literal(1),
  id: z.string(),
  timestamp: z.string(),
  description: z.string(),
  tool: z.string(),
  affectedFiles: z.array(z.string()),
  diff: z.string(),
  reverseDiff: z.string(),
  context: z
    .object({
      sessionId: z.string().optional(),
      workspacePath: z.string(),
      toolParams: z.record(z.string(), z.unknown()),
    })
    .passthrough(),
  metadata: z
    .object({
      filesSizeBytes: z.number(),
      linesChanged: z.number(),
      linesAdded: z.number(),
      linesRemoved: z.number(),
      executionTimeMs: z.number(),
    })
    .passthrough(),
  files: z.array(FileChangeSchema),
  directories: z.array(DirectoryChangeSchema),
  /** For a rollback: the operations it reverted, newest first. */
  reverts: z.array(z.string()).optional(),
  /**
   * "past" when the operation was made during a travel (absent: the present). `return` keeps
   * such work as a patch (`.timewarp/past-work/`), never drops it (issue 16, class 4).
   */
  timeline: z.literal("past").optional(),
  /** The travel the operation was made in: the snapshot travelled to and the present's backup. */
  travel: z.object({ snapshotId: z.string(), backupId: z.string().nullable() }).optional(),
});
export type OperationRecord = z.infer<typeof OperationRecordSchema>;

export const MilestoneSummarySchema = z.object({
  totalOperations: z.number().int(),
  affectedFiles: z.array(z.string()),
  linesAdded: z.number().int(),
  linesRemoved: z.number().int(),
});
export type MilestoneSummary = z.infer<typeof MilestoneSummarySchema>;

/** A milestone, `history/milestones/milestone_NNN.json`, in the seed's "Milestone format". */
export const MilestoneSchema = z.object({
  schema_version: z.literal(1),
  id: z.string().regex(/^milestone_\d{3,}$/),
  timestamp: z.string(),
  title: z.string(),
  description: z.string(),
  snapshotIds: z.array(z.string()),
  summary: MilestoneSummarySchema,
  combinedDiff: z.string(),
  tags: z.array(z.string()),
});
export type Milestone = z.infer<typeof MilestoneSchema>;

/** Operation ids: 10 lowercase base36 characters (the seed's short id, a little longer). */
export const OPERATION_ID_PATTERN = /^[0-9a-z]{10}$/;
export const MILESTONE_ID_PATTERN = /^milestone_\d{3,}$/;
