import {
  closeSync,
  fstatSync,
  openSync,
  readFileSync,
  readSync,
  statSync,
  unlinkSync,
} from "node:fs";
import { endianness } from "node:os";
import { basename, dirname, join } from "node:path";
import { crc32 } from "node:zlib";
import {
  appendEvent,
  DATA_DIR,
  ErrorCode,
  systemClock,
  TimewarpError,
  writeFileAtomic,
} from "../core/index.ts";
import type { ManifestEntry } from "./manifest.ts";
import { small } from "./scan-walker.ts";
import type { SkippedPath } from "./scan-workspace.ts";

/** What the last scan saw of one file, and the content id it hashed to. */
export interface CachedStat {
  size: number;
  /**
   * Node's `mtimeMs`/`ctimeMs` doubles: sub-microsecond resolution (2^-12 ms at today's dates).
   * Cheaper than bigint nanoseconds at 100k files, and exact enough with the racy rule: a write
   * after a scan began lands on a later double than that scan's start, so it cannot hide.
   */
  mtimeMs: number;
  ctimeMs: number;
  ino: number;
  mode: number;
  oid: string;
}

/**
 * The stat cache: per file the stat data of the last scan and its content id, so the next scan
 * re-reads only what changed (git's index idea). `scanStartMs` is the file-system time at which
 * that scan began: an entry whose mtime is not older than it is "racy" and always re-read.
 */
export interface StatCache {
  scanStartMs: number;
  entries: Map<string, CachedStat>;
  /**
   * The rest of the scan that built this cache (directories, symlinks, skipped paths) and the
   * scope it ran with (`scanScope`): with them the cache is a complete index of the workspace,
   * which a watcher's list of changed paths can bring up to date without walking the tree.
   */
  index?: ScanIndex;
  /** The watcher's position (`watch-client`) this cache is up to date with, when one ran. */
  watchToken?: string;
}

export interface ScanIndex {
  scope: string;
  others: ManifestEntry[];
  skipped: SkippedPath[];
  /**
   * A stored manifest file with exactly this scan's manifest (path relative to the data
   * directory, and its hash), set by the snapshot that wrote it: an unchanged workspace links
   * it into the next snapshot instead of encoding 10k entries again.
   */
  manifest?: ManifestRef;
  /** Files with more than one hard link: revisited by every incremental scan. */
  linked?: string[];
}

/**
 * A stored manifest file named by an index: its path (relative to the data directory), the hash
 * of its canonical text, and the CRC-32 of its stored bytes (`manifestFileSum`), so that a
 * reader can check the file in a pass over ~300 KB instead of decompressing and hashing 1.5 MB
 * of text before it links the file into a new record (issue 16: trusted caches are checked).
 */
export interface ManifestRef {
  file: string;
  hash: string;
  sum: string;
}

/** The checksum `ManifestRef.sum` records of a stored manifest file's bytes. */
export function manifestFileSum(bytes: Uint8Array): string {
  return crc32(bytes).toString(16).padStart(8, "0");
}

/**
 * The stored bytes of the manifest file an index names, when they match its recorded sum; null
 * when the file is gone or does not match (reported on the bus as `cache.discarded`, and left
 * in place: the name may be a record's own file, which fsck reports). For a snapshot about to
 * link that file into a new record: a damaged one must never be.
 */
export function readManifestRef(dataDir: string, ref: ManifestRef): Buffer | null {
  const file = join(dataDir, ref.file);
  let bytes: Buffer;
  try {
    bytes = readFileSync(file);
  } catch {
    return null;
  }
  const problem = manifestRefProblem(bytes, ref);
  if (problem === null) return bytes;
  reportDiscarded(file, problem);
  return null;
}

/** What is wrong with the bytes of the manifest file `ref` names (null: nothing). */
export function manifestRefProblem(bytes: Uint8Array, ref: ManifestRef): string | null {
  const sum = manifestFileSum(bytes);
  return sum === ref.sum ? null : `its crc32 is ${sum}, the stat cache recorded ${ref.sum}`;
}

export function emptyStatCache(): StatCache {
  return { scanStartMs: 0, entries: new Map() };
}

