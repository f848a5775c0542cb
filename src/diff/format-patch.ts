import { quotePath } from "./c-quote.ts";
import { formatHunkBody, NO_NEWLINE_MARKER, pathBytesOf } from "./format-git-patch.ts";
import type { FilePatch, Hunk, PatchFormat } from "./types.ts";

function name(prefix: string, bytes: Uint8Array | null): string {
  return bytes === null ? "/dev/null" : quotePath(Buffer.concat([Buffer.from(prefix), bytes]));
}

/**
 * One file as a plain unified diff (`---`/`+++` and hunks). A binary change becomes git's
 * "Binary files … differ" line; a change of mode or name alone has no unified form and is omitted.
 */
export function formatUnifiedFilePatch(p: FilePatch): string {
  const a = name("a/", pathBytesOf(p, "old"));
  const b = name("b/", pathBytesOf(p, "new"));
  if (p.isBinary || p.binary !== undefined) return `Binary files ${a} and ${b} differ\n`;
  if (p.hunks.length === 0) return "";
  let out = `--- ${a}\n+++ ${b}\n`;
  for (const h of p.hunks) out += `${h.header}\n${formatHunkBody(h)}`;
  return out;
}

function contextRange(start: number, count: number): string {
  if (count === 0) return `${start}`;
  return count === 1 ? `${start}` : `${start},${start + count - 1}`;
}

function formatContextHunk(h: Hunk): string {
  const oldOut: string[] = [];
  const newOut: string[] = [];
  let oldChanged = false;
  let newChanged = false;
  let i = 0;
  while (i < h.lines.length) {
    const line = h.lines[i] ?? "";
    if (line[0] === " ") {
      oldOut.push(` ${line}`);
      newOut.push(` ${line}`);
      i++;
      continue;
    }
    let j = i;
    while (j < h.lines.length && h.lines[j]?.[0] !== " ") j++;
    const run = h.lines.slice(i, j);
    const both = run.some((l) => l[0] === "-") && run.some((l) => l[0] === "+");
    for (const l of run) {
      if (l[0] === "-") {
        oldOut.push(`${both ? "!" : "-"} ${l.slice(1)}`);
        oldChanged = true;
      } else {
        newOut.push(`${both ? "!" : "+"} ${l.slice(1)}`);
        newChanged = true;
      }
    }
    i = j;
  }
  if (h.noNewlineOld && oldOut.length > 0) oldOut.push(NO_NEWLINE_MARKER);
  if (h.noNewlineNew && newOut.length > 0) newOut.push(NO_NEWLINE_MARKER);
  let out = `***************\n*** ${contextRange(h.oldStart, h.oldLines)} ****\n`;
  if (oldChanged) out += `${oldOut.join("\n")}\n`;
  out += `--- ${contextRange(h.newStart, h.newLines)} ----\n`;
  if (newChanged) out += `${newOut.join("\n")}\n`;
  return out;
}

function formatContextFilePatch(p: FilePatch): string {
  const a = name("a/", pathBytesOf(p, "old"));
  const b = name("b/", pathBytesOf(p, "new"));
  if (p.isBinary || p.binary !== undefined) return `Binary files ${a} and ${b} differ\n`;
  if (p.hunks.length === 0) return "";
  return `*** ${a}\n--- ${b}\n${p.hunks.map(formatContextHunk).join("")}`;
}

/**
 * Render file diffs as "git" (the original record text, byte-exact), "unified" (plain `---`/`+++`
 * and hunks) or "context" (`***`/`---` with `!`, `+`, `-` marks).
 */
export function formatPatch(patches: readonly FilePatch[], format: PatchFormat): string {
  if (format === "git") return patches.map((p) => p.text).join("");
  const one = format === "unified" ? formatUnifiedFilePatch : formatContextFilePatch;
  return patches.map(one).join("");
}
