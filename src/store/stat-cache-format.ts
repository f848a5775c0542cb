import { closeSync, fstatSync, openSync, readFileSync, readSync } from "node:fs";
import { crc32 } from "node:zlib";
import { ErrorCode, TimewarpError } from "../core/index.ts";
import type { ManifestEntry } from "./manifest.ts";
import { small } from "./scan-walker.ts";
import type { CachedStat, ScanIndex, StatCache } from "./stat-cache.ts";
import { type StatEntries, StatTable, tableWithChanges } from "./stat-cache-table.ts";

/**
 * The stat cache's base file (`stat-cache.bin`, format 8), cut in segments so that an update
 * reads only the segments holding the paths it revisits (issue 22):
 *
 * - a fixed header: magic, version, scan start, file count, flags, total size, watch token and
 *   the CRC-32 of the bytes before it (what `peekStatCache` reads alone);
 * - the head: its length, a JSON text (per segment its first key, offset, length, entry count
 *   and CRC-32, for the files and for the directories and symlinks; the rest of the index; the
 *   racy keys; the counts) and the CRC-32 of that text;
 * - the file segments (per entry: key length, key, size, mtime, ctime, inode as doubles, mode,
 *   raw oid), sorted by key in code-unit order, then the segments of the other entries (a JSON
 *   array each), sorted by path, so parents come before their children;
 * - the CRC-32 of every byte before it.
 *
 * A whole read checks the last sum; a partial read (`openBaseParts`) checks the header's, the
 * head's and each segment's it reads.
 */

export const MAGIC = 0x54575343; // "TWSC"
/** 8: segments with their own sums, and the index's directories in segments too (issue 22). */
export const FORMAT_VERSION = 8;
/** Header flag: every key and path is UTF-8 without U+FFFD (no byte names). */
export const FLAG_PLAIN = 1;
const TOKEN_SLOT = 64;
const BYTES_AT = 4 + 4 + 8 + 4 + 4;
const TOKEN_AT = BYTES_AT + 8;
export const HEADER_CRC_AT = TOKEN_AT + TOKEN_SLOT;
export const HEADER_BYTES = HEADER_CRC_AT + 4;
export const SUM_BYTES = 4;
/** Per file entry after the key: size, mtime, ctime, ino (f64 each), mode (u32), oid (20 bytes). */
const FIXED_BYTES = 8 * 4 + 4 + 20;
/**
 * Entries per segment: 128 files (~12 KiB) or 64 directories (~6 KiB of JSON), so that 20
 * scattered edits read and decode a few hundred KiB at most, while the head (one line per
 * segment) stays near 100 KiB at 100k files.
 */
const FILE_SEGMENT = 128;
const OTHERS_SEGMENT = 64;

/** A segment: its first key, where it lies, how many entries it holds, its CRC-32. */
export type SegmentRef = [
  first: string,
  offset: number,
  length: number,
  count: number,
  crc: number,
];

/** What the head holds beside the segments. */
export interface BaseHead {
  files: SegmentRef[];
  others: SegmentRef[];
  /** The index without its `others` (those are in segments); absent when the cache has none. */
  index?: Omit<ScanIndex, "others">;
  racy: string[];
  dirs: number;
  symlinks: number;
}

/** The fixed header's fields. */
export interface BaseHeader {
  scanStartMs: number;
  files: number;
  plain: boolean;
  bytes: number;
  watchToken?: string;
}

export const hex8 = (n: number) => n.toString(16).padStart(8, "0");
export const isPlainKey = (key: string) => key.charCodeAt(0) !== 0 && !key.includes("\uFFFD");
const headerSum = (buf: Buffer) => crc32(buf.subarray(0, HEADER_CRC_AT));

