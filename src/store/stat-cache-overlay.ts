import { crc32 } from "node:zlib";
import type { ManifestEntry } from "./manifest.ts";
import type { CachedStat, ScanIndex, StatCache } from "./stat-cache.ts";
import { byCodeUnits, HEADER_BYTES, HEADER_CRC_AT, hex8 } from "./stat-cache-format.ts";
import { tableWithChanges } from "./stat-cache-table.ts";

/**
 * The stat cache's overlay (`stat-cache.bin.overlay`), git's split index: the entries that
 * changed since the base was written (a file's new stat data, or null: gone), the whole rest of
 * the latest scan's state (scan start, watch token, skipped, hard links, the manifest file, the
 * racy keys, the counts) and the id of the base it applies to. An update rewrites only this
 * small file; when it passes a tenth of the base or 2,048 entries (`shouldFold`), the two are
 * folded into a new base. It ends with the CRC-32 of its text. An overlay naming another base (a fold killed
 * between writing the base and removing the overlay) is ignored: the base holds it already.
 */
export interface Overlay {
  base: string;
  scanStartMs: number;
  watchToken?: string;
  plain: boolean;
  files: Map<string, CachedStat | null>;
  others: Map<string, ManifestEntry | null>;
  index: Omit<ScanIndex, "others">;
  racy: string[];
  counts: OverlayCounts;
}

export interface OverlayCounts {
  files: number;
  dirs: number;
  symlinks: number;
  bytes: number;
}

const OVERLAY_HEAD = '{"stat_cache_overlay":1,';

/** A base file's id: its header's and its head's sums (the head holds every segment's sum). */
export function baseIdOf(firstBytes: Buffer): string {
  const headLen = firstBytes.readUInt32LE(HEADER_BYTES);
  return (
    hex8(firstBytes.readUInt32LE(HEADER_CRC_AT)) +
    hex8(firstBytes.readUInt32LE(HEADER_BYTES + 4 + headLen))
  );
}

type StatRow = [number, number, number, number, number, string];

export function encodeOverlay(o: Overlay): Buffer {
  const files: [string, StatRow | null][] = [];
  for (const [k, c] of o.files) {
    files.push([k, c === null ? null : [c.size, c.mtimeMs, c.ctimeMs, c.ino, c.mode, c.oid]]);
  }
  const body = JSON.stringify({
    base: o.base,
    scanStartMs: o.scanStartMs,
    watchToken: o.watchToken,
    plain: o.plain,
    files,
    others: [...o.others],
    index: o.index,
    racy: o.racy,
    counts: o.counts,
  });
  const text = Buffer.from(`${OVERLAY_HEAD}${body.slice(1)}`, "utf8");
  const out = Buffer.allocUnsafe(text.length + 4);
  text.copy(out);
  out.writeUInt32LE(crc32(text), text.length);
  return out;
}

/** An overlay's contents; a string saying what is wrong otherwise. */
export function decodeOverlay(buf: Buffer): Overlay | string {
  if (buf.length < OVERLAY_HEAD.length + 4) return "truncated";
  const text = buf.subarray(0, buf.length - 4);
  if (text.toString("utf8", 0, OVERLAY_HEAD.length) !== OVERLAY_HEAD) return "not an overlay";
  if (crc32(text) !== buf.readUInt32LE(buf.length - 4)) return "its checksum does not match";
  let raw: {
    base: string;
    scanStartMs: number;
    watchToken?: string;
    plain: boolean;
    files: [string, StatRow | null][];
    others: [string, ManifestEntry | null][];
    index: Omit<ScanIndex, "others">;
    racy: string[];
    counts: OverlayCounts;
  };
  try {
    raw = JSON.parse(text.toString("utf8"));
  } catch {
    return "it does not parse";
  }
  if (!Array.isArray(raw.files) || !Array.isArray(raw.others) || !Array.isArray(raw.racy)) {
    return "its lists are missing";
  }
  const files = new Map<string, CachedStat | null>();
  for (const [k, r] of raw.files) {
    files.set(
      k,
      r === null
        ? null
        : { size: r[0], mtimeMs: r[1], ctimeMs: r[2], ino: r[3], mode: r[4], oid: r[5] },
    );
  }
  const { watchToken, ...rest } = raw;
  return {
    ...rest,
    ...(watchToken === undefined ? {} : { watchToken }),
    files,
    others: new Map(raw.others),
  };
}

/**
 * At most this many entries, whatever the base's size: every delta snapshot decodes and
 * rewrites the whole overlay and scans it once per revisited path, so a tenth of a 100k-file
 * base (~13,000 entries, 1.7 MiB) cost ~15 ms each way plus a scan of all of it per path; a
 * fold (the base written whole) every ~50–100 snapshots costs less (issue 22, item 1).
 */
const OVERLAY_MAX_ENTRIES = 2048;

/**
 * Fold when the overlay holds more entries than a tenth of the base (and a few hundred), or
 * than `OVERLAY_MAX_ENTRIES`.
 */
export function shouldFold(o: Overlay, baseEntries: number): boolean {
  return o.files.size + o.others.size > Math.min(256 + baseEntries / 10, OVERLAY_MAX_ENTRIES);
}

/** The base's cache with the overlay applied (a new cache; the base's is left as it was). */
export function applyOverlay(cache: StatCache, o: Overlay): StatCache {
  // Entries come in key order, as from a base alone.
  const entries = tableWithChanges(cache.entries, o.files);
  const others = new Map<string, ManifestEntry>();
  for (const e of cache.index?.others ?? []) others.set(e.path, e);
  for (const [p, e] of o.others) {
    if (e === null) others.delete(p);
    else others.set(p, e);
  }
  const sorted = [...others.values()].sort((a, b) => byCodeUnits(a.path, b.path));
  const out: StatCache = { scanStartMs: o.scanStartMs, entries };
  out.index = { ...o.index, others: sorted };
  if (o.watchToken !== undefined) out.watchToken = o.watchToken;
  return out;
}
