import { unlinkSync } from "node:fs";
import { z } from "zod";
import {
  ErrorCode,
  errnoCode,
  fromSystemError,
  isTimewarpError,
  readJsonFile,
  TimewarpError,
  writeJsonAtomic,
} from "../core/index.ts";
import type { LedgerPaths } from "./ledger-paths.ts";
import { type FileImage, type OperationRecord, OperationRecordSchema } from "./schema.ts";

/**
 * The write-ahead journal, `history/journal.json`: the operation being applied, recorded as
 * pending (with its whole record, so its pre- and post-images are named) before the first byte
 * of the workspace changes, and removed once the record and its index line are written. The
 * ledger lock serializes writers, so there is at most one. Whoever takes the lock next (a
 * writer, or `timewarp recover`) finishes it: see `completePendingOperation`.
 */
export const LedgerJournalSchema = z.object({
  schema_version: z.literal(1),
  state: z.literal("pending"),
  /** What the completed operation announces on the event bus. */
  event: z.enum(["edit.applied", "edit.reverted"]),
  /** The writer (for a human reading the file; the lock says who holds the ledger). */
  pid: z.number().int(),
  record: OperationRecordSchema,
});
export type LedgerJournal = z.infer<typeof LedgerJournalSchema>;

/** One workspace path an operation touches: its image before and after (null: absent). */
export interface PathImages {
  path: string;
  pre: FileImage | null;
  post: FileImage | null;
}

/** The per-path view of a record's files (a rename is a deletion plus a creation). */
export function pathImagesOf(record: OperationRecord): PathImages[] {
  const byPath = new Map<string, PathImages>();
  const at = (path: string) => {
    let p = byPath.get(path);
    if (p === undefined) {
      p = { path, pre: null, post: null };
      byPath.set(path, p);
    }
    return p;
  };
  for (const f of record.files) {
    if (f.oldPath !== null) at(f.oldPath).pre = f.before;
    if (f.newPath !== null) at(f.newPath).post = f.after;
  }
  return [...byPath.values()];
}

/** Write the journal durably (temp, fsync, rename, directory fsync). */
export function writeJournal(paths: LedgerPaths, journal: LedgerJournal): void {
  writeJsonAtomic(paths.journal, journal);
}

/** The pending journal, or null. CORRUPT_FILE when it is there but unreadable. */
export function readJournal(paths: LedgerPaths): LedgerJournal | null {
  try {
    return readJsonFile(paths.journal, LedgerJournalSchema);
  } catch (error) {
    if (isTimewarpError(error, "NOT_FOUND")) return null;
    if (isTimewarpError(error, "CORRUPT_FILE")) {
      throw new TimewarpError(
        ErrorCode.CORRUPT_FILE,
        `${paths.journal}: the ledger's write-ahead journal is unreadable (${error.message}); the workspace may hold a half-applied edit: compare it with the journal's record, then delete the file`,
        { data: { path: paths.journal }, cause: error },
      );
    }
    throw error;
  }
}

/** Remove the journal (the operation is complete, or fully rolled back). */
export function clearJournal(paths: LedgerPaths): void {
  try {
    unlinkSync(paths.journal);
  } catch (error) {
    if (errnoCode(error) !== "ENOENT") throw fromSystemError(error, `removing ${paths.journal}`);
  }
}
