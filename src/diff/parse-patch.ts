import { isUtf8 } from "node:buffer";
import { ErrorCode, TimewarpError } from "../core/index.ts";
import { decodeBase85Lines } from "./base85.ts";
import { inflateBinaryHunk } from "./binary-patch.ts";
import { unquotePath } from "./c-quote.ts";
import type { BinaryHunk, FilePatch, Hunk } from "./types.ts";

const ISO_TS = String.raw`\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?: ?(?:Z|[+-]\d{2}:?\d{2}))?`;
const CTIME_TS = String.raw`(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [ \d]\d \d{2}:\d{2}:\d{2}(?: \d{4})?(?: [+-]\d{4})?`;
const TIMESTAMP = new RegExp(String.raw`(?:\t.*|[\t ]+(?:${ISO_TS}|${CTIME_TS})[\t ]*)$`);
const TIMESTAMP_ONLY = new RegExp(String.raw`^(?:${ISO_TS}|${CTIME_TS})[\t ]*$`);
const HUNK_HEADER = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@(?: (.*))?$/;
const MAX_LINE_NO = 2 ** 31;

/**
 * Remove timestamps after the names in `---`/`+++` lines (after a tab, or after spaces when
 * they look like a date), leaving hunk bodies alone.
 */
export function cleanDiffTimestamps(text: string): string {
  const lines = text.split("\n");
  for (let i = 0; i + 1 < lines.length; i++) {
    const a = lines[i] ?? "";
    const b = lines[i + 1] ?? "";
    if (a.startsWith("--- ") && b.startsWith("+++ ")) {
      lines[i] = stripTimestamp(a);
      lines[i + 1] = stripTimestamp(b);
      i++;
    }
  }
  return lines.join("\n");
}

function stripTimestamp(line: string): string {
  const tab = line.indexOf("\t");
  if (
    tab !== -1 &&
    (TIMESTAMP_ONLY.test(line.slice(tab + 1)) || line.slice(tab + 1).trim() === "")
  ) {
    return line.slice(0, tab);
  }
  return line.replace(TIMESTAMP, (m) => (m.startsWith("\t") ? m : ""));
}

function parseError(lineNo: number, what: string, line?: string): TimewarpError {
  const shown =
    line === undefined
      ? ""
      : `: ${JSON.stringify(line.length > 80 ? `${line.slice(0, 80)}…` : line)}`;
  return new TimewarpError(ErrorCode.DIFF_PARSE_ERROR, `line ${lineNo}: ${what}${shown}`, {
    data: { line: lineNo },
  });
}

function bytesToPath(bytes: Buffer): string {
  return bytes.toString("utf8");
}

/** Strip the first component (`a/`, `b/`, …) as `git apply -p1` does. */
function stripPrefix(bytes: Buffer): Buffer {
  const i = bytes.indexOf(0x2f);
  return i === -1 ? bytes : bytes.subarray(i + 1);
}

interface Cursor {
  lines: string[];
  /** Byte-string view (latin1: one char per byte) of a line, for names. */
  raw: (i: number) => string;
  i: number;
}

/** A name in a `---`/`+++`/`rename from` line: quoted, or up to a tab, minus a timestamp. */
function parseName(raw: string, lineNo: number): Buffer {
  if (raw.startsWith('"')) return unquotePath(raw, 0, lineNo).bytes;
  const tab = raw.indexOf("\t");
  const name = tab === -1 ? raw.replace(TIMESTAMP, "") : raw.slice(0, tab);
  return Buffer.from(name, "latin1");
}

/** Both names of `diff --git A B`; null when unquoted names with spaces cannot be told apart. */
function parseGitNames(rest: string, lineNo: number): [Buffer, Buffer] | null {
  if (rest.startsWith('"')) {
    const first = unquotePath(rest, 0, lineNo);
    if (rest[first.end] !== " ") throw parseError(lineNo, "expected a space after the first name");
    const second = rest.slice(first.end + 1);
    const b = second.startsWith('"')
      ? unquotePath(second, 0, lineNo).bytes
      : Buffer.from(second, "latin1");
    return [first.bytes, b];
  }
  // An unquoted first name never holds '"' (git quotes such names), so the second name opens at
  // the first ' "', not the last: a quoted name may itself end in a space ("b/x ").
  if (rest.endsWith('"')) {
    for (let q = rest.indexOf(' "'); q !== -1; q = rest.indexOf(' "', q + 1)) {
      let second: { bytes: Buffer; end: number } | undefined;
      try {
        second = unquotePath(rest, q + 1, lineNo);
      } catch {
        continue;
      }
      if (second.end === rest.length)
        return [Buffer.from(rest.slice(0, q), "latin1"), second.bytes];
    }
  }
  // Unquoted names may hold spaces: git's rule is that both sides name the same file.
  for (let sp = rest.indexOf(" "); sp !== -1; sp = rest.indexOf(" ", sp + 1)) {
    const a = rest.slice(0, sp);
    const b = rest.slice(sp + 1);
    const ai = a.indexOf("/");
    const bi = b.indexOf("/");
    if (ai !== -1 && bi !== -1 && a.slice(ai + 1) === b.slice(bi + 1) && ai + 1 < a.length) {
      return [Buffer.from(a, "latin1"), Buffer.from(b, "latin1")];
    }
  }
  return null;
}

