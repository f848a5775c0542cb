import { z } from "zod";

/**
 * 2: the record's manifest file may be the root of a tree whose nodes are in
 * `.timewarp/manifests/` (issue 22). Timewarps before trees accept only 1, so they refuse such a
 * record as CORRUPT_FILE (its schema_version) instead of reading a root as a manifest. Records
 * of version 1 (whole canonical texts) still read.
 */
export const SNAPSHOT_RECORD_SCHEMA_VERSION = 2;
/** The versions this timewarp reads. */
const READ_VERSIONS = [1, SNAPSHOT_RECORD_SCHEMA_VERSION] as const;

/** Where a record lives: `snapshots/<id>/` or (for the time machine) `present_backup/<id>/`. */
export const RecordKindSchema = z.enum(["snapshot", "present_backup"]);
export type RecordKind = z.infer<typeof RecordKindSchema>;

export const SkippedPathSchema = z.object({
  path: z.string(),
  path_b64: z.string().optional(),
  reason: z.enum([
    "special_file",
    "too_large",
    "unreadable",
    "changed_while_reading",
    "unreadable_directory",
  ]),
  detail: z.string(),
});

/**
 * `snapshot.json`: the seed's fields (§4: snapshot_id, created_at, session_id, workspace_root,
 * exclude_globs, and from the zh text env_fingerprint, initial_task_hint) plus what the
 * content-addressed store needs: counts, `partial` with the skipped paths, and the manifest
 * file with its hash. A `present_backup` record carries `backup_id` in place of `snapshot_id`.
 * `files`, `bytes` and `manifest.hash` are the record's fingerprint.
 */
export const SnapshotRecordSchema = z
  .object({
    schema_version: z.union(READ_VERSIONS.map((v) => z.literal(v))),
    kind: RecordKindSchema,
    snapshot_id: z.string().optional(),
    backup_id: z.string().optional(),
    created_at: z.string(),
    session_id: z.string().nullable(),
    /**
     * `manual`: made by hand (`snapshot create`), never removed by a session start's cleanup.
     * `turn`: a turn checkpoint (a user prompt), kept while a turn record names it.
     */
    origin: z.enum(["manual", "session", "turn"]).optional(),
    workspace_root: z.string(),
    exclude_globs: z.array(z.string()),
    env_fingerprint: z.record(z.string(), z.unknown()).optional(),
    initial_task_hint: z.string().optional(),
    files: z.number().int().nonnegative(),
    dirs: z.number().int().nonnegative(),
    symlinks: z.number().int().nonnegative(),
    bytes: z.number().int().nonnegative(),
    partial: z.boolean(),
    skipped: z.array(SkippedPathSchema),
    manifest: z.object({
      /**
       * File name beside snapshot.json: the brotli'd root of the manifest's tree, whose nodes are
       * in `.timewarp/manifests/` (older records: the whole canonical JSON, brotli or gzip).
       */
      file: z
        .string()
        .regex(/^[^/\\]+$/)
        .refine((f) => f !== "." && f !== "..", "a file name"),
      /**
       * `hashManifest` of the manifest: the git blob id of its tree's root text (records written
       * before trees: of the whole canonical text), which the file holds uncompressed.
       */
      hash: z.string().regex(/^[0-9a-f]{40}$/),
      entries: z.number().int().nonnegative(),
    }),
  })
  .passthrough()
  .refine((r) => (r.kind === "snapshot" ? r.snapshot_id : r.backup_id) !== undefined, {
    message: "a snapshot record needs snapshot_id, a present_backup record backup_id",
  });

export type SnapshotRecord = z.infer<typeof SnapshotRecordSchema>;

/** The id of a record, whichever kind it is. */
export function recordId(record: SnapshotRecord): string {
  return (record.kind === "snapshot" ? record.snapshot_id : record.backup_id) ?? "";
}