const MAGIC = 0x54575343; // "TWSC"
/** 7: a CRC-32 of the header in it, and of the whole file at its end (issue 16). */
const FORMAT_VERSION = 7;
/** Header flag: every key is a UTF-8 path without U+FFFD (no byte names; see `StatCacheTable`). */
const FLAG_PLAIN = 1;
/** The watch token's slot in the header: a length byte, then up to 63 ASCII bytes. */
const TOKEN_SLOT = 64;
/**
 * Header: magic, version, scan start (f64), file count, flags, total bytes (f64), token, and the
 * CRC-32 of the bytes before it (`peekStatCache` reads only the header, and trusts it only so).
 */
const BYTES_AT = 4 + 4 + 8 + 4 + 4;
const TOKEN_AT = BYTES_AT + 8;
const HEADER_CRC_AT = TOKEN_AT + TOKEN_SLOT;
const HEADER_BYTES = HEADER_CRC_AT + 4;
/** The CRC-32 of everything before it closes the file. */
const SUM_BYTES = 4;
/** After the header: where each entry starts (u32 per entry, then where the table ends). */
const tableStart = (count: number) => HEADER_BYTES + 4 * (count + 1);
const LITTLE_ENDIAN = endianness() === "LE";
/** Per entry after the key: size, mtime, ctime, ino (f64 each), mode (u32), oid (20 bytes). */
const FIXED_BYTES = 4 + 8 * 4 + 4 + 20;

/**
 * Read a stat cache file; null when it is absent, torn, corrupt or of another format. The format
 * is a header (magic, version, scan start, file count, flags, total size, watch token, the
 * header's CRC-32), the offset of each entry, a flat binary table sorted by key in code-unit
 * order (per file: key length, key, four doubles, mode, raw oid), a JSON trailer (length, text)
 * with the index and the racy keys (mtime not older than the scan start), then the CRC-32 of all
 * the bytes before it. A file whose sums do not match is discarded (`discardCache`): a cache that
 * is wrong would make a snapshot record one file with another's bytes (issue 16), while a lost
 * one only costs a full re-hash. Decoding 10k entries takes a few milliseconds, a third of what
 * the JSON text it replaced took to parse; `openStatCacheTable` reads it without decoding any.
 */
export function loadStatCache(path: string): StatCache | null {
  const buf = readCacheFile(path);
  return buf === null ? null : decodeStatCache(buf);
}

/** A checked cache file's contents; null when its structure does not add up. */
function decodeStatCache(buf: Buffer): StatCache | null {
  const fileEnd = buf.length - SUM_BYTES;
  const scanStartMs = buf.readDoubleLE(8);
  const count = buf.readUInt32LE(16);
  const watchToken = readToken(buf);
  const entries = new Map<string, CachedStat>();
  let off = tableStart(count);
  for (let i = 0; i < count; i++) {
    if (off + 4 > fileEnd) return null;
    const keyLen = buf.readUInt32LE(off);
    const keyEnd = off + 4 + keyLen;
    if (keyEnd + FIXED_BYTES - 4 > fileEnd) return null;
    const key = buf.toString("utf8", off + 4, keyEnd);
    off = keyEnd;
    entries.set(key, entryAt(buf, off));
    off += FIXED_BYTES - 4;
  }
  if (off + 4 > fileEnd) return null;
  const trailerEnd = off + 4 + buf.readUInt32LE(off);
  if (trailerEnd !== fileEnd) return null;
  let trailer: { index?: ScanIndex };
  try {
    trailer = JSON.parse(buf.toString("utf8", off + 4, trailerEnd));
  } catch {
    return null;
  }
  const cache: StatCache = { scanStartMs, entries };
  if (trailer.index !== undefined) cache.index = trailer.index;
  if (watchToken !== undefined) cache.watchToken = watchToken;
  return cache;
}

/**
 * The entries of `keys` in the stat cache at `path`, found without decoding the others (no
 * object or string per entry: key bytes are compared in place). Null when the file is absent,
 * torn or of another format. For a hook that needs a handful of entries out of 10k.
 */