function parseHunk(cur: Cursor): Hunk {
  const lineNo = cur.i + 1;
  const header = cur.lines[cur.i] ?? "";
  const m = HUNK_HEADER.exec(header);
  if (m === null) throw parseError(lineNo, "malformed hunk header", header);
  const nums = [m[1], m[2] ?? "1", m[3], m[4] ?? "1"].map((s) => Number(s));
  if (nums.some((n) => !Number.isSafeInteger(n) || n >= MAX_LINE_NO)) {
    throw parseError(lineNo, "hunk header numbers out of range", header);
  }
  const [oldStart = 0, oldLines = 0, newStart = 0, newLines = 0] = nums;
  const hunk: Hunk = {
    oldStart,
    oldLines,
    newStart,
    newLines,
    header,
    section: m[5] ?? "",
    lines: [],
  };
  let remOld = oldLines;
  let remNew = newLines;
  let markOld = false;
  let markNew = false;
  cur.i++;
  const takeMarker = (): void => {
    const prev = hunk.lines[hunk.lines.length - 1];
    const c = prev?.[0];
    if (prev === undefined || (c !== "+" && markOld) || (c !== "-" && markNew)) {
      throw parseError(cur.i + 1, "misplaced '\\ No newline at end of file'", cur.lines[cur.i]);
    }
    if (c !== "+") markOld = true;
    if (c !== "-") markNew = true;
    cur.i++;
  };
  while (remOld > 0 || remNew > 0) {
    if (cur.i >= cur.lines.length) {
      throw parseError(
        cur.i,
        `hunk "${header}" ends early: expected ${remOld} more old and ${remNew} more new lines`,
      );
    }
    const line = cur.lines[cur.i] ?? "";
    const c = line.length === 0 ? " " : line[0];
    if (c === "\\") {
      takeMarker();
      continue;
    }
    if (c !== " " && c !== "-" && c !== "+") {
      throw parseError(
        cur.i + 1,
        `unexpected line in hunk "${header}" (expected ' ', '-', '+' or '\\')`,
        line,
      );
    }
    // A marker applies to the last line of its side; a later line on that side contradicts it.
    if ((markOld && c !== "+") || (markNew && c !== "-")) {
      throw parseError(
        cur.i + 1,
        "line after '\\ No newline at end of file' on the same side",
        line,
      );
    }
    if (c !== "+") remOld--;
    if (c !== "-") remNew--;
    if (remOld < 0 || remNew < 0) {
      throw parseError(cur.i + 1, `hunk "${header}" has more lines than its header says`, line);
    }
    hunk.lines.push(line.length === 0 ? " " : line);
    cur.i++;
  }
  if (cur.i < cur.lines.length && (cur.lines[cur.i] ?? "").startsWith("\\")) takeMarker();
  if (markOld) hunk.noNewlineOld = true;
  if (markNew) hunk.noNewlineNew = true;
  return hunk;
}

function parseBinaryHunk(cur: Cursor): BinaryHunk | null {
  const line = cur.lines[cur.i] ?? "";
  const m = /^(literal|delta) (\d+)$/.exec(line);
  if (m === null) return null;
  const lineNo = cur.i + 1;
  const kind = m[1] === "literal" ? "literal" : "delta";
  const size = Number(m[2]);
  if (!Number.isSafeInteger(size) || size > 2 ** 30)
    throw parseError(lineNo, "binary size out of range", line);
  cur.i++;
  const from = cur.i;
  while (cur.i < cur.lines.length && (cur.lines[cur.i] ?? "") !== "") cur.i++;
  const bytes = decodeBase85Lines(cur.lines, { from, to: cur.i, lineNo: from + 1 });
  if (cur.i < cur.lines.length) cur.i++; // the blank line that ends the block
  return inflateBinaryHunk(bytes, { kind, size, lineNo });
}

