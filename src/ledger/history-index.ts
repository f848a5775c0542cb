import {
  closeSync,
  fstatSync,
  fsyncSync,
  ftruncateSync,
  openSync,
  readFileSync,
  readSync,
  rmSync,
  statSync,
  writeSync,
} from "node:fs";
import { dirname, join } from "node:path";
import {
  appendEvent,
  errnoCode,
  fromSystemError,
  systemClock,
  writeFileAtomic,
} from "../core/index.ts";
import {
  decodeIndexCache,
  encodeIndexCache,
  fingerprintOf,
  probeRanges,
  readCacheKey,
} from "./index-cache.ts";
import { OPERATION_ID_LEN } from "./operation-id.ts";

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

/**
 * The parsed index, column by column, in append order (oldest first). Columns are typed arrays
 * (capacity >= count) with tools and paths fields interned in tables, so 100k operations are a
 * few megabytes and no object per line, and the on-disk cache maps onto them without a loop.
 * Read it through `idAt`, `toolAt`, `filesRawAt`, `filesAt` and `index.ts[i]`.
 */
export interface IndexData {
  count: number;
  ts: Float64Array;
  linesChanged: Float64Array;
  toolIds: Uint32Array;
  pathIds: Uint32Array;
  /** Operation ids, OPERATION_ID_LEN latin1 bytes each. */
  ids: Uint8Array;
  /** Distinct tools; `toolIds` point here. */
  tools: string[];
  /** Distinct paths fields as written (TAB-separated, escaped); `pathIds` point here. */
  paths: string[];
  /** Reverse maps of the tables, built when a line is parsed into a loaded table. */
  toolIndex: Map<string, number> | undefined;
  pathIndex: Map<string, number> | undefined;
  /** id → position, built on first use (a history page by time/tool never needs it). */
  byId: Map<string, number> | undefined;
}

export function emptyIndex(capacity = 64): IndexData {
  return {
    count: 0,
    ts: new Float64Array(capacity),
    linesChanged: new Float64Array(capacity),
    toolIds: new Uint32Array(capacity),
    pathIds: new Uint32Array(capacity),
    ids: new Uint8Array(capacity * OPERATION_ID_LEN),
    tools: [],
    paths: [],
    toolIndex: new Map(),
    pathIndex: new Map(),
    byId: undefined,
  };
}

/** The id of the operation at position `i`. */
export function idAt(index: IndexData, i: number): string {
  return Buffer.from(
    index.ids.buffer,
    index.ids.byteOffset + i * OPERATION_ID_LEN,
    OPERATION_ID_LEN,
  ).toString("latin1");
}

/** The tool of the operation at position `i`. */
export function toolAt(index: IndexData, i: number): string {
  return index.tools[index.toolIds[i] ?? 0] ?? "";
}

/** The raw (escaped, TAB-separated) paths field of the operation at position `i`. */
export function filesRawAt(index: IndexData, i: number): string {
  return index.paths[index.pathIds[i] ?? 0] ?? "";
}

/** Every id, oldest first (tests, small indexes). */
export function allIds(index: IndexData): string[] {
  return Array.from({ length: index.count }, (_, i) => idAt(index, i));
}

/**
 * The position of the last line listing `id`, searching back from `before` (exclusive): cursors
 * point near the newest end, so this beats building the id map.
 */
export function lastPositionOf(index: IndexData, id: string, before = index.count): number {
  if (id.length !== OPERATION_ID_LEN) return -1;
  const ids = idBytes(index);
  let from = before * OPERATION_ID_LEN - 1;
  while (from >= 0) {
    const at = ids.lastIndexOf(id, from, "latin1");
    if (at < 0) return -1;
    if (at % OPERATION_ID_LEN === 0) return at / OPERATION_ID_LEN;
    from = at - 1;
  }
  return -1;
}

/**
 * The position of operation `id` in the index (its first line), if listed. Builds the id map
 * once: for callers that look up many ids (repair, reverting a range).
 */
