import { ErrorCode, TimewarpError } from "../core/index.ts";
import { formatFilePatchGit, formatHunkHeader, pathBytesOf } from "./format-git-patch.ts";
import { formatUnifiedFilePatch } from "./format-patch.ts";
import { parsePatch } from "./parse-patch.ts";
import type { FilePatch, Hunk } from "./types.ts";

function reverseHunk(h: Hunk): Hunk {
  const lines: string[] = [];
  let removed: string[] = [];
  let added: string[] = [];
  const flush = () => {
    lines.push(...removed, ...added);
    removed = [];
    added = [];
  };
  for (const line of h.lines) {
    const c = line[0];
    if (c === "+") removed.push(`-${line.slice(1)}`);
    else if (c === "-") added.push(`+${line.slice(1)}`);
    else {
      flush();
      lines.push(line);
    }
  }
  flush();
  const r: Hunk = {
    oldStart: h.newStart,
    oldLines: h.newLines,
    newStart: h.oldStart,
    newLines: h.oldLines,
    header: "",
    section: h.section,
    lines,
  };
  r.header = formatHunkHeader(r, h.section);
  if (h.noNewlineNew) r.noNewlineOld = true;
  if (h.noNewlineOld) r.noNewlineNew = true;
  return r;
}

/**
 * The diff that undoes `patch`: sides, modes, blob ids and hunks swapped; a create becomes a
 * delete; a binary patch swaps its forward and reverse blocks; a copy becomes a rename that
 * folds the copy back (`revertsCopy`). The record text is written afresh in the same style.
 * Throws DIFF_NOT_REVERSIBLE for a binary diff without its reverse half.
 */
export function reverseFilePatch(patch: FilePatch): FilePatch {
  if (patch.isBinary && (patch.binary === undefined || patch.binary.reverse === undefined)) {
    throw new TimewarpError(
      ErrorCode.DIFF_NOT_REVERSIBLE,
      `binary diff for ${patch.newPath ?? patch.oldPath ?? "?"} has no reverse data (need git diff --binary)`,
      { data: { path: patch.newPath ?? patch.oldPath } },
    );
  }
  const r: FilePatch = {
    oldPath: patch.newPath,
    newPath: patch.oldPath,
    oldPathBytes: pathBytesOf(patch, "new"),
    newPathBytes: pathBytesOf(patch, "old"),
    hunks: patch.hunks.map(reverseHunk),
    isGit: patch.isGit !== false,
    headerLines: [],
    text: "",
    encoding: patch.encoding ?? "utf8",
  };
  if (patch.newMode !== undefined) r.oldMode = patch.newMode;
  if (patch.oldMode !== undefined) r.newMode = patch.oldMode;
  if (patch.newOid !== undefined) r.oldOid = patch.newOid;
  if (patch.oldOid !== undefined) r.newOid = patch.oldOid;
  if (patch.isCopy) {
    r.isRename = true;
    r.revertsCopy = true;
  } else if (patch.revertsCopy) r.isCopy = true;
  else if (patch.isRename) r.isRename = true;
  if (patch.similarity !== undefined) r.similarity = patch.similarity;
  if (patch.isBinary) r.isBinary = true;
  if (patch.binary?.reverse !== undefined) {
    r.binary = { forward: patch.binary.reverse, reverse: patch.binary.forward };
  }
  if (patch.noNewlineNew) r.noNewlineOld = true;
  if (patch.noNewlineOld) r.noNewlineNew = true;
  r.text = patch.isGit !== false ? formatFilePatchGit(r) : formatUnifiedFilePatch(r);
  const firstHunk = r.text.indexOf("\n@@ ");
  const head = r.text.slice(0, firstHunk === -1 ? r.text.length : firstHunk + 1);
  const binaryAt = head.indexOf("GIT binary patch\n");
  r.headerLines = (binaryAt === -1 ? head : head.slice(0, binaryAt + 17))
    .split("\n")
    .filter((l) => l !== "");
  return r;
}

/**
 * Reverse a multi-file diff. Where a path was deleted and created again (a file that became a
 * symlink), the reverse deletes before it creates, as `git apply` needs.
 */
export function reversePatches(patches: readonly FilePatch[]): FilePatch[] {
  const out = patches.map(reverseFilePatch);
  for (let i = 0; i + 1 < out.length; i++) {
    const a = out[i] as FilePatch;
    const b = out[i + 1] as FilePatch;
    if (a.oldPath === null && b.newPath === null && a.newPath === b.oldPath) {
      out[i] = b;
      out[i + 1] = a;
      i++;
    }
  }
  return out;
}

/** Reverse a whole (multi-file) diff text; text outside file diffs is dropped. */
export function reversePatchText(text: string): string {
  return reversePatches(parsePatch(text))
    .map((p) => p.text)
    .join("");
}