/** The header of a base file's first bytes; a string saying what is wrong otherwise. */
export function parseHeader(buf: Buffer): BaseHeader | string {
  if (buf.length < 8 || buf.readUInt32LE(0) !== MAGIC) return "not a stat cache (no TWSC magic)";
  if (buf.readUInt32LE(4) !== FORMAT_VERSION) return OTHER_VERSION;
  if (buf.length < HEADER_BYTES + 4) return `truncated (${buf.length} bytes)`;
  if (headerSum(buf) !== buf.readUInt32LE(HEADER_CRC_AT))
    return "its header checksum does not match";
  const len = buf.readUInt8(TOKEN_AT);
  const watchToken =
    len === 0 || len >= TOKEN_SLOT
      ? undefined
      : buf.toString("latin1", TOKEN_AT + 1, TOKEN_AT + 1 + len);
  return {
    scanStartMs: buf.readDoubleLE(8),
    files: buf.readUInt32LE(16),
    plain: (buf.readUInt32LE(20) & FLAG_PLAIN) !== 0,
    bytes: buf.readDoubleLE(BYTES_AT),
    ...(watchToken === undefined ? {} : { watchToken }),
  };
}

export const OTHER_VERSION = "of another format version";

function writeHeader(buf: Buffer, h: BaseHeader): void {
  const token = h.watchToken ?? "";
  if (token.length >= TOKEN_SLOT || !/^[\x21-\x7e]*$/.test(token)) {
    throw new TimewarpError(
      ErrorCode.INTERNAL,
      `watch token ${JSON.stringify(token)} does not fit the stat cache header`,
    );
  }
  buf.writeUInt32LE(MAGIC, 0);
  buf.writeUInt32LE(FORMAT_VERSION, 4);
  buf.writeDoubleLE(h.scanStartMs, 8);
  buf.writeUInt32LE(h.files, 16);
  buf.writeUInt32LE(h.plain ? FLAG_PLAIN : 0, 20);
  buf.writeDoubleLE(h.bytes, BYTES_AT);
  buf.fill(0, TOKEN_AT, HEADER_BYTES);
  buf.writeUInt8(token.length, TOKEN_AT);
  buf.write(token, TOKEN_AT + 1, "latin1");
  buf.writeUInt32LE(headerSum(buf), HEADER_CRC_AT);
}

/** One file segment's bytes: the table's rows `rows[from..to)`. */
function encodeFileSegment(table: StatTable, rows: Uint32Array, from: number, to: number): Buffer {
  let size = 0;
  for (let i = from; i < to; i++) {
    size += 4 + Buffer.byteLength(table.keyAt(rows[i] as number), "utf8") + FIXED_BYTES;
  }
  const buf = Buffer.allocUnsafe(size);
  let off = 0;
  for (let i = from; i < to; i++) {
    const row = rows[i] as number;
    const len = buf.write(table.keyAt(row), off + 4, "utf8");
    buf.writeUInt32LE(len, off);
    off += 4 + len;
    table.writeStat(row, buf, off);
    table.copyOid(row, buf, off + 36);
    off += FIXED_BYTES;
  }
  return buf;
}

/**
 * A file segment's entries added to `into`, in order; false when its bytes do not add up to
 * `count` entries (some may have been added).
 */
export function decodeFileSegmentInto(buf: Buffer, count: number, into: StatTable): boolean {
  let off = 0;
  for (let i = 0; i < count; i++) {
    if (off + 4 > buf.length) return false;
    const keyEnd = off + 4 + buf.readUInt32LE(off);
    if (keyEnd + FIXED_BYTES > buf.length) return false;
    into.addEncoded(buf.toString("utf8", off + 4, keyEnd), buf, keyEnd);
    off = keyEnd + FIXED_BYTES;
  }
  return off === buf.length;
}

/** A file segment's entries, in order; null when its bytes do not add up to `count` entries. */
export function decodeFileSegment(
  buf: Buffer,
  count: number,
): { key: string; stat: CachedStat }[] | null {
  const out: { key: string; stat: CachedStat }[] = [];
  let off = 0;
  for (let i = 0; i < count; i++) {
    if (off + 4 > buf.length) return null;
    const keyEnd = off + 4 + buf.readUInt32LE(off);
    if (keyEnd + FIXED_BYTES > buf.length) return null;
    const key = buf.toString("utf8", off + 4, keyEnd);
    off = keyEnd;
    out.push({
      key,
      stat: {
        size: small(buf.readDoubleLE(off)),
        mtimeMs: buf.readDoubleLE(off + 8),
        ctimeMs: buf.readDoubleLE(off + 16),
        ino: small(buf.readDoubleLE(off + 24)),
        mode: buf.readUInt32LE(off + 32),
        oid: buf.toString("hex", off + 36, off + 56),
      },
    });
    off += FIXED_BYTES;
  }
  return off === buf.length ? out : null;
}