export function positionOf(index: IndexData, id: string): number | undefined {
  if (index.byId === undefined) {
    const map = new Map<string, number>();
    const text = idBytes(index).toString("latin1");
    for (let i = 0; i < index.count; i++) {
      const key = text.slice(i * OPERATION_ID_LEN, (i + 1) * OPERATION_ID_LEN);
      if (!map.has(key)) map.set(key, i);
    }
    index.byId = map;
  }
  return index.byId.get(id);
}

/** `positionOf` for a single lookup (one CLI call): a native search, no map. */
export function firstPositionOf(index: IndexData, id: string): number | undefined {
  if (index.byId !== undefined) return index.byId.get(id);
  if (id.length !== OPERATION_ID_LEN) return undefined;
  const ids = idBytes(index);
  for (let from = 0; ; ) {
    const at = ids.indexOf(id, from, "latin1");
    if (at < 0) return undefined;
    if (at % OPERATION_ID_LEN === 0) return at / OPERATION_ID_LEN;
    from = at + 1;
  }
}

const idBytes = (index: IndexData) =>
  Buffer.from(index.ids.buffer, index.ids.byteOffset, index.count * OPERATION_ID_LEN);

/** The paths of the operation at position `i`. */
export function filesAt(index: IndexData, i: number): string[] {
  return splitFiles(filesRawAt(index, i));
}

/** Split a raw paths field. */
export function splitFiles(raw: string): string[] {
  if (raw === "") return [];
  return raw.includes("\t") || raw.includes("\\") ? raw.split("\t").map(unescapeField) : [raw];
}

export function indexEntryAt(index: IndexData, i: number): IndexEntry {
  return {
    id: idAt(index, i),
    ts: index.ts[i] ?? 0,
    tool: toolAt(index, i),
    linesChanged: index.linesChanged[i] ?? 0,
    files: filesAt(index, i),
  };
}

/** Make room for one more line (columns double when full). */
function reserve(index: IndexData): void {
  if (index.count < index.ts.length) return;
  const cap = Math.max(64, index.ts.length * 2);
  const n = index.count;
  const ts = new Float64Array(cap);
  ts.set(index.ts.subarray(0, n));
  index.ts = ts;
  const lines = new Float64Array(cap);
  lines.set(index.linesChanged.subarray(0, n));
  index.linesChanged = lines;
  const toolIds = new Uint32Array(cap);
  toolIds.set(index.toolIds.subarray(0, n));
  index.toolIds = toolIds;
  const pathIds = new Uint32Array(cap);
  pathIds.set(index.pathIds.subarray(0, n));
  index.pathIds = pathIds;
  const ids = new Uint8Array(cap * OPERATION_ID_LEN);
  ids.set(index.ids.subarray(0, n * OPERATION_ID_LEN));
  index.ids = ids;
}

