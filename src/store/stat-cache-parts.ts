import { closeSync, fstatSync, openSync, readFileSync } from "node:fs";
import { crc32 } from "node:zlib";
import type { ManifestEntry } from "./manifest.ts";
import type { CachedStat, ScanIndex } from "./stat-cache.ts";
import {
  type BaseHead,
  byCodeUnits,
  decodeFileSegment,
  decodeOthersSegment,
  HEADER_BYTES,
  HEADER_CRC_AT,
  hex8,
  parseHead,
  parseHeader,
  readAt,
  type SegmentRef,
} from "./stat-cache-format.ts";
import { decodeOverlay, type Overlay } from "./stat-cache-overlay.ts";

/**
 * The stat cache opened for an update that revisits a few paths (`openStatCacheParts`): the
 * header, the head and the overlay are read (a few KiB to a few hundred), and a segment of the
 * base only when a path it holds is asked for, checked against its sum when it is read. What
 * it answers is the base with the overlay applied.
 */
export interface StatCacheParts {
  scanStartMs: number;
  watchToken?: string;
  /** Every key and path is plain UTF-8 (no byte names, no U+FFFD). */
  plain: boolean;
  files: number;
  dirs: number;
  symlinks: number;
  bytes: number;
  index?: Omit<ScanIndex, "others">;
  racy: string[];
  /** The base's id and entry count, and its overlay (null: none yet). */
  baseId: string;
  baseEntries: number;
  overlay: Overlay | null;
  /** The file entries at `path` and below it. */
  filesAt(path: string): Map<string, CachedStat>;
  /** The directories and symlinks at `path` and below it, in path order. */
  othersAt(path: string): ManifestEntry[];
  /** The directory or symlink at exactly `path`. */
  otherAt(path: string): ManifestEntry | undefined;
  close(): void;
}

/** A segment that does not match its sum: the cache must be discarded. */
export class DamagedCache extends Error {}

/** Where a cache's overlay lies. */
export const overlayPathOf = (path: string) => `${path}.overlay`;

/**
 * Open the stat cache at `path` by parts. Null when it is absent or of another format;
 * `DamagedCache` when its header or head does not match its sum (or a segment, later).
 */
export function openStatCacheParts(path: string): StatCacheParts | null {
  let fd: number;
  try {
    fd = openSync(path, "r");
  } catch {
    return null;
  }
  try {
    return partsOf(path, fd);
  } catch (error) {
    closeSync(fd);
    throw error;
  }
}

/**
 * The last head this process read and checked, with the identity of the file it lay in: at
 * 100k files the head is ~100 KiB of JSON (a line per segment), which a delta snapshot read,
 * summed and parsed each time (~2-3 ms) though a base changes only at a fold (issue 22, item 1).
 * It is used again only for the same file (device, inode, size, change times) whose header and
 * head sums are still the ones it was read with; callers never change it (it is frozen).
 */
let lastHead: { key: string; baseId: string; head: BaseHead; end: number } | undefined;

/** How many heads this process parsed (for the test that holds the memo to its file). */
export const headParses = { count: 0 };