/** An others segment's entries; null when it is not a JSON array of `count` entries. */
export function decodeOthersSegment(buf: Buffer, count: number): ManifestEntry[] | null {
  try {
    const list = JSON.parse(buf.toString("utf8")) as unknown;
    return Array.isArray(list) && list.length === count ? (list as ManifestEntry[]) : null;
  } catch {
    return null;
  }
}

/** `items` cut in runs of `size`, each encoded and placed from `offset`. */
function segmentsOf<T>(
  items: readonly T[],
  size: number,
  firstOf: (t: T) => string,
  encode: (run: readonly T[]) => Buffer,
  offset: number,
): { refs: SegmentRef[]; bytes: Buffer[]; end: number } {
  const refs: SegmentRef[] = [];
  const bytes: Buffer[] = [];
  let at = offset;
  for (let i = 0; i < items.length; i += size) {
    const run = items.slice(i, i + size);
    const b = encode(run);
    refs.push([firstOf(run[0] as T), at, b.length, run.length, crc32(b)]);
    bytes.push(b);
    at += b.length;
  }
  return { refs, bytes, end: at };
}

/** The table's rows (in key order, `rows`) cut in file segments, placed from 0. */
function fileSegmentsOf(
  table: StatTable,
  rows: Uint32Array,
): { refs: SegmentRef[]; bytes: Buffer[]; end: number } {
  const refs: SegmentRef[] = [];
  const bytes: Buffer[] = [];
  let at = 0;
  for (let i = 0; i < rows.length; i += FILE_SEGMENT) {
    const to = Math.min(rows.length, i + FILE_SEGMENT);
    const b = encodeFileSegment(table, rows, i, to);
    refs.push([table.keyAt(rows[i] as number), at, b.length, to - i, crc32(b)]);
    bytes.push(b);
    at += b.length;
  }
  return { refs, bytes, end: at };
}

/** `entries` as a table (a copy in key order when it is a plain map). */
function asTable(entries: StatEntries): StatTable {
  return entries instanceof StatTable ? entries : tableWithChanges(entries, new Map());
}

/** Code-unit order, as `Array.prototype.sort` without a comparator. */
export const byCodeUnits = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** A whole base file's bytes for `cache` (its index's others sorted by path). */
export function encodeBase(cache: StatCache): Buffer {
  return Buffer.concat(encodeBaseParts(cache));
}

/**
 * The base file as its parts, in order (header and head, the segments, the closing sum): at
 * 100k files the segments are ~13 MB, which a writer then need not copy into one buffer.
 */
export function encodeBaseParts(cache: StatCache): Buffer[] {
  const table = asTable(cache.entries);
  const rows = table.sortedRows();
  const others = [...(cache.index?.others ?? [])].sort((a, b) => byCodeUnits(a.path, b.path));
  let plain = true;
  let bytes = 0;
  const racy: string[] = [];
  let dirs = 0;
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i] as number;
    const key = table.keyAt(row);
    bytes += table.sizeAt(row);
    if (table.mtimeAt(row) >= cache.scanStartMs) racy.push(key);
    if (plain && !isPlainKey(key)) plain = false;
  }
  for (const e of others) {
    if (e.type === "dir") dirs++;
    if (plain && (e.path_b64 !== undefined || !isPlainKey(e.path))) plain = false;
  }
  // Offsets count from the end of the head (where the segments begin).
  const f = fileSegmentsOf(table, rows);
  const o = segmentsOf(
    others,
    OTHERS_SEGMENT,
    (e) => e.path,
    (run) => Buffer.from(JSON.stringify(run), "utf8"),
    f.end,
  );
  const head: BaseHead = {
    files: f.refs,
    others: o.refs,
    racy,
    dirs,
    symlinks: others.length - dirs,
  };
  if (cache.index !== undefined) head.index = withoutOthers(cache.index);
  const text = Buffer.from(JSON.stringify(head), "utf8");
  const out = Buffer.allocUnsafe(HEADER_BYTES + 4 + text.length + 4);
  writeHeader(out, {
    scanStartMs: cache.scanStartMs,
    files: rows.length,
    plain,
    bytes,
    watchToken: cache.watchToken,
  });
  out.writeUInt32LE(text.length, HEADER_BYTES);
  out.writeUInt32LE(crc32(text), HEADER_BYTES + 4 + text.copy(out, HEADER_BYTES + 4));
  const parts = [out, ...f.bytes, ...o.bytes];
  let sum = 0;
  for (const b of parts) sum = crc32(b, sum);
  const tail = Buffer.allocUnsafe(SUM_BYTES);
  tail.writeUInt32LE(sum, 0);
  parts.push(tail);
  return parts;
}