export function lookupStatCache(
  path: string,
  keys: Iterable<string>,
  options: { under?: Iterable<string> } = {},
): { scanStartMs: number; found: Map<string, CachedStat>; under: Set<string> } | null {
  const buf = readCacheFile(path);
  if (buf === null) return null;
  const fileEnd = buf.length - SUM_BYTES;
  const wanted = new Map<number, { key: string; bytes: Buffer }[]>();
  for (const key of keys) {
    const bytes = Buffer.from(key, "utf8");
    const same = wanted.get(bytes.length);
    if (same === undefined) wanted.set(bytes.length, [{ key, bytes }]);
    else same.push({ key, bytes });
  }
  const found = new Map<string, CachedStat>();
  // Directories asked about: does any file lie below one of them?
  const prefixes = [...(options.under ?? [])].map((p) => ({ p, bytes: Buffer.from(`${p}/`) }));
  const under = new Set<string>();
  const count = buf.readUInt32LE(16);
  let off = tableStart(count);
  for (let i = 0; i < count; i++) {
    if (off + 4 > fileEnd) return null;
    const keyLen = buf.readUInt32LE(off);
    const keyStart = off + 4;
    off = keyStart + keyLen;
    if (off + FIXED_BYTES - 4 > fileEnd) return null;
    for (const { p, bytes } of prefixes) {
      if (
        keyLen > bytes.length &&
        buf.compare(bytes, 0, bytes.length, keyStart, keyStart + bytes.length) === 0
      ) {
        under.add(p);
      }
    }
    const candidates = wanted.get(keyLen);
    if (candidates !== undefined) {
      for (const c of candidates) {
        if (buf.compare(c.bytes, 0, keyLen, keyStart, off) !== 0) continue;
        found.set(c.key, entryAt(buf, off));
      }
    }
    off += FIXED_BYTES - 4;
  }
  if (off + 4 > fileEnd || off + 4 + buf.readUInt32LE(off) !== fileEnd) return null;
  return { scanStartMs: buf.readDoubleLE(8), found, under };
}

/**
 * The whole cache file when it is ours and its sums match; else null. One of another format
 * version (an upgrade) is only ignored; a damaged one is discarded.
 */
function readCacheFile(path: string): Buffer | null {
  let fd: number;
  try {
    fd = openSync(path, "r");
  } catch {
    return null;
  }
  let buf: Buffer;
  let ino: number;
  try {
    ino = fstatSync(fd).ino;
    buf = readFileSync(fd);
  } catch {
    return null;
  } finally {
    closeSync(fd);
  }
  const problem = cacheFileProblem(buf);
  if (problem === null) return buf;
  if (problem !== OTHER_VERSION) discardCache(path, problem, ino);
  return null;
}

const OTHER_VERSION = "of another format version";

/** What is wrong with a cache file's bytes (null: nothing; `OTHER_VERSION`: not ours to judge). */
function cacheFileProblem(buf: Buffer): string | null {
  if (buf.length < 8 || buf.readUInt32LE(0) !== MAGIC) return "not a stat cache (no TWSC magic)";
  if (buf.readUInt32LE(4) !== FORMAT_VERSION) return OTHER_VERSION;
  if (buf.length < HEADER_BYTES + SUM_BYTES) return `truncated (${buf.length} bytes)`;
  if (headerSum(buf) !== buf.readUInt32LE(HEADER_CRC_AT))
    return "its header checksum does not match";
  const want = buf.readUInt32LE(buf.length - SUM_BYTES);
  const got = crc32(buf.subarray(0, buf.length - SUM_BYTES));
  return got === want
    ? null
    : `its checksum does not match (crc32 ${hex8(got)}, the file says ${hex8(want)})`;
}

const hex8 = (n: number) => n.toString(16).padStart(8, "0");
const headerSum = (buf: Buffer) => crc32(buf.subarray(0, HEADER_CRC_AT));

/**
 * Drop a cache that failed its check, and say so on the event bus (`cache.discarded`) of the
 * workspace it lies in: the next scan re-hashes every file instead of trusting it. Readers may
 * run without the workspace lock; the file is removed only while it is still the one read (a
 * writer's fresh cache renamed in meanwhile stays; a lost race costs a re-hash, never a wrong
 * answer).
 */
