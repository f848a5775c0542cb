/**
 * diff: git-compatible unified diffs. Create (git's extended format, binary deltas or
 * literals), parse (multi-file, byte-exact quoted names), apply strictly (conflicts as values
 * or a coded error), reverse, and format as unified, context or git. The original diff text
 * stays the record.
 *
 * @example
 * const text = createFilePatch({ oldPath: "a.txt", newPath: "a.txt", before, after });
 * const [patch] = parsePatch(text);
 * applyFilePatch(before, patch);                  // → after (bytes)
 * applyFilePatch(after, reverseFilePatch(patch)); // → before
 */

export { applyFilePatch, checkFilePatch } from "./apply-file-patch.ts";
/** git's copy/insert delta, also the object store's pack deltas. */
export { createGitDelta } from "./binary-delta.ts";
export { applyGitDelta } from "./binary-patch.ts";
export { createFilePatch, createPatch } from "./create-file-patch.ts";
export { formatPatch } from "./format-patch.ts";
export { cleanDiffTimestamps, parsePatch } from "./parse-patch.ts";
export { patchStats } from "./patch-stats.ts";
export { reverseFilePatch, reversePatches, reversePatchText } from "./reverse-file-patch.ts";
export type {
  ApplyConflict,
  ApplyOptions,
  BinaryHunk,
  CheckResult,
  CreateFilePatchOptions,
  FilePatch,
  Hunk,
  PatchFormat,
} from "./types.ts";