function withoutOthers(index: ScanIndex): Omit<ScanIndex, "others"> {
  const { others: _others, ...rest } = index;
  return rest;
}

/** The head at the start of `buf` (after the header); a string saying what is wrong otherwise. */
export function parseHead(
  buf: Buffer,
  available: number,
): { head: BaseHead; end: number } | string {
  if (available < HEADER_BYTES + 4) return "truncated";
  const len = buf.readUInt32LE(HEADER_BYTES);
  const end = HEADER_BYTES + 4 + len + 4;
  if (end > available) return len > 1 << 28 ? "its head length is not a length" : "truncated";
  const text = buf.subarray(HEADER_BYTES + 4, HEADER_BYTES + 4 + len);
  if (crc32(text) !== buf.readUInt32LE(HEADER_BYTES + 4 + len))
    return "its head checksum does not match";
  try {
    return { head: JSON.parse(text.toString("utf8")) as BaseHead, end };
  } catch {
    return "its head does not parse";
  }
}

/** A whole base file, checked; a string saying what is wrong, or `OTHER_VERSION`. */
export function decodeBase(buf: Buffer): StatCache | string {
  const header = parseHeader(buf);
  if (typeof header === "string") return header;
  if (buf.length < HEADER_BYTES + 4 + SUM_BYTES) return `truncated (${buf.length} bytes)`;
  const want = buf.readUInt32LE(buf.length - SUM_BYTES);
  const got = crc32(buf.subarray(0, buf.length - SUM_BYTES));
  if (got !== want)
    return `its checksum does not match (crc32 ${hex8(got)}, the file says ${hex8(want)})`;
  const parsed = parseHead(buf, buf.length - SUM_BYTES);
  if (typeof parsed === "string") return parsed;
  const { head, end } = parsed;
  const limit = buf.length - SUM_BYTES;
  const entries = new StatTable(header.files);
  for (const [, off, len, count] of head.files) {
    const at = end + off;
    if (at + len > limit || !decodeFileSegmentInto(buf.subarray(at, at + len), count, entries)) {
      return "a file segment does not add up";
    }
  }
  if (entries.size !== header.files) return "its file count does not add up";
  const others: ManifestEntry[] = [];
  for (const [, off, len, count] of head.others) {
    const at = end + off;
    const run = at + len > limit ? null : decodeOthersSegment(buf.subarray(at, at + len), count);
    if (run === null) return "a directory segment does not add up";
    for (const e of run) others.push(e);
  }
  const cache: StatCache = { scanStartMs: header.scanStartMs, entries };
  if (head.index !== undefined) cache.index = { ...head.index, others };
  if (header.watchToken !== undefined) cache.watchToken = header.watchToken;
  return cache;
}

/** The whole file at `path` with the inode read (null when it cannot be opened or read). */
export function readWhole(path: string): { buf: Buffer; ino: number } | null {
  let fd: number;
  try {
    fd = openSync(path, "r");
  } catch {
    return null;
  }
  try {
    return { ino: fstatSync(fd).ino, buf: readFileSync(fd) };
  } catch {
    return null;
  } finally {
    closeSync(fd);
  }
}

/** `length` bytes at `position` of `fd` (fewer at the end of the file). */
export function readAt(fd: number, position: number, length: number): Buffer {
  const buf = Buffer.allocUnsafe(length);
  let got = 0;
  while (got < length) {
    const n = readSync(fd, buf, got, length - got, position + got);
    if (n === 0) break;
    got += n;
  }
  return got === length ? buf : buf.subarray(0, got);
}