function discardCache(path: string, reason: string, ino: number): void {
  try {
    if (statSync(path).ino === ino) unlinkSync(path);
  } catch {
    // gone already
  }
  reportDiscarded(path, reason);
}

/** The `cache.discarded` event, on the bus of the workspace `path` lies in. */
function reportDiscarded(path: string, reason: string): void {
  const data = dataDirOf(path);
  if (data === undefined) return;
  try {
    appendEvent(
      join(data, "events.jsonl"),
      "cache.discarded",
      { file: path, reason: `${basename(path)}: ${reason}` },
      systemClock,
    );
  } catch {
    // a full or read-only disk: the cache is ignored all the same
  }
}

/** The `.timewarp/` directory `path` lies in, if any. */
function dataDirOf(path: string): string | undefined {
  for (let dir = dirname(path); ; dir = dirname(dir)) {
    if (basename(dir) === DATA_DIR) return dir;
    if (dirname(dir) === dir) return undefined;
  }
}

/**
 * What is wrong with the stat cache file at `path` (its sums, its structure), for fsck; null
 * when it is absent, sound, or of another format version. It is only looked at, not discarded.
 */
export function checkStatCacheFile(path: string): string | null {
  let buf: Buffer;
  try {
    buf = readFileSync(path);
  } catch {
    return null;
  }
  const problem = cacheFileProblem(buf);
  if (problem === OTHER_VERSION) return null;
  if (problem !== null) return problem;
  return decodeStatCache(buf) === null ? "its table or trailer does not add up" : null;
}

/** The fixed part of the entry whose key ends at `off`. */
function entryAt(buf: Buffer, off: number): CachedStat {
  return {
    // Small integers where they fit (`small`: no heap number per field, ~6 MB at 100k files).
    size: small(buf.readDoubleLE(off)),
    mtimeMs: buf.readDoubleLE(off + 8),
    ctimeMs: buf.readDoubleLE(off + 16),
    ino: small(buf.readDoubleLE(off + 24)),
    mode: buf.readUInt32LE(off + 32),
    oid: buf.toString("hex", off + 36, off + 56),
  };
}

/** Does the cache at `path` name any of `oids`? True when it cannot tell (torn, foreign). */
function referencesAny(path: string, oids: ReadonlySet<string>): boolean {
  if (oids.size === 0) return false;
  let buf: Buffer;
  try {
    buf = readFileSync(path);
  } catch {
    return false; // no cache, nothing to prune
  }
  if (cacheFileProblem(buf) !== null) return true;
  const raw = new Set<string>();
  for (const oid of oids) raw.add(Buffer.from(oid, "hex").toString("latin1"));
  const count = buf.readUInt32LE(16);
  let off = tableStart(count);
  for (let i = 0; i < count; i++) {
    if (off + 4 > buf.length - SUM_BYTES) return true;
    off += 4 + buf.readUInt32LE(off);
    if (off + FIXED_BYTES - 4 > buf.length - SUM_BYTES) return true;
    if (raw.has(buf.toString("latin1", off + 36, off + 56))) return true;
    off += FIXED_BYTES - 4;
  }
  return false;
}

function readToken(header: Buffer): string | undefined {
  const len = header.readUInt8(TOKEN_AT);
  return len === 0 || len >= TOKEN_SLOT
    ? undefined
    : header.toString("latin1", TOKEN_AT + 1, TOKEN_AT + 1 + len);
}

/** What a stat cache's header says, read without decoding its entries. */
export interface StatCacheHeader {
  scanStartMs: number;
  /** Files in the cache. */
  files: number;
  watchToken?: string;
}

/**
 * The header of the stat cache at `path` (a few dozen bytes), or null when absent or of another
 * format. With the watch token it answers "has anything changed since?" without loading the
 * cache: the common case of a hook around a shell command that wrote nothing.
 */