interface Names {
  old: Buffer | null;
  new: Buffer | null;
}

function parseFile(cur: Cursor, isGit: boolean): Omit<FilePatch, "text" | "encoding"> {
  const startLine = cur.i + 1;
  const headerLines: string[] = [];
  const p: Omit<FilePatch, "text" | "encoding"> = {
    oldPath: null,
    newPath: null,
    oldPathBytes: null,
    newPathBytes: null,
    hunks: [],
    isGit,
    headerLines,
  };
  let gitNames: [Buffer, Buffer] | null = null;
  let fileNames: Names | null = null;
  let moveNames: Names | null = null;
  let created = false;
  let deleted = false;
  if (isGit) {
    headerLines.push(cur.lines[cur.i] ?? "");
    gitNames = parseGitNames(cur.raw(cur.i).slice("diff --git ".length), cur.i + 1);
    cur.i++;
  }
  for (; cur.i < cur.lines.length; ) {
    const line = cur.lines[cur.i] ?? "";
    const lineNo = cur.i + 1;
    const raw = (prefix: string) => cur.raw(cur.i).slice(prefix.length);
    if (line.startsWith("--- ")) {
      const next = cur.lines[cur.i + 1];
      if (next === undefined || !next.startsWith("+++ "))
        throw parseError(lineNo + 1, "expected '+++ ' after '---'", next);
      const o = raw("--- ");
      cur.i++;
      const n = raw("+++ ");
      fileNames = {
        old:
          o === "/dev/null" || /^\/dev\/null(\t|$)/.test(o)
            ? null
            : stripPrefix(parseName(o, lineNo)),
        new:
          n === "/dev/null" || /^\/dev\/null(\t|$)/.test(n)
            ? null
            : stripPrefix(parseName(n, lineNo + 1)),
      };
      headerLines.push(line, cur.lines[cur.i] ?? "");
      cur.i++;
      break;
    }
    if (!isGit) break;
    if (line.startsWith("diff --git ") || line.startsWith("@@ ")) break;
    if (line === "GIT binary patch") {
      headerLines.push(line);
      cur.i++;
      const forward = parseBinaryHunk(cur);
      if (forward === null)
        throw parseError(cur.i + 1, "expected 'literal N' or 'delta N'", cur.lines[cur.i]);
      const reverse = parseBinaryHunk(cur);
      p.isBinary = true;
      p.binary = reverse === null ? { forward } : { forward, reverse };
      break;
    }
    if (line.startsWith("Binary files ") && line.endsWith(" differ")) {
      headerLines.push(line);
      p.isBinary = true;
      cur.i++;
      break;
    }
    const modeM = /^(old|new|deleted file|new file) mode ([0-7]{6})$/.exec(line);
    const moveM = /^(rename|copy) (from|to|old|new) (.+)$/.exec(line);
    const simM = /^(similarity|dissimilarity) index (\d{1,3})%$/.exec(line);
    const indexM = /^index ([0-9a-f]{4,64})\.\.([0-9a-f]{4,64})(?: ([0-7]{6}))?$/.exec(line);
    if (modeM) {
      const m = modeM;
      if (m[1] === "old" || m[1] === "deleted file") p.oldMode = m[2];
      else p.newMode = m[2];
      if (m[1] === "deleted file") deleted = true;
      if (m[1] === "new file") created = true;
    } else if (moveM) {
      const m = moveM;
      const verb = m[1] ?? "";
      const side = m[2] ?? "";
      const name = parseName(raw(`${verb} ${side} `), lineNo);
      moveNames ??= { old: null, new: null };
      if (side === "from" || side === "old") moveNames.old = name;
      else moveNames.new = name;
      if (verb === "rename") p.isRename = true;
      else p.isCopy = true;
    } else if (simM) {
      const m = simM;
      const v = Number(m[2]);
      p.similarity = m[1] === "similarity" ? v : 100 - v;
    } else if (indexM) {
      const m = indexM;
      p.oldOid = m[1];
      p.newOid = m[2];
      if (m[3] !== undefined) {
        p.oldMode ??= m[3];
        p.newMode ??= m[3];
      }
    } else {
      break; // not a header line: this file's diff ends here
    }
    headerLines.push(line);
    cur.i++;
  }
  while (cur.i < cur.lines.length && (cur.lines[cur.i] ?? "").startsWith("@@ ")) {
    if (fileNames === null)
      throw parseError(cur.i + 1, "hunk without '---'/'+++' lines", cur.lines[cur.i]);
    p.hunks.push(parseHunk(cur));
  }
  if (fileNames !== null && fileNames.old === null) created = true;
  if (fileNames !== null && fileNames.new === null) deleted = true;
  if (created && deleted) throw parseError(startLine, "a file diff cannot both create and delete");
  let oldB: Buffer | null =
    moveNames?.old ?? fileNames?.old ?? (gitNames ? stripPrefix(gitNames[0]) : null);
  let newB: Buffer | null =
    moveNames?.new ?? fileNames?.new ?? (gitNames ? stripPrefix(gitNames[1]) : null);
  if (moveNames !== null && (moveNames.old === null || moveNames.new === null)) {
    throw parseError(startLine, "rename/copy needs both 'from' and 'to'");
  }
  if (created) oldB = null;
  if (deleted) newB = null;
  if (created) newB ??= fileNames?.new ?? (gitNames ? stripPrefix(gitNames[1]) : null);
  if (deleted) oldB ??= fileNames?.old ?? (gitNames ? stripPrefix(gitNames[0]) : null);
  if (oldB === null && newB === null) {
    throw parseError(
      startLine,
      "cannot tell the file names from the 'diff --git' line",
      headerLines[0],
    );
  }
  if (!created && !deleted && (oldB === null || newB === null)) {
    throw parseError(
      startLine,
      "cannot tell the file names from the 'diff --git' line",
      headerLines[0],
    );
  }
  p.oldPathBytes = oldB;
  p.newPathBytes = newB;
  p.oldPath = oldB === null ? null : bytesToPath(oldB);
  p.newPath = newB === null ? null : bytesToPath(newB);
  if (created) delete p.oldMode;
  if (deleted) delete p.newMode;
  const last = p.hunks[p.hunks.length - 1];
  if (last?.noNewlineOld) p.noNewlineOld = true;
  if (last?.noNewlineNew) p.noNewlineNew = true;
  for (let k = 0; k + 1 < p.hunks.length; k++) {
    const h = p.hunks[k];
    if (h?.noNewlineOld || h?.noNewlineNew) {
      throw parseError(
        startLine,
        `'\\ No newline at end of file' in hunk ${k + 1}, which is not the last`,
      );
    }
  }
  return p;
}

