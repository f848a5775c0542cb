import { readFileSync, statSync, unlinkSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { crc32 } from "node:zlib";
import { appendEvent, DATA_DIR, faultPoint, systemClock, writeFileAtomic } from "../core/index.ts";
import type { ManifestEntry } from "./manifest.ts";
import type { SkippedPath } from "./scan-workspace.ts";
import {
  decodeBase,
  encodeBase,
  encodeBaseParts,
  OTHER_VERSION,
  readWhole,
} from "./stat-cache-format.ts";
import {
  applyOverlay,
  baseIdOf,
  decodeOverlay,
  encodeOverlay,
  type Overlay,
  shouldFold,
} from "./stat-cache-overlay.ts";
import {
  DamagedCache,
  openStatCacheParts,
  overlayPathOf,
  type StatCacheParts,
} from "./stat-cache-parts.ts";
import type { StatEntries } from "./stat-cache-table.ts";

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
  /** Per file key (its path, or `\0b64:` and its bytes in base64), in columns when many. */
  entries: StatEntries;
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

/**
 * Read a stat cache; null when it is absent, torn, corrupt or of another format. The cache is a
 * base file in segments (`stat-cache-format.ts`) and, after delta snapshots, an overlay of the
 * entries changed since (`stat-cache-overlay.ts`, git's split index); what it says is the base
 * with the overlay applied. A base or overlay whose sums do not match is discarded
 * (`discardCache`): a cache that is wrong would make a snapshot record one file with another's
 * bytes (issue 16), while a lost one only costs a full re-hash.
 */
export function loadStatCache(path: string): StatCache | null {
  const read = readCacheFile(path);
  if ("cache" in read) return read.cache;
  discardCache(
    path,
    read.overlay ? "its overlay does not match its checksum" : read.problem,
    read.ino,
  );
  return null;
}

/**
 * The stat cache at `path`, its base with its overlay applied (null: absent or of another
 * format version), or what is wrong with it (`overlay`: its overlay's checksum failed), and the
 * base file's inode. Nothing is discarded here.
 */
function readCacheFile(
  path: string,
): { cache: StatCache | null } | { problem: string; overlay: boolean; ino: number } {
  const whole = readWhole(path);
  if (whole === null) return { cache: null };
  const base = decodeBase(whole.buf);
  if (base === OTHER_VERSION) return { cache: null };
  if (typeof base === "string") return { problem: base, overlay: false, ino: whole.ino };
  const overlay = readOverlayFor(path, baseIdOf(whole.buf));
  if (overlay === "damaged") {
    return { problem: "its checksum does not match", overlay: true, ino: whole.ino };
  }
  return { cache: overlay === null ? base : applyOverlay(base, overlay) };
}

/** The overlay of the cache at `path` when it applies to base `baseId` ("damaged": discard). */
function readOverlayFor(path: string, baseId: string): Overlay | null | "damaged" {
  let buf: Buffer;
  try {
    buf = readFileSync(overlayPathOf(path));
  } catch {
    return null;
  }
  const o = decodeOverlay(buf);
  if (typeof o === "string") return "damaged";
  return o.base === baseId ? o : null;
}

/**
 * The entries of `keys` in the stat cache at `path`, found by reading only the segments that
 * may hold them. Null when the cache is absent, torn or of another format. For a hook that
 * needs a handful of entries out of 10k; `under`: the directories asked about that hold a file.
 */
export function lookupStatCache(
  path: string,
  keys: Iterable<string>,
  options: { under?: Iterable<string> } = {},
): { scanStartMs: number; found: Map<string, CachedStat>; under: Set<string> } | null {
  const parts = openParts(path);
  if (parts === null) return null;
  try {
    const found = new Map<string, CachedStat>();
    for (const key of keys) {
      const c = parts.filesAt(key).get(key);
      if (c !== undefined) found.set(key, c);
    }
    const under = new Set<string>();
    for (const p of options.under ?? []) {
      for (const k of parts.filesAt(p).keys()) {
        if (k !== p) {
          under.add(p);
          break;
        }
      }
    }
    return { scanStartMs: parts.scanStartMs, found, under };
  } catch (error) {
    if (!(error instanceof DamagedCache)) throw error;
    discardStatCache(path, error.message);
    return null;
  } finally {
    parts.close();
  }
}

/**
 * The stat cache at `path` opened by parts (`StatCacheParts`); null when absent, of another
 * format, or damaged (then discarded).
 */
export function openParts(path: string): StatCacheParts | null {
  try {
    return openStatCacheParts(path);
  } catch (error) {
    if (!(error instanceof DamagedCache)) throw error;
    discardStatCache(path, error.message);
    return null;
  }
}

/**
 * Drop a cache (base and overlay) that failed a check, and say so (`cache.discarded`). For a
 * reader of parts, which cannot know the inode it read is still the file: a lost race costs a
 * re-hash, never a wrong answer.
 */
export function discardStatCache(path: string, reason: string): void {
  let ino: number;
  try {
    ino = statSync(path).ino;
  } catch {
    return;
  }
  discardCache(path, reason, ino);
}

/**
 * Drop a cache that failed its check, and say so on the event bus (`cache.discarded`) of the
 * workspace it lies in: the next scan re-hashes every file instead of trusting it. Readers may
 * run without the workspace lock; the file is removed only while it is still the one read (a
 * writer's fresh cache renamed in meanwhile stays; a lost race costs a re-hash, never a wrong
 * answer). The overlay goes with its base.
 */
function discardCache(path: string, reason: string, ino: number): void {
  try {
    if (statSync(path).ino === ino) {
      unlinkSync(path);
      removeOverlay(path);
    }
  } catch {
    // gone already
  }
  reportDiscarded(path, reason);
}

function removeOverlay(path: string): void {
  try {
    unlinkSync(overlayPathOf(path));
  } catch {
    // none
  }
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
 * fsck's read of the stat cache at `path`: what is wrong with it (its sums, its structure, its
 * overlay), or what it says (null: absent or of another format version). It is only looked at:
 * a damaged cache is reported, not discarded. One decode serves both questions: at 100k files
 * a second one cost fsck ~20 MiB of peak (issue 22, item 5).
 */
export function examineStatCache(path: string): { problem: string } | { cache: StatCache | null } {
  const read = readCacheFile(path);
  if ("cache" in read) return read;
  return {
    problem: read.overlay ? `${basename(overlayPathOf(path))}: ${read.problem}` : read.problem,
  };
}

/** What a stat cache's header says, read without decoding its entries. */
export interface StatCacheHeader {
  scanStartMs: number;
  /** Files in the cache. */
  files: number;
  watchToken?: string;
}

/**
 * The header of the stat cache at `path` (with its overlay's, when one applies), or null when
 * absent or of another format. With the watch token it answers "has anything changed since?"
 * without loading the cache: the common case of a hook around a shell command that wrote nothing.
 */
export function peekStatCache(path: string): StatCacheHeader | null {
  let parts: StatCacheParts | null;
  try {
    parts = openStatCacheParts(path);
  } catch {
    // A damaged cache is left for the next full read to discard: a peek only declines to use it.
    return null;
  }
  if (parts === null) return null;
  parts.close();
  return {
    scanStartMs: parts.scanStartMs,
    files: parts.files,
    ...(parts.watchToken === undefined ? {} : { watchToken: parts.watchToken }),
  };
}

/**
 * Read the stat cache at `path`. A missing, torn or foreign cache is an empty cache: the only
 * cost of losing it is one full re-hash, so it never fails a snapshot.
 */
export function readStatCache(path: string): StatCache {
  return loadStatCache(path) ?? emptyStatCache();
}

/** The bytes of a whole cache file (a base with no overlay; see `loadStatCache`). */
export function encodeStatCache(cache: StatCache): Buffer {
  return encodeBase(cache);
}

/**
 * Write the cache atomically, as a new base; then its old overlay goes (a kill between the two
 * leaves an overlay naming another base, which is ignored). Not fsynced: a cache lost to a
 * power cut only costs a re-hash.
 */
export function writeStatCache(path: string, cache: StatCache): void {
  writeFileAtomic(path, encodeBaseParts(cache), { durable: false });
  faultPoint("stat-cache:base-written");
  removeOverlay(path);
}

/**
 * Record an update of the cache opened as `parts`: the overlay grows by `changes` (and takes
 * the scan's state) and is written alone, or, past a tenth of the base, both are folded into a
 * new base. Only the overlay's file is rewritten in the common case: a few KiB at any size.
 */
export function writeStatCacheUpdate(
  path: string,
  parts: StatCacheParts,
  next: Omit<Overlay, "base" | "files" | "others"> & {
    files: ReadonlyMap<string, CachedStat | null>;
    others: ReadonlyMap<string, ManifestEntry | null>;
  },
): void {
  const files = new Map(parts.overlay?.files ?? []);
  for (const [k, c] of next.files) files.set(k, c);
  const others = new Map(parts.overlay?.others ?? []);
  for (const [k, e] of next.others) others.set(k, e);
  const overlay: Overlay = { ...next, base: parts.baseId, files, others };
  if (!shouldFold(overlay, parts.baseEntries)) {
    faultPoint("stat-cache:overlay");
    writeFileAtomic(overlayPathOf(path), encodeOverlay(overlay), { durable: false });
    return;
  }
  const whole = readWhole(path);
  const base = whole === null ? null : decodeBase(whole.buf);
  if (whole === null || typeof base !== "object" || baseIdOf(whole.buf) !== parts.baseId) {
    // The base went or changed under us (it is read again only here): no cache is better
    // than a wrong one.
    discardStatCache(path, "its base changed during an update");
    return;
  }
  writeStatCache(path, applyOverlay(base as StatCache, overlay));
}

/** Drop the entries whose content id is in `oids` (after gc removed those objects). */
export function pruneStatCache(path: string, oids: ReadonlySet<string>): number {
  const cache = loadStatCache(path);
  if (cache === null) return 0;
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