export function peekStatCache(path: string): StatCacheHeader | null {
  let fd: number;
  try {
    fd = openSync(path, "r");
  } catch {
    return null;
  }
  try {
    const header = Buffer.alloc(HEADER_BYTES);
    if (readSync(fd, header, 0, HEADER_BYTES, 0) !== HEADER_BYTES) return null;
    if (header.readUInt32LE(0) !== MAGIC || header.readUInt32LE(4) !== FORMAT_VERSION) return null;
    // A damaged header is left for the next full read to discard: a peek only declines to use it.
    if (headerSum(header) !== header.readUInt32LE(HEADER_CRC_AT)) return null;
    const watchToken = readToken(header);
    return {
      scanStartMs: header.readDoubleLE(8),
      files: header.readUInt32LE(16),
      ...(watchToken === undefined ? {} : { watchToken }),
    };
  } finally {
    closeSync(fd);
  }
}

/**
 * Read the stat cache at `path`. A missing, torn or foreign cache is an empty cache: the only
 * cost of losing it is one full re-hash, so it never fails a snapshot.
 */
export function readStatCache(path: string): StatCache {
  return loadStatCache(path) ?? emptyStatCache();
}

/** The cache's bytes (see `loadStatCache`). */
export function encodeStatCache(cache: StatCache): Buffer {
  const keys = [...cache.entries.keys()];
  // Usually in order already (a splice or an earlier encode wrote it so): checked before sorting.
  let sorted = true;
  for (let i = 1; i < keys.length && sorted; i++)
    sorted = (keys[i - 1] as string) < (keys[i] as string);
  if (!sorted) keys.sort();
  let plain = true;
  let bytes = 0;
  const racy: string[] = [];
  // Keys are measured, then written in place: no Buffer per key (100k of them at 100k files
  // were ~10 MB of short-lived objects at the peak of a snapshot).
  let tableBytes = 0;
  for (const key of keys) {
    const c = cache.entries.get(key) as CachedStat;
    tableBytes += FIXED_BYTES + Buffer.byteLength(key, "utf8");
    bytes += c.size;
    if (c.mtimeMs >= cache.scanStartMs) racy.push(key);
    if (plain && (key.charCodeAt(0) === 0 || key.includes("\uFFFD"))) plain = false;
  }
  const trailer = Buffer.from(JSON.stringify({ index: cache.index, racy }), "utf8");
  const start = tableStart(keys.length);
  const buf = Buffer.allocUnsafe(start + tableBytes + 4 + trailer.length + SUM_BYTES);
  writeHeader(buf, {
    scanStartMs: cache.scanStartMs,
    count: keys.length,
    plain,
    bytes,
    watchToken: cache.watchToken,
  });
  let off = start;
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i] as string;
    buf.writeUInt32LE(off, HEADER_BYTES + 4 * i);
    const len = buf.write(key, off + 4, "utf8");
    buf.writeUInt32LE(len, off);
    off = writeFixed(buf, off + 4 + len, cache.entries.get(key) as CachedStat);
  }
  buf.writeUInt32LE(off, HEADER_BYTES + 4 * keys.length);
  buf.writeUInt32LE(trailer.length, off);
  trailer.copy(buf, off + 4);
  return seal(buf);
}

/** Close a cache file's bytes with the CRC-32 of all before it (header written, sum last). */
function seal(buf: Buffer): Buffer {
  buf.writeUInt32LE(crc32(buf.subarray(0, buf.length - SUM_BYTES)), buf.length - SUM_BYTES);
  return buf;
}

function writeHeader(
  buf: Buffer,
  h: {
    scanStartMs: number;
    count: number;
    plain: boolean;
    bytes: number;
    watchToken: string | undefined;
  },
): void {
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
  buf.writeUInt32LE(h.count, 16);
  buf.writeUInt32LE(h.plain ? FLAG_PLAIN : 0, 20);
  buf.writeDoubleLE(h.bytes, BYTES_AT);
  buf.fill(0, TOKEN_AT, HEADER_BYTES);
  buf.writeUInt8(token.length, TOKEN_AT);
  buf.write(token, TOKEN_AT + 1, "latin1");
  buf.writeUInt32LE(headerSum(buf), HEADER_CRC_AT);
}

/** The fixed part of an entry at `off` (after its key); returns where the next entry starts. */
function writeFixed(buf: Buffer, off: number, c: CachedStat): number {
  buf.writeDoubleLE(c.size, off);
  buf.writeDoubleLE(c.mtimeMs, off + 8);
  buf.writeDoubleLE(c.ctimeMs, off + 16);
  buf.writeDoubleLE(c.ino, off + 24);
  buf.writeUInt32LE(c.mode, off + 32);
  buf.write(c.oid, off + 36, 20, "hex");
  return off + FIXED_BYTES - 4;
}

