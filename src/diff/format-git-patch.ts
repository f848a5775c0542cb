import { formatBinaryHunk } from "./binary-patch.ts";
import { quotePath } from "./c-quote.ts";
import type { FilePatch, Hunk } from "./types.ts";

export const NO_NEWLINE_MARKER = "\\ No newline at end of file";
const ZERO_OID = "0000000000000000000000000000000000000000";

/** The fields a `diff --git` header is made of. */
export interface GitHeaderFields {
  oldPathBytes: Uint8Array | null;
  newPathBytes: Uint8Array | null;
  oldMode?: string | undefined;
  newMode?: string | undefined;
  oldOid?: string | undefined;
  newOid?: string | undefined;
  isRename?: boolean | undefined;
  isCopy?: boolean | undefined;
  similarity?: number | undefined;
}

/** A side's name as bytes: the exact bytes when known, else the UTF-8 of the string. */
export function pathBytesOf(p: FilePatch, side: "old" | "new"): Uint8Array | null {
  const bytes = side === "old" ? p.oldPathBytes : p.newPathBytes;
  if (bytes !== undefined) return bytes;
  const path = side === "old" ? p.oldPath : p.newPath;
  return path === null ? null : Buffer.from(path, "utf8");
}

/** `a/` + name, C-quoted as a whole when git would quote it. */
function prefixed(prefix: string, bytes: Uint8Array): string {
  return quotePath(Buffer.concat([Buffer.from(prefix), bytes]));
}

/**
 * The header lines git writes, in git's order: `diff --git`, file/mode lines, similarity and
 * rename/copy lines, then `index`. `withFileLines` adds `---`/`+++` (text hunks follow).
 */
export function formatGitHeader(h: GitHeaderFields, withFileLines: boolean): string {
  const oldName = h.oldPathBytes ?? h.newPathBytes ?? new Uint8Array(0);
  const newName = h.newPathBytes ?? h.oldPathBytes ?? new Uint8Array(0);
  let out = `diff --git ${prefixed("a/", oldName)} ${prefixed("b/", newName)}\n`;
  if (h.oldPathBytes === null) out += `new file mode ${h.newMode ?? "100644"}\n`;
  else if (h.newPathBytes === null) out += `deleted file mode ${h.oldMode ?? "100644"}\n`;
  else if (h.oldMode !== undefined && h.newMode !== undefined && h.oldMode !== h.newMode) {
    out += `old mode ${h.oldMode}\nnew mode ${h.newMode}\n`;
  }
  if (h.isRename || h.isCopy) {
    const verb = h.isRename ? "rename" : "copy";
    if (h.similarity !== undefined) out += `similarity index ${h.similarity}%\n`;
    out += `${verb} from ${quotePath(oldName)}\n${verb} to ${quotePath(newName)}\n`;
  }
  if (h.oldOid !== undefined || h.newOid !== undefined) {
    const o = h.oldOid ?? ZERO_OID;
    const n = h.newOid ?? ZERO_OID;
    const sameMode =
      h.oldPathBytes !== null &&
      h.newPathBytes !== null &&
      h.oldMode !== undefined &&
      h.oldMode === h.newMode;
    if (o !== n) out += `index ${o}..${n}${sameMode ? ` ${h.oldMode}` : ""}\n`;
  }
  if (withFileLines)
    out += `${fileLine("---", "a/", h.oldPathBytes)}${fileLine("+++", "b/", h.newPathBytes)}`;
  return out;
}

function fileLine(mark: string, prefix: string, bytes: Uint8Array | null): string {
  if (bytes === null) return `${mark} /dev/null\n`;
  const name = prefixed(prefix, bytes);
  // git ends a name containing a space with a tab, so a reader can tell it from a timestamp.
  return `${mark} ${name}${!name.startsWith('"') && name.includes(" ") ? "\t" : ""}\n`;
}

/** `@@ -a,b +c,d @@` with git's conventions (",1" omitted; empty ranges name the line before). */
export function formatHunkHeader(
  h: Pick<Hunk, "oldStart" | "oldLines" | "newStart" | "newLines">,
  section = "",
): string {
  const range = (start: number, n: number) => (n === 1 ? `${start}` : `${start},${n}`);
  return `@@ -${range(h.oldStart, h.oldLines)} +${range(h.newStart, h.newLines)} @@${section ? ` ${section}` : ""}`;
}

/** A hunk's body with its `\ No newline at end of file` markers placed after the right lines. */
export function formatHunkBody(h: Hunk): string {
  let lastOld = -1;
  let lastNew = -1;
  if (h.noNewlineOld || h.noNewlineNew) {
    for (let i = 0; i < h.lines.length; i++) {
      const c = h.lines[i]?.[0];
      if (c !== "+") lastOld = i;
      if (c !== "-") lastNew = i;
    }
  }
  const parts: string[] = [];
  for (let i = 0; i < h.lines.length; i++) {
    parts.push(h.lines[i] ?? "");
    if ((h.noNewlineOld && i === lastOld) || (h.noNewlineNew && i === lastNew))
      parts.push(NO_NEWLINE_MARKER);
  }
  return parts.length === 0 ? "" : `${parts.join("\n")}\n`;
}

/** Serialise a FilePatch in git's format (used for patches made in memory, e.g. a reverse). */
export function formatFilePatchGit(p: FilePatch): string {
  const binary = p.binary !== undefined || (p.isBinary === true && p.hunks.length === 0);
  const oldPathBytes = pathBytesOf(p, "old");
  const newPathBytes = pathBytesOf(p, "new");
  let out = formatGitHeader({ ...p, oldPathBytes, newPathBytes }, p.hunks.length > 0 && !binary);
  if (p.binary !== undefined) {
    out += `GIT binary patch\n${formatBinaryHunk(p.binary.forward)}`;
    if (p.binary.reverse !== undefined) out += formatBinaryHunk(p.binary.reverse);
  } else if (binary) {
    out += `Binary files ${oldPathBytes === null ? "/dev/null" : prefixed("a/", oldPathBytes)} and ${newPathBytes === null ? "/dev/null" : prefixed("b/", newPathBytes)} differ\n`;
  }
  for (const h of p.hunks) out += `${h.header}\n${formatHunkBody(h)}`;
  return out;
}
