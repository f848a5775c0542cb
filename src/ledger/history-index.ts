import {
  closeSync,
  fstatSync,
  fsyncSync,
  ftruncateSync,
  openSync,
  readSync,
  statSync,
  writeSync,
} from "node:fs";
import { errnoCode, fromSystemError, writeFileAtomic } from "../core/index.ts";

/**
 * The history index: `history/index.tsv`, append-only, one line per operation:
 *
 *     <id> TAB <timestamp ms> TAB <tool> TAB <linesChanged> TAB <path> [TAB <path>]… LF
 *
 * It holds exactly what the history filters need (time, tool, files), so a page never opens
 * more record files than it returns. Appending one line is O(1) whatever the history's length
 * (a JSON document would be rewritten whole on every edit), a torn last line (kill -9 mid-append)
 * is skipped by readers and fenced off by the next writer, and lines are small enough that
 * 100k of them parse in tens of milliseconds. Paths escape `\`, TAB, CR and LF.
 */
export interface IndexEntry {
  id: string;
  ts: number;
  tool: string;
  linesChanged: number;
  files: string[];
}

/** The parsed index, column by column, in append order (oldest first). */
export interface IndexData {
  ids: string[];
  ts: number[];
  tools: string[];
  linesChanged: number[];
  /** The paths field of each line as written (TAB-separated, escaped); see `filesAt`. */
  filesRaw: string[];
  /** id → position, built on first use (a history page by time/tool never needs it). */
  byId: Map<string, number> | undefined;
}

export function emptyIndex(): IndexData {
  return { ids: [], ts: [], tools: [], linesChanged: [], filesRaw: [], byId: undefined };
}

/** The position of operation `id` in the index (its first line), if listed. */
export function positionOf(index: IndexData, id: string): number | undefined {
  if (index.byId === undefined) {
    const map = new Map<string, number>();
    for (let i = 0; i < index.ids.length; i++) {
      const key = index.ids[i] ?? "";
      if (!map.has(key)) map.set(key, i);
    }
    index.byId = map;
  }
  return index.byId.get(id);
}

/** The paths of the operation at position `i`. */
export function filesAt(index: IndexData, i: number): string[] {
  return splitFiles(index.filesRaw[i] ?? "");
}

/** Split a raw paths field. */
export function splitFiles(raw: string): string[] {
  if (raw === "") return [];
  return raw.includes("\t") || raw.includes("\\") ? raw.split("\t").map(unescapeField) : [raw];
}

export function indexEntryAt(index: IndexData, i: number): IndexEntry {
  return {
    id: index.ids[i] ?? "",
    ts: index.ts[i] ?? 0,
    tool: index.tools[i] ?? "",
    linesChanged: index.linesChanged[i] ?? 0,
    files: filesAt(index, i),
  };
}

const escapeField = (s: string) =>
  /[\\\t\r\n]/.test(s)
    ? s.replace(/[\\\t\r\n]/g, (c) =>
        c === "\\" ? "\\\\" : c === "\t" ? "\\t" : c === "\r" ? "\\r" : "\\n",
      )
    : s;

const unescapeField = (s: string) =>
  s.includes("\\")
    ? s.replace(/\\(.)/g, (_m, c: string) =>
        c === "t" ? "\t" : c === "r" ? "\r" : c === "n" ? "\n" : c,
      )
    : s;

/** One index line, LF-terminated. */
export function formatIndexLine(entry: IndexEntry): string {
  return `${[entry.id, String(entry.ts), escapeField(entry.tool), String(entry.linesChanged), ...entry.files.map(escapeField)].join("\t")}\n`;
}

/**
 * Parse complete lines of `text` into `into`; returns how many characters were consumed (up to
 * and including the last LF). Malformed lines (a torn write fenced off by a later append) are
 * skipped. Fields are cut with indexOf, not split, and paths stay one raw slice per line until
 * asked for: 100k lines parse in tens of milliseconds.
 */
export function parseIndexText(text: string, into: IndexData): number {
  // Tools are few: compare in place against the ones seen instead of slicing every line's.
  const known: string[] = [...new Set(into.tools)];
  let pos = 0;
  for (;;) {
    const end = text.indexOf("\n", pos);
    if (end < 0) break;
    const start = pos;
    pos = end + 1;
    const t1 = start + 10;
    if (t1 >= end || text.charCodeAt(t1) !== 9 || !isIdAt(text, start)) continue;
    const ts = digitsAt(text, t1 + 1);
    const t2 = ts.next;
    if (ts.value < 0 || text.charCodeAt(t2) !== 9) continue;
    const t3 = text.indexOf("\t", t2 + 1);
    if (t3 < 0 || t3 > end) continue;
    let tool: string | undefined;
    for (const k of known) {
      if (k.length === t3 - t2 - 1 && text.startsWith(k, t2 + 1)) {
        tool = k;
        break;
      }
    }
    if (tool === undefined) {
      tool = unescapeField(text.slice(t2 + 1, t3));
      if (!known.includes(tool)) known.push(tool);
    }
    const lines = digitsAt(text, t3 + 1);
    const t4 = lines.next;
    if (lines.value < 0 || (t4 !== end && text.charCodeAt(t4) !== 9)) continue;
    const id = text.slice(start, t1);
    if (into.byId !== undefined && !into.byId.has(id)) into.byId.set(id, into.ids.length);
    into.ids.push(id);
    into.ts.push(ts.value);
    into.tools.push(tool);
    into.linesChanged.push(lines.value);
    into.filesRaw.push(t4 < end ? text.slice(t4 + 1, end) : "");
  }
  return pos;
}