/**
 * A stat cache file opened without decoding its entries (`openStatCacheTable`): for an update
 * that touches a few of them, which finds them by binary search (the table is sorted by key)
 * and copies the rest over in runs (`spliceStatCache`). Opening it reads no entry: the offsets,
 * the total size and the racy keys are stored.
 */
export interface StatCacheTable {
  buf: Buffer;
  scanStartMs: number;
  watchToken?: string;
  /** No byte names and no key holding U+FFFD: decoded keys compare as the sort did. */
  plain: boolean;
  index?: ScanIndex;
  /** Entries in the table. */
  count: number;
  /** Where each entry starts (its key length), in key order; `offsets[count]` ends the table. */
  offsets: Uint32Array;
  /** Sum of the files' sizes. */
  bytes: number;
  /** The keys whose mtime is not older than `scanStartMs` (re-read by the next scan). */
  racy: string[];
}

/** Open the stat cache at `path` as a table; null when absent, torn, of another format. */
export function openStatCacheTable(path: string): StatCacheTable | null {
  const buf = readCacheFile(path);
  if (buf === null) return null;
  const count = buf.readUInt32LE(16);
  const start = tableStart(count);
  if (start + 4 > buf.length - SUM_BYTES) return null;
  let offsets: Uint32Array;
  const at = buf.byteOffset + HEADER_BYTES;
  if (LITTLE_ENDIAN && at % 4 === 0) {
    offsets = new Uint32Array(buf.buffer, at, count + 1);
  } else {
    offsets = new Uint32Array(count + 1);
    for (let i = 0; i <= count; i++) offsets[i] = buf.readUInt32LE(HEADER_BYTES + 4 * i);
  }
  const end = offsets[count] as number;
  const fileEnd = buf.length - SUM_BYTES;
  if ((count > 0 && offsets[0] !== start) || end < start || end + 4 > fileEnd) return null;
  const trailerEnd = end + 4 + buf.readUInt32LE(end);
  if (trailerEnd !== fileEnd) return null;
  let trailer: { index?: ScanIndex; racy?: string[] };
  try {
    trailer = JSON.parse(buf.toString("utf8", end + 4, trailerEnd));
  } catch {
    return null;
  }
  if (!Array.isArray(trailer.racy)) return null;
  const watchToken = readToken(buf);
  return {
    buf,
    scanStartMs: buf.readDoubleLE(8),
    plain: (buf.readUInt32LE(20) & FLAG_PLAIN) !== 0,
    count,
    offsets,
    bytes: buf.readDoubleLE(BYTES_AT),
    racy: trailer.racy,
    ...(trailer.index === undefined ? {} : { index: trailer.index }),
    ...(watchToken === undefined ? {} : { watchToken }),
  };
}

/** The key of entry `i`. */
export function tableKey(t: StatCacheTable, i: number): string {
  const off = t.offsets[i] as number;
  return t.buf.toString("utf8", off + 4, off + 4 + t.buf.readUInt32LE(off));
}

/** The stat data of entry `i`. */
export function tableStat(t: StatCacheTable, i: number): CachedStat {
  const off = t.offsets[i] as number;
  return entryAt(t.buf, off + 4 + t.buf.readUInt32LE(off));
}