/**
 * Parse a (multi-file) diff: git's extended format or plain unified. Text before, between and
 * after file diffs (commit messages, signatures) is skipped. Throws DIFF_PARSE_ERROR naming the
 * line. Bytes that are not UTF-8 are read as latin1 so they survive (see `FilePatch.encoding`).
 */
export function parsePatch(input: string | Uint8Array): FilePatch[] {
  let text: string;
  let encoding: "utf8" | "latin1" = "utf8";
  if (typeof input === "string") text = input;
  else {
    const buf = Buffer.from(input.buffer, input.byteOffset, input.byteLength);
    encoding = isUtf8(buf) ? "utf8" : "latin1";
    text = buf.toString(encoding);
  }
  const lines: string[] = [];
  const starts: number[] = [];
  for (let p = 0; p < text.length; ) {
    const nl = text.indexOf("\n", p);
    const end = nl === -1 ? text.length : nl;
    starts.push(p);
    lines.push(text.slice(p, end));
    p = nl === -1 ? text.length : nl + 1;
  }
  starts.push(text.length);
  const asciiOnly = encoding === "latin1" || !/[\u0080-\uffff]/.test(text);
  const cur: Cursor = {
    lines,
    i: 0,
    raw: (i) => {
      const l = lines[i] ?? "";
      return asciiOnly ? l : Buffer.from(l, "utf8").toString("latin1");
    },
  };
  const patches: FilePatch[] = [];
  while (cur.i < lines.length) {
    const line = lines[cur.i] ?? "";
    const start = cur.i;
    let isGit: boolean;
    if (line.startsWith("diff --git ")) isGit = true;
    else if (
      line.startsWith("--- ") &&
      (lines[cur.i + 1] ?? "").startsWith("+++ ") &&
      (lines[cur.i + 2] ?? "").startsWith("@@ ")
    )
      isGit = false;
    else {
      cur.i++;
      continue;
    }
    const p = parseFile(cur, isGit);
    if (cur.i === start) cur.i++; // never loop in place
    patches.push({
      ...p,
      text: text.slice(starts[start] ?? 0, starts[cur.i] ?? text.length),
      encoding,
    });
  }
  return patches;
}
