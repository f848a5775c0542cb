import { ErrorCode, TimewarpError } from "../core/index.ts";

/** Lines of `text`, each with its own terminator (the last may have none). */
function splitKeepingEol(text: string): string[] {
  const out: string[] = [];
  let pos = 0;
  while (pos < text.length) {
    const nl = text.indexOf("\n", pos);
    if (nl < 0) {
      out.push(text.slice(pos));
      break;
    }
    out.push(text.slice(pos, nl + 1));
    pos = nl + 1;
  }
  return out;
}

/**
 * Replace lines `startLine..endLine` (1-based, inclusive) of `text` by `content` (pure).
 * `endLine = startLine - 1` inserts before `startLine`; `startLine = lines + 1` appends. The
 * replacement keeps the file's line ending: if `content` lacks a final newline and more lines
 * follow (or the replaced last line had one), the EOL of the replaced range is added.
 * Out-of-file ranges are RANGE_INVALID.
 */
export function applyRangedEditToText(options: {
  text: string;
  startLine: number;
  endLine: number;
  content: string;
  path: string;
}): string {
  const { text, startLine, endLine, content, path } = options;
  const lines = splitKeepingEol(text);
  const n = lines.length;
  if (
    !Number.isInteger(startLine) ||
    !Number.isInteger(endLine) ||
    startLine < 1 ||
    startLine > n + 1 ||
    endLine < startLine - 1 ||
    endLine > n
  ) {
    throw new TimewarpError(
      ErrorCode.RANGE_INVALID,
      `lines ${startLine}-${endLine} are outside ${path}: it has ${n} lines (use startLine 1..${n + 1}, endLine startLine-1..${n})`,
      { data: { path, startLine, endLine, lines: n } },
    );
  }
  const before = lines.slice(0, startLine - 1);
  const replaced = lines.slice(startLine - 1, endLine);
  const after = lines.slice(endLine);
  const sample = replaced[replaced.length - 1] ?? before[before.length - 1] ?? lines[0] ?? "\n";
  const eol = sample.endsWith("\r\n") ? "\r\n" : "\n";
  let body = content;
  const lastReplacedHadEol =
    replaced.length === 0 || (replaced[replaced.length - 1] ?? "").endsWith("\n");
  if (body.length > 0 && !body.endsWith("\n") && (after.length > 0 || lastReplacedHadEol))
    body += eol;
  // Appending after a last line that had no newline: give that line one first.
  const prev = before[before.length - 1];
  if (
    body.length > 0 &&
    after.length === 0 &&
    replaced.length === 0 &&
    prev !== undefined &&
    !prev.endsWith("\n")
  ) {
    before[before.length - 1] = prev + eol;
  }
  return before.join("") + body + after.join("");
}