/** The first entry whose key is not below `key` (`count` when none). Needs a plain table. */
export function tableLowerBound(t: StatCacheTable, key: string): number {
  let lo = 0;
  let hi = t.count;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (tableKey(t, mid) < key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * A new cache file's bytes: the table's entries except those `removed` marks, plus `added`
 * (keys not among the kept ones), in key order, under a new header and index. Kept entries are
 * copied in runs, not decoded: the cost is a memory copy of the file plus the added entries.
 */
export function spliceStatCache(
  t: StatCacheTable,
  removed: Uint8Array,
  added: ReadonlyMap<string, CachedStat>,
  next: { scanStartMs: number; watchToken: string | undefined; index: ScanIndex },
): Buffer {
  const keys = [...added.keys()].sort();
  const encodedKeys = keys.map((k) => Buffer.from(k, "utf8"));
  let plain = t.plain;
  let tableBytes = 0;
  let count = 0;
  let bytes = t.bytes;
  for (let i = 0; i < t.count; i++) {
    if (removed[i] === 1) {
      bytes -= t.buf.readDoubleLE(
        (t.offsets[i] as number) + 4 + t.buf.readUInt32LE(t.offsets[i] as number),
      );
      continue;
    }
    count++;
    tableBytes += (t.offsets[i + 1] as number) - (t.offsets[i] as number);
  }
  // A kept entry is not racy now: a racy one was revisited (removed), and this scan began later.
  const racy: string[] = [];
  for (let j = 0; j < keys.length; j++) {
    const key = keys[j] as string;
    const c = added.get(key) as CachedStat;
    if (key.charCodeAt(0) === 0 || key.includes("\uFFFD")) plain = false;
    if (c.mtimeMs >= next.scanStartMs) racy.push(key);
    bytes += c.size;
    tableBytes += FIXED_BYTES + (encodedKeys[j] as Buffer).length;
  }
  const total = count + keys.length;
  const trailer = Buffer.from(JSON.stringify({ index: next.index, racy }), "utf8");
  const start = tableStart(total);
  const buf = Buffer.allocUnsafe(start + tableBytes + 4 + trailer.length + SUM_BYTES);
  writeHeader(buf, {
    scanStartMs: next.scanStartMs,
    count: total,
    plain,
    bytes,
    watchToken: next.watchToken,
  });
  let out = start;
  let n = 0;
  let cursor = 0;
  /** Copy the kept entries in [cursor, to) in runs, with their new offsets. */
  const keepUpTo = (to: number) => {
    while (cursor < to) {
      while (cursor < to && removed[cursor] === 1) cursor++;
      const first = cursor;
      while (cursor < to && removed[cursor] !== 1) cursor++;
      if (cursor === first) continue;
      const from = t.offsets[first] as number;
      const shift = out - from;
      for (let i = first; i < cursor; i++) {
        buf.writeUInt32LE((t.offsets[i] as number) + shift, HEADER_BYTES + 4 * n++);
      }
      out += t.buf.copy(buf, out, from, t.offsets[cursor] as number);
    }
  };
  for (let j = 0; j < keys.length; j++) {
    const key = keys[j] as string;
    keepUpTo(tableLowerBound(t, key));
    const kb = encodedKeys[j] as Buffer;
    buf.writeUInt32LE(out, HEADER_BYTES + 4 * n++);
    buf.writeUInt32LE(kb.length, out);
    kb.copy(buf, out + 4);
    out = writeFixed(buf, out + 4 + kb.length, added.get(key) as CachedStat);
  }
  keepUpTo(t.count);
  buf.writeUInt32LE(out, HEADER_BYTES + 4 * n);
  buf.writeUInt32LE(trailer.length, out);
  trailer.copy(buf, out + 4);
  // One pass over the new bytes (~0.3 ms per MB, a 10k-file cache is ~1 MB): the spliced file
  // is checked as a whole, like one encoded anew.
  return seal(buf);
}

/** Write the cache atomically. Not fsynced: a cache lost to a power cut only costs a re-hash. */
export function writeStatCache(path: string, cache: StatCache): void {
  writeFileAtomic(path, encodeStatCache(cache), { durable: false });
}

/** Drop the entries whose content id is in `oids` (after gc removed those objects). */
export function pruneStatCache(path: string, oids: ReadonlySet<string>): number {
  // Usually none of them is in the cache (gc removes old versions; the cache holds the current
  // ones): look at the raw ids first, and decode and rewrite only on a hit.
  if (!referencesAny(path, oids)) return 0;
  const cache = readStatCache(path);
  let dropped = 0;
  for (const [key, c] of cache.entries) {
    if (oids.has(c.oid)) {
      cache.entries.delete(key);
      dropped++;
    }
  }
  if (dropped > 0) {
    // No longer a complete index: the next scan walks the tree instead of trusting a change list.
    delete cache.index;
    writeStatCache(path, cache);
  }
  return dropped;
}