/** True if the 10 characters at `at` form an operation id ([0-9a-z]). */
function isIdAt(text: string, at: number): boolean {
  for (let k = at; k < at + 10; k++) {
    const c = text.charCodeAt(k);
    if (!((c >= 48 && c <= 57) || (c >= 97 && c <= 122))) return false;
  }
  return true;
}

/** The decimal number at `at` (value -1 if there is no digit) and the position after it. */
function digitsAt(text: string, at: number): { value: number; next: number } {
  let value = 0;
  let k = at;
  for (let c = text.charCodeAt(k); c >= 48 && c <= 57; c = text.charCodeAt(++k))
    value = value * 10 + (c - 48);
  return { value: k === at ? -1 : value, next: k };
}

interface CacheEntry {
  ino: number;
  dev: number;
  /** Bytes of the file already parsed (always at a line boundary). */
  parsed: number;
  data: IndexData;
}

const cache = new Map<string, CacheEntry>();

/**
 * Load the index, reusing what this process parsed before: an unchanged file costs one stat,
 * a grown one only the parse of its new lines (the MCP server is long-lived). A file replaced
 * by retention (new inode) or shrunk is parsed again from the start.
 */
export function loadIndex(indexPath: string): IndexData {
  let st: { ino: number; dev: number; size: number };
  try {
    st = statSync(indexPath);
  } catch (error) {
    if (errnoCode(error) === "ENOENT") {
      cache.delete(indexPath);
      return emptyIndex();
    }
    throw fromSystemError(error, `reading ${indexPath}`);
  }
  let entry = cache.get(indexPath);
  if (!entry || entry.ino !== st.ino || entry.dev !== st.dev || st.size < entry.parsed) {
    entry = { ino: st.ino, dev: st.dev, parsed: 0, data: emptyIndex() };
    cache.set(indexPath, entry);
  }
  if (st.size > entry.parsed) {
    const bytes = readRange(indexPath, entry.parsed, st.size);
    // Decode only complete lines, so a torn multi-byte character never shifts the offset.
    const lastLf = bytes.lastIndexOf(0x0a);
    if (lastLf >= 0) {
      parseIndexText(bytes.toString("utf8", 0, lastLf + 1), entry.data);
      entry.parsed += lastLf + 1;
    }
  }
  return entry.data;
}

function readRange(path: string, start: number, end: number): Buffer {
  const fd = openSync(path, "r");
  try {
    const buf = Buffer.allocUnsafe(end - start);
    let off = 0;
    while (off < buf.length) {
      const n = readSync(fd, buf, off, buf.length - off, start + off);
      if (n === 0) break;
      off += n;
    }
    return buf.subarray(0, off);
  } catch (error) {
    throw fromSystemError(error, `reading ${path}`);
  } finally {
    closeSync(fd);
  }
}

/**
 * Append entries in one write (callers hold the ledger lock). If the file does not end in LF (a
 * writer was killed mid-line), the torn fragment is cut off first: readers never parse past the
 * last LF, so it was never visible, and it must not become a valid-looking line.
 */
export function appendIndexEntries(indexPath: string, entries: IndexEntry[]): void {
  let fd: number | undefined;
  try {
    fd = openSync(indexPath, "a+", 0o644);
    const size = fstatSync(fd).size;
    if (size > 0) {
      const last = Buffer.alloc(1);
      readSync(fd, last, 0, 1, size - 1);
      if (last[0] !== 0x0a) ftruncateSync(fd, lastLineEnd(fd, size));
    }
    writeSync(fd, entries.map(formatIndexLine).join(""));
    fsyncSync(fd);
  } catch (error) {
    throw fromSystemError(error, `appending to ${indexPath}`);
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** The size of the file up to and including its last LF (0 if none), read backwards in chunks. */
function lastLineEnd(fd: number, size: number): number {
  const chunk = Buffer.alloc(65536);
  let end = size;
  while (end > 0) {
    const start = Math.max(0, end - chunk.length);
    const n = readSync(fd, chunk, 0, end - start, start);
    const at = chunk.subarray(0, n).lastIndexOf(0x0a);
    if (at >= 0) return start + at + 1;
    end = start;
  }
  return 0;
}

/** Replace the whole index atomically (retention, repair). */
export function writeIndex(indexPath: string, entries: IndexEntry[]): void {
  writeFileAtomic(indexPath, entries.map(formatIndexLine).join(""));
  cache.delete(indexPath);
}