function partsOf(path: string, fd: number): StatCacheParts | null {
  let first = readAt(fd, 0, 64 * 1024);
  const header = parseHeader(first);
  if (typeof header === "string") {
    closeSync(fd);
    if (header === "of another format version") return null;
    throw new DamagedCache(header);
  }
  const headLen = first.length >= HEADER_BYTES + 4 ? first.readUInt32LE(HEADER_BYTES) : 0;
  const headEnd = HEADER_BYTES + 8 + headLen;
  const st = fstatSync(fd);
  const key = `${path}|${st.dev}|${st.ino}|${st.size}|${st.mtimeMs}|${st.ctimeMs}`;
  const sumAt = readAt(fd, headEnd - 4, 4);
  const headSum = sumAt.length === 4 ? sumAt.readUInt32LE(0) : -1;
  const idNow = hex8(first.readUInt32LE(HEADER_CRC_AT)) + hex8(headSum >>> 0);
  let memo = lastHead?.key === key && lastHead.baseId === idNow ? lastHead : undefined;
  if (memo === undefined) {
    if (headEnd > first.length) first = readAt(fd, 0, headEnd);
    const parsed = parseHead(first, first.length);
    if (typeof parsed === "string") throw new DamagedCache(parsed);
    headParses.count++;
    freezeHead(parsed.head);
    memo = { key, baseId: idNow, head: parsed.head, end: parsed.end };
    lastHead = memo;
  }
  const { head, end, baseId } = memo;
  const overlay = readOverlay(overlayPathOf(path), baseId);
  const segments = segmentReader(fd, end);
  const near = overlayRanges(overlay);
  const o = overlay;
  return {
    scanStartMs: o?.scanStartMs ?? header.scanStartMs,
    ...((o === null ? header.watchToken : o.watchToken) === undefined
      ? {}
      : { watchToken: (o === null ? header.watchToken : o.watchToken) as string }),
    plain: o?.plain ?? header.plain,
    files: o?.counts.files ?? header.files,
    dirs: o?.counts.dirs ?? head.dirs,
    symlinks: o?.counts.symlinks ?? head.symlinks,
    bytes: o?.counts.bytes ?? header.bytes,
    ...((o?.index ?? head.index) === undefined ? {} : { index: o?.index ?? head.index }),
    racy: o?.racy ?? head.racy,
    baseId,
    baseEntries: header.files + head.dirs + head.symlinks,
    overlay,
    filesAt: (p) => filesAt(head, segments, near, p),
    othersAt: (p) => othersAt(head, segments, near, p),
    otherAt: (p) => {
      const own = overlay?.others.get(p);
      if (own !== undefined) return own ?? undefined;
      return inRange(head.others, p, `${p}\0`, (r) => segments.others(r)).find((e) => e.path === p);
    },
    close: () => closeSync(fd),
  };
}

function freezeHead(head: BaseHead): void {
  Object.freeze(head.files);
  Object.freeze(head.others);
  Object.freeze(head.racy);
  if (head.index !== undefined) Object.freeze(head.index);
  Object.freeze(head);
}

/** The overlay at `file` when it applies to base `baseId`; null when absent or for another. */
function readOverlay(file: string, baseId: string): Overlay | null {
  let buf: Buffer;
  try {
    buf = readFileSync(file);
  } catch {
    return null;
  }
  const o = decodeOverlay(buf);
  if (typeof o === "string") throw new DamagedCache(`its overlay: ${o}`);
  return o.base === baseId ? o : null;
}

/** Reads segments once each, checked against their sums. */
function segmentReader(fd: number, start: number) {
  const files = new Map<number, { key: string; stat: CachedStat }[]>();
  const others = new Map<number, ManifestEntry[]>();
  const bytesOf = (r: SegmentRef): Buffer => {
    const buf = readAt(fd, start + r[1], r[2]);
    if (buf.length !== r[2] || crc32(buf) !== r[4]) {
      throw new DamagedCache(`a segment at ${start + r[1]} does not match its checksum`);
    }
    return buf;
  };
  return {
    files(r: SegmentRef) {
      let run = files.get(r[1]);
      if (run === undefined) {
        const decoded = decodeFileSegment(bytesOf(r), r[3]);
        if (decoded === null) throw new DamagedCache("a file segment does not add up");
        run = decoded;
        files.set(r[1], run);
      }
      return run;
    },
    others(r: SegmentRef) {
      let run = others.get(r[1]);
      if (run === undefined) {
        const decoded = decodeOthersSegment(bytesOf(r), r[3]);
        if (decoded === null) throw new DamagedCache("a directory segment does not add up");
        run = decoded;
        others.set(r[1], run);
      }
      return run;
    },
  };
}