function intern(table: string[], map: Map<string, number>, value: string): number {
  let at = map.get(value);
  if (at === undefined) {
    at = table.length;
    table.push(value);
    map.set(value, at);
  }
  return at;
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
  into.toolIndex ??= new Map(into.tools.map((t, i) => [t, i]));
  into.pathIndex ??= new Map(into.paths.map((p, i) => [p, i]));
  const toolIndex = into.toolIndex;
  const pathIndex = into.pathIndex;
  // Tools are few: compare in place against the ones seen instead of slicing every line's.
  const known = into.tools;
  let pos = 0;
  for (;;) {
    const end = text.indexOf("\n", pos);
    if (end < 0) break;
    const start = pos;
    pos = end + 1;
    const t1 = start + OPERATION_ID_LEN;
    if (t1 >= end || text.charCodeAt(t1) !== 9 || !isIdAt(text, start)) continue;
    const ts = digitsAt(text, t1 + 1);
    const t2 = ts.next;
    if (ts.value < 0 || text.charCodeAt(t2) !== 9) continue;
    const t3 = text.indexOf("\t", t2 + 1);
    if (t3 < 0 || t3 > end) continue;
    let toolId = -1;
    for (let k = 0; k < known.length; k++) {
      const name = known[k] ?? "";
      if (name.length === t3 - t2 - 1 && text.startsWith(name, t2 + 1)) {
        toolId = k;
        break;
      }
    }
    const lines = digitsAt(text, t3 + 1);
    const t4 = lines.next;
    if (lines.value < 0 || (t4 !== end && text.charCodeAt(t4) !== 9)) continue;
    if (toolId < 0) toolId = intern(known, toolIndex, unescapeField(text.slice(t2 + 1, t3)));
    const pathId = intern(into.paths, pathIndex, t4 < end ? text.slice(t4 + 1, end) : "");
    reserve(into);
    const i = into.count;
    const idBase = i * OPERATION_ID_LEN;
    for (let k = 0; k < OPERATION_ID_LEN; k++) into.ids[idBase + k] = text.charCodeAt(start + k);
    into.ts[i] = ts.value;
    into.toolIds[i] = toolId;
    into.linesChanged[i] = lines.value;
    into.pathIds[i] = pathId;
    into.count = i + 1;
    if (into.byId !== undefined) {
      const id = text.slice(start, t1);
      if (!into.byId.has(id)) into.byId.set(id, i);
    }
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
  /** Bytes of the file the on-disk cache (index.cache) covers as far as this process knows. */
  onDisk: number;
  data: IndexData;
}

const cache = new Map<string, CacheEntry>();

/** Below this many operations parsing is cheap enough that no on-disk cache is written. */
const CACHE_MIN_LINES = 2000;
/** The on-disk cache is rewritten once this many bytes were appended after what it covers. */
const CACHE_REFRESH_BYTES = 256 * 1024;

/** `index.cache` beside `index.tsv`: the derived columnar copy (see index-cache.ts). */
export function indexCachePath(indexPath: string): string {
  return join(dirname(indexPath), "index.cache");
}

/**
 * Load the index, reusing what this process parsed before: an unchanged file costs one stat,
 * a grown one only the parse of its new lines (the MCP server is long-lived). A fresh process
 * starts from the on-disk cache when it is valid for a prefix of this very file, and parses
 * only the lines after that prefix. A file replaced by retention (new inode) or shrunk is read
 * again from the start.
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
    entry = loadCachedPrefix(indexPath, st) ?? {
      ino: st.ino,
      dev: st.dev,
      parsed: 0,
      onDisk: 0,
      data: emptyIndex(),
    };
    cache.set(indexPath, entry);
  }
  if (st.size > entry.parsed) {
    const bytes = readRange(indexPath, entry.parsed, st.size);
    // Decode only complete lines, so a torn multi-byte character never shifts the offset.
    const lastLf = bytes.lastIndexOf(0x0a);
    if (lastLf >= 0) {
      parseIndexText(bytes.toString("utf8", 0, lastLf + 1), entry.data);
      entry.parsed += lastLf + 1;
      indexLoadStats.parsedBytes += lastLf + 1;
    }
  }
  if (
    entry.data.count >= CACHE_MIN_LINES &&
    (entry.onDisk === 0 || entry.parsed - entry.onDisk >= CACHE_REFRESH_BYTES)
  ) {
    writeCachedPrefix(indexPath, entry);
  }
  return entry.data;
}

/** What loads did since `forgetLoadedIndexes` (tests: proof the cache was or was not used). */
export const indexLoadStats = { fromCache: 0, parsedBytes: 0, cacheWrites: 0 };

/** Forget what this process parsed, as a fresh process would (tests). */
export function forgetLoadedIndexes(): void {
  cache.clear();
  indexLoadStats.fromCache = 0;
  indexLoadStats.parsedBytes = 0;
  indexLoadStats.cacheWrites = 0;
}

function keyFor(indexPath: string, st: { ino: number; dev: number }, covered: number) {
  const { head, tail } = probeRanges(covered);
  const fingerprint = fingerprintOf(
    readRange(indexPath, head[0], head[1]),
    readRange(indexPath, tail[0], tail[1]),
  );
  return { ino: st.ino, dev: st.dev, covered, fingerprint };
}

/** The on-disk cache as a starting point, if it describes a prefix of this very file. */
function loadCachedPrefix(
  indexPath: string,
  st: { ino: number; dev: number; size: number },
): CacheEntry | undefined {
  let buf: Buffer;
  try {
    buf = readFileSync(indexCachePath(indexPath));
  } catch {
    return undefined; // absent or unreadable: it is only a cache
  }
  const claimed = readCacheKey(buf);
  if (
    claimed === undefined ||
    claimed.ino !== st.ino ||
    claimed.dev !== st.dev ||
    claimed.covered <= 0 ||
    claimed.covered > st.size ||
    keyFor(indexPath, st, claimed.covered).fingerprint !== claimed.fingerprint
  ) {
    return undefined;
  }
  const decoded = decodeIndexCache(buf);
  if (decoded === undefined) {
    // It names this very prefix of this file, yet its body fails its sha1 or its tables: damaged,
    // not stale. Dropped and said so; the next load that parses 2000 lines writes it anew.
    discardIndexCache(indexPath, "its sha1 or its tables do not check out");
    return undefined;
  }
  indexLoadStats.fromCache++;
  return {
    ino: st.ino,
    dev: st.dev,
    parsed: claimed.covered,
    onDisk: claimed.covered,
    data: decoded.data,
  };
}

/** Remove a damaged `index.cache`, with a `cache.discarded` event on the workspace's bus. */
function discardIndexCache(indexPath: string, reason: string): void {
  const file = indexCachePath(indexPath);
  rmSync(file, { force: true });
  try {
    // index.tsv lies in `.timewarp/history/`; the bus is `.timewarp/events.jsonl`.
    appendEvent(
      join(dirname(dirname(indexPath)), "events.jsonl"),
      "cache.discarded",
      { file, reason: `index.cache: ${reason}` },
      systemClock,
    );
  } catch {
    // a full or read-only disk: the cache is ignored all the same
  }
}

/**
 * What is wrong with `index.cache` for the index at `indexPath` (for fsck; null: absent, sound,
 * or stale, which readers ignore and replace). A cache that names this file's prefix must decode
 * and hold exactly what parsing that prefix gives.
 */
export function checkIndexCache(indexPath: string): string | null {
  let buf: Buffer;
  let st: { ino: number; dev: number; size: number };
  try {
    buf = readFileSync(indexCachePath(indexPath));
    st = statSync(indexPath);
  } catch {
    return null;
  }
  const claimed = readCacheKey(buf);
  if (claimed === undefined) return "its header does not read";
  if (
    claimed.ino !== st.ino ||
    claimed.dev !== st.dev ||
    claimed.covered <= 0 ||
    claimed.covered > st.size ||
    keyFor(indexPath, st, claimed.covered).fingerprint !== claimed.fingerprint
  ) {
    return null; // stale: made for another file or other bytes, and never used for this one
  }
  const decoded = decodeIndexCache(buf);
  if (decoded === undefined) return "its sha1 or its tables do not check out";
  const parsed = emptyIndex();
  parseIndexText(readRange(indexPath, 0, claimed.covered).toString("utf8"), parsed);
  const a = decoded.data;
  if (a.count !== parsed.count) return `it lists ${a.count} operations, the index ${parsed.count}`;
  for (let i = 0; i < a.count; i++) {
    const x = indexEntryAt(a, i);
    const y = indexEntryAt(parsed, i);
    if (JSON.stringify(x) !== JSON.stringify(y)) {
      return `operation ${i + 1} differs from index.tsv (${y.id})`;
    }
  }
  return null;
}

/**
 * Write the cache for what this process parsed. Not fsynced and failures ignored: it is derived,
 * checked on every load, and rebuilt from index.tsv whenever it does not check out.
 */
function writeCachedPrefix(indexPath: string, entry: CacheEntry): void {
  entry.onDisk = entry.parsed;
  try {
    const buf = encodeIndexCache(entry.data, keyFor(indexPath, entry, entry.parsed));
    writeFileAtomic(indexCachePath(indexPath), buf, { durable: false });
    indexLoadStats.cacheWrites++;
  } catch {
    // a read-only or full disk costs the next process a full parse, nothing more
  }
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
  // The old cache would be refused anyway (new inode); removing it saves the next reader a read.
  rmSync(indexCachePath(indexPath), { force: true });
  writeFileAtomic(indexPath, entries.map(formatIndexLine).join(""));
  cache.delete(indexPath);
}