/** The items of the segments that may hold keys in [lo, hi). */
function inRange<T>(
  refs: readonly SegmentRef[],
  lo: string,
  hi: string,
  read: (r: SegmentRef) => T[],
): T[] {
  // The last segment whose first key is not above `lo`, then every one that starts below `hi`.
  let a = 0;
  let b = refs.length;
  while (a < b) {
    const mid = (a + b) >>> 1;
    if ((refs[mid] as SegmentRef)[0] <= lo) a = mid + 1;
    else b = mid;
  }
  const out: T[] = [];
  for (let i = Math.max(0, a - 1); i < refs.length && (refs[i] as SegmentRef)[0] < hi; i++) {
    for (const item of read(refs[i] as SegmentRef)) out.push(item);
  }
  return out;
}

const isAtOrBelow = (key: string, p: string) =>
  key === p || (key.length > p.length && key.charCodeAt(p.length) === 47 && key.startsWith(p));

/**
 * The overlay's entries at and below a path, found by binary search over its keys in code-unit
 * order (sorted once, when first asked): a delta snapshot asks for each revisited path, and a
 * scan of the whole overlay per path (up to 2,048 entries at 100k files) cost more than the
 * segments it reads (issue 22, item 1).
 */
function overlayRanges(overlay: Overlay | null) {
  let fileKeys: string[] | undefined;
  let otherKeys: string[] | undefined;
  return {
    files(p: string): [string, CachedStat | null][] {
      if (overlay === null) return [];
      fileKeys ??= [...overlay.files.keys()].sort(byCodeUnits);
      return keysAtOrBelow(fileKeys, p).map((k) => [k, overlay.files.get(k) as CachedStat | null]);
    },
    others(p: string): [string, ManifestEntry | null][] {
      if (overlay === null) return [];
      otherKeys ??= [...overlay.others.keys()].sort(byCodeUnits);
      return keysAtOrBelow(otherKeys, p).map((k) => [
        k,
        overlay.others.get(k) as ManifestEntry | null,
      ]);
    },
  };
}

/** The keys of `sorted` (code-unit order) at or below `p`: all lie in [p, p + "0"), "/" < "0". */
function keysAtOrBelow(sorted: readonly string[], p: string): string[] {
  let a = 0;
  let b = sorted.length;
  while (a < b) {
    const mid = (a + b) >>> 1;
    if ((sorted[mid] as string) < p) a = mid + 1;
    else b = mid;
  }
  const hi = `${p}0`;
  const out: string[] = [];
  for (let i = a; i < sorted.length && (sorted[i] as string) < hi; i++) {
    if (isAtOrBelow(sorted[i] as string, p)) out.push(sorted[i] as string);
  }
  return out;
}

function filesAt(
  head: BaseHead,
  segments: ReturnType<typeof segmentReader>,
  near: ReturnType<typeof overlayRanges>,
  p: string,
): Map<string, CachedStat> {
  const out = new Map<string, CachedStat>();
  const take = (lo: string, hi: string) => {
    for (const { key, stat } of inRange(head.files, lo, hi, (r) => segments.files(r))) {
      if (isAtOrBelow(key, p)) out.set(key, stat);
    }
  };
  take(p, `${p}\0`);
  take(`${p}/`, `${p}0`);
  for (const [k, c] of near.files(p)) {
    if (c === null) out.delete(k);
    else out.set(k, c);
  }
  return out;
}

function othersAt(
  head: BaseHead,
  segments: ReturnType<typeof segmentReader>,
  near: ReturnType<typeof overlayRanges>,
  p: string,
): ManifestEntry[] {
  const found = new Map<string, ManifestEntry>();
  const take = (lo: string, hi: string) => {
    for (const e of inRange(head.others, lo, hi, (r) => segments.others(r))) {
      if (isAtOrBelow(e.path, p)) found.set(e.path, e);
    }
  };
  // A path the base holds as a file has no directory or symlink at or below it there: the
  // base's directory segments (JSON, the costlier kind) are not read for it.
  const baseFile = inRange(head.files, p, `${p}\0`, (r) => segments.files(r)).some(
    (f) => f.key === p,
  );
  if (!baseFile) {
    take(p, `${p}\0`);
    take(`${p}/`, `${p}0`);
  }
  for (const [k, e] of near.others(p)) {
    if (e === null) found.delete(k);
    else found.set(k, e);
  }
  return [...found.values()];
}
