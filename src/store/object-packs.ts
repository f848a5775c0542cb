import { createHash } from "node:crypto";
import {
  closeSync,
  fstatSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  readSync,
  renameSync,
  statSync,
  unlinkSync,
  writeSync,
} from "node:fs";
import { dirname, join } from "node:path";
import { brotliDecompressSync } from "node:zlib";
import {
  ErrorCode,
  errnoCode,
  fromSystemError,
  fsyncDirectory,
  isTempName,
  TimewarpError,
  tempPathFor,
  writeFileAtomic,
} from "../core/index.ts";
import { applyGitDelta } from "../diff/index.ts";
import { ownedBytes } from "./owned-bytes.ts";

/**
 * Packs: many objects in one file, written once (temp + rename) and never changed.
 *
 * Version 1, written by a snapshot's batch writer (`writePack`): one loose object is one inode,
 * and on ext4 creating one costs ~150 µs of journal time, which made a 10k-file first snapshot
 * as slow as git's. Format: "TWPK", version 1 (u32), object count (u32), 4 bytes of padding;
 * one 36-byte index entry per object sorted by raw id (id, data offset as f64, size as f64);
 * then the objects' bytes, raw like loose objects.
 *
 * Version 2, written by gc (`createPackWriter`, `repack.ts`): compressed entries, some of them
 * deltas. "TWPK", version 2, count, padding, then the index's offset (f64); the entries from
 * byte 24; the index at the end (written last, so entries stream out as they are made): one
 * 36-byte entry per object sorted by raw id (id, entry offset as f64, entry length as u32, the
 * object's size as u32). An entry is a flags byte (low bits: the codec of the payload, 0 raw,
 * 1 brotli; 0x80: a delta), for a delta its chain depth (u8) and its base's raw id (20 bytes,
 * in the same pack), then the payload: the object's bytes, or git's copy/insert delta that
 * makes them from the base's.
 *
 * Only the header and index are read to find an object; an object is read with one open.
 */

export const PACK_DIR = "pack";
const MAGIC = Buffer.from("TWPK");
const VERSION_RAW = 1;
const VERSION_PACKED = 2;
/** The in-memory index always starts with 16 header bytes, whatever the file's version. */
const HEADER = 16;
const HEADER_V2 = 24;
const ENTRY = 36;
/** Fewer objects than this are written loose: a pack per small snapshot would only add lookups. */
export const MIN_PACK_OBJECTS = 64;
/** Entry flags (version 2). */
export const CODEC_RAW = 0;
export const CODEC_BROTLI = 1;
export const DELTA_FLAG = 0x80;
/** A delta chain longer than this is damage (gc keeps chains far shorter): never followed. */
const MAX_CHAIN = 64;

export interface Pack {
  file: string;
  version: 1 | 2;
  /** Header and index (a version-2 index is read from the end of the file). */
  index: Buffer;
  count: number;
  /** Per first id byte, where its entries begin (git's idx fan-out): a miss costs ~6 compares. */
  fanout: Uint32Array;
  /** Objects resolved lately, by entry offset (git's delta base cache; `remember`). */
  bases: Map<number, Buffer>;
  /** Their bytes. */
  cached: number;
}

/** Where an object lies in its pack. */
export interface PackSlot {
  offset: number;
  /** Bytes of its entry in the file (version 1: its size). */
  stored: number;
  /** The object's own size. */
  size: number;
}

function fanoutOf(index: Buffer, count: number): Uint32Array {
  const fanout = new Uint32Array(257);
  for (let i = 0; i < count; i++) {
    const b = (index[HEADER + i * ENTRY] as number) + 1;
    fanout[b] = (fanout[b] as number) + 1;
  }
  for (let b = 1; b <= 256; b++) fanout[b] = (fanout[b] as number) + (fanout[b - 1] as number);
  return fanout;
}

function slotAt(pack: Pack, i: number): PackSlot {
  const at = HEADER + i * ENTRY;
  const offset = pack.index.readDoubleLE(at + 20);
  if (pack.version === VERSION_RAW) {
    const size = pack.index.readDoubleLE(at + 28);
    return { offset, stored: size, size };
  }
  return {
    offset,
    stored: pack.index.readUInt32LE(at + 28),
    size: pack.index.readUInt32LE(at + 32),
  };
}

/** The packs in the store at `dir` (header and index read; a torn or foreign file is skipped). */
export function loadPacks(dir: string): Pack[] {
  const packDir = join(dir, PACK_DIR);
  let names: string[];
  try {
    names = readdirSync(packDir);
  } catch (error) {
    if (errnoCode(error) === "ENOENT") return [];
    throw fromSystemError(error, `listing ${packDir}`);
  }
  const packs: Pack[] = [];
  const listed = new Set<string>();
  for (const name of names.sort()) {
    if (!name.endsWith(".twpack") || isTempName(name)) continue;
    const file = join(packDir, name);
    listed.add(file);
    const pack = openKnownPack(file);
    if (pack !== null) packs.push(pack);
  }
  for (const [file, known] of openedPacks) {
    if (known.dir === packDir && !listed.has(file)) openedPacks.delete(file);
  }
  return packs;
}

/**
 * The packs this process opened, by file, with the identity of the file: a pack is never
 * changed once renamed in, so a store opened again (each snapshot opens one) takes them as they
 * were instead of reading and checking every index again (at 100k files ~100k entries, ~3 ms
 * per snapshot: issue 22, item 1). A pack gone from its directory's listing is forgotten.
 */
const openedPacks = new Map<string, { dir: string; key: string; pack: Pack }>();

function openKnownPack(file: string): Pack | null {
  const st = statSync(file, { throwIfNoEntry: false });
  if (st === undefined) return null;
  const key = `${st.dev}|${st.ino}|${st.size}|${st.mtimeMs}`;
  const known = openedPacks.get(file);
  if (known?.key === key) return known.pack;
  const pack = openPack(file);
  if (pack === null) openedPacks.delete(file);
  else openedPacks.set(file, { dir: dirname(file), key, pack });
  return pack;
}

function readExactly(
  fd: number,
  into: Buffer,
  at: number,
  length: number,
  position: number,
): boolean {
  let done = 0;
  while (done < length) {
    const n = readSync(fd, into, at + done, length - done, position + done);
    if (n === 0) return false;
    done += n;
  }
  return true;
}

function openPack(file: string): Pack | null {
  let fd: number;
  try {
    fd = openSync(file, "r");
  } catch {
    return null;
  }
  try {
    const head = Buffer.alloc(HEADER_V2);
    if (!readExactly(fd, head, 0, HEADER, 0) || !head.subarray(0, 4).equals(MAGIC)) return null;
    const version = head.readUInt32LE(4);
    const count = head.readUInt32LE(8);
    const size = fstatSync(fd).size;
    const index = Buffer.alloc(HEADER + count * ENTRY);
    head.copy(index, 0, 0, HEADER);
    if (version === VERSION_RAW) {
      if (!readExactly(fd, index, HEADER, count * ENTRY, HEADER)) return null;
    } else if (version === VERSION_PACKED) {
      if (!readExactly(fd, head, HEADER, HEADER_V2 - HEADER, HEADER)) return null;
      const indexAt = head.readDoubleLE(HEADER);
      // The index ends the file: a torn pack never gets renamed in, a damaged one is not read.
      if (indexAt + count * ENTRY !== size) return null;
      if (!readExactly(fd, index, HEADER, count * ENTRY, indexAt)) return null;
    } else {
      return null;
    }
    const pack: Pack = {
      file,
      version,
      index,
      count,
      fanout: fanoutOf(index, count),
      bases: new Map(),
      cached: 0,
    };
    // No entry may reach past its data (a version-1 pack's last object ends the file).
    const dataEnd = version === VERSION_RAW ? size : size - count * ENTRY;
    let end = version === VERSION_RAW ? HEADER + count * ENTRY : HEADER_V2;
    for (let i = 0; i < count; i++) {
      const slot = slotAt(pack, i);
      end = Math.max(end, slot.offset + slot.stored);
    }
    if (version === VERSION_RAW ? count > 0 && end !== dataEnd : end > dataEnd) return null;
    return pack;
  } finally {
    closeSync(fd);
  }
}

/** Where object `raw` (its 20-byte id) lies in `pack`, or null. */
export function findInPack(pack: Pack, raw: Uint8Array): PackSlot | null {
  const first = raw[0] as number;
  let lo = pack.fanout[first] as number;
  let hi = (pack.fanout[first + 1] as number) - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const at = HEADER + mid * ENTRY;
    // The entry's id against the one sought: below it, look right.
    const c = pack.index.compare(raw, 0, 20, at, at + 20);
    if (c === 0) return slotAt(pack, mid);
    if (c < 0) lo = mid + 1;
    else hi = mid - 1;
  }
  return null;
}

/**
 * Every object id in `pack`, as hex, with where it lies: in the order of the file, which for a
 * repacked one puts similar objects, bases first, side by side (a read in this order finds its
 * delta bases cached).
 */
export function packSlots(pack: Pack): Array<{ oid: string; slot: PackSlot }> {
  const out: Array<{ oid: string; slot: PackSlot }> = [];
  for (let i = 0; i < pack.count; i++) {
    const at = HEADER + i * ENTRY;
    out.push({ oid: pack.index.toString("hex", at, at + 20), slot: slotAt(pack, i) });
  }
  return out.sort((a, b) => a.slot.offset - b.slot.offset);
}

/** Every object id in `pack`, as hex, in the order of the file. */
export function packIds(pack: Pack): string[] {
  return packSlots(pack).map((s) => s.oid);
}

function corrupt(pack: Pack, slot: PackSlot, why: string, cause?: unknown): TimewarpError {
  return new TimewarpError(
    ErrorCode.OBJECT_CORRUPT,
    `${pack.file}: the entry at ${slot.offset} ${why}`,
    {
      data: { file: pack.file, offset: slot.offset },
      ...(cause === undefined ? {} : { cause }),
    },
  );
}

/** The stored bytes of an entry (for a version-2 pack: flags, base and payload, as written). */
export function readEntry(pack: Pack, slot: PackSlot, fd?: number): Buffer {
  const own = fd ?? openSync(pack.file, "r");
  try {
    const bytes = Buffer.allocUnsafe(slot.stored);
    if (!readExactly(own, bytes, 0, slot.stored, slot.offset))
      throw corrupt(pack, slot, "runs past the end of the file");
    return bytes;
  } finally {
    if (fd === undefined) closeSync(own);
  }
}

/** A version-2 entry's parts. */
export interface EntryHead {
  codec: number;
  /** The base's raw id, for a delta. */
  base: Buffer | null;
  depth: number;
  payload: Buffer;
}

export function parseEntry(entry: Buffer): EntryHead | null {
  const flags = entry[0];
  if (flags === undefined) return null;
  const codec = flags & 0x7f;
  if (codec !== CODEC_RAW && codec !== CODEC_BROTLI) return null;
  if ((flags & DELTA_FLAG) === 0)
    return { codec, base: null, depth: 0, payload: entry.subarray(1) };
  if (entry.length < 22) return null;
  return {
    codec,
    base: entry.subarray(2, 22),
    depth: entry[1] as number,
    payload: entry.subarray(22),
  };
}

/** The bytes of the object at `slot` in the pack: decompressed, its delta chain resolved. */
export function readFromPack(pack: Pack, slot: PackSlot): Buffer {
  if (pack.version === VERSION_PACKED) {
    const cached = pack.bases.get(slot.offset);
    if (cached !== undefined) return Buffer.from(cached);
  }
  const fd = openSync(pack.file, "r");
  try {
    const bytes = resolveEntry(pack, slot, fd, 0);
    return pack.version === VERSION_PACKED ? Buffer.from(bytes) : bytes;
  } finally {
    closeSync(fd);
  }
}

function resolveEntry(pack: Pack, slot: PackSlot, fd: number, chain: number): Buffer {
  const cached = pack.bases.get(slot.offset);
  if (cached !== undefined) {
    // most recently used last
    pack.bases.delete(slot.offset);
    pack.bases.set(slot.offset, cached);
    return cached;
  }
  const entry = readEntry(pack, slot, fd);
  if (pack.version === VERSION_RAW) return entry;
  const head = parseEntry(entry);
  if (head === null) throw corrupt(pack, slot, "has an unknown format");
  let data: Buffer;
  try {
    data = head.codec === CODEC_BROTLI ? brotliDecompressSync(head.payload) : head.payload;
  } catch (error) {
    throw corrupt(pack, slot, "does not decompress", error);
  }
  let bytes = data;
  if (head.base !== null) {
    const baseSlot = findInPack(pack, head.base);
    if (baseSlot === null || chain >= MAX_CHAIN) {
      throw corrupt(pack, slot, "names a delta base the pack lacks");
    }
    const base = resolveEntry(pack, baseSlot, fd, chain + 1);
    const made = applyGitDelta(base, data);
    if (!made.ok) throw corrupt(pack, slot, `is a delta that does not apply: ${made.reason}`);
    bytes = Buffer.from(made.result.buffer, made.result.byteOffset, made.result.byteLength);
  }
  if (bytes.length !== slot.size) {
    throw corrupt(pack, slot, `gives ${bytes.length} bytes, the index says ${slot.size}`);
  }
  remember(pack, slot.offset, bytes);
  return bytes;
}

/**
 * Objects of a pack resolved lately, by entry offset, least recently used first (git's delta
 * base cache): objects are written in name and size order with their bases before them, so a
 * read in that order, or of versions of one file, finds its chain here. A caller that keeps or
 * changes what it read gets a copy (`readFromPack`). 4 MiB per pack: fsck at 100k files read
 * all 28k objects of a repacked store in the same CPU time with 2, 4 or 16 MiB, and 16 held
 * ~32 MiB more resident for the rest of the process (the cache and the heap it pins), which
 * put it over 150 MiB (issue 22, item 5).
 */
const CACHE_BYTES = 4 * 1024 * 1024;
const CACHE_MAX_OBJECT = 1024 * 1024;

function remember(pack: Pack, offset: number, bytes: Buffer): void {
  if (bytes.length > CACHE_MAX_OBJECT) return;
  // (a small object decompressed is a view into brotli's output chunk: the cache counts bytes)
  pack.bases.set(offset, ownedBytes(bytes));
  pack.cached += bytes.length;
  for (const [at, old] of pack.bases) {
    if (pack.cached <= CACHE_BYTES) break;
    pack.bases.delete(at);
    pack.cached -= old.length;
  }
}

/**
 * Empty the object caches of every pack this process opened (a long-lived process, the hook
 * server's worker, calls it after each request: 4 MiB per pack would otherwise stay resident
 * for a hit the next request rarely has). The packs' indexes stay.
 */
export function forgetPackBases(): void {
  for (const { pack } of openedPacks.values()) {
    pack.bases.clear();
    pack.cached = 0;
  }
}

/**
 * Write `objects` (id → bytes) as one new version-1 pack in the store at `dir`; returns it.
 */
export function writePack(dir: string, objects: ReadonlyMap<string, Uint8Array>): Pack {
  const ids = [...objects.keys()].sort();
  const indexBytes = HEADER + ids.length * ENTRY;
  const index = Buffer.alloc(indexBytes);
  MAGIC.copy(index, 0);
  index.writeUInt32LE(VERSION_RAW, 4);
  index.writeUInt32LE(ids.length, 8);
  let offset = indexBytes;
  for (let i = 0; i < ids.length; i++) {
    const id = ids[i] as string;
    const size = (objects.get(id) as Uint8Array).length;
    const at = HEADER + i * ENTRY;
    index.write(id, at, 20, "hex");
    index.writeDoubleLE(offset, at + 20);
    index.writeDoubleLE(size, at + 28);
    offset += size;
  }
  const name = createHash("sha1").update(index).digest("hex");
  const packDir = join(dir, PACK_DIR);
  mkdirSync(packDir, { recursive: true });
  const file = join(packDir, `pack-${name}.twpack`);
  // The index, then each object's bytes as given (no copy into one big buffer: at a first
  // snapshot that garbage raised the peak RSS). Not fsynced, like loose objects: a kill -9
  // cannot lose it (page cache), a power cut can, and the workspace still holds the bytes. A
  // travel's backup syncs its young store files, this pack among them, before its restore
  // removes the workspace's copy (`youngStoreFiles`).
  writeFileAtomic(file, [index, ...ids.map((id) => objects.get(id) as Uint8Array)], {
    durable: false,
    mode: 0o444,
  });
  return {
    file,
    version: VERSION_RAW,
    index,
    count: ids.length,
    fanout: fanoutOf(index, ids.length),
    bases: new Map(),
    cached: 0,
  };
}

/** A version-2 entry's head: flags, and for a delta its depth and base. */
export function entryHead(codec: number, delta: { base: string; depth: number } | null): Buffer {
  if (delta === null) return Buffer.of(codec);
  const head = Buffer.alloc(22);
  head[0] = codec | DELTA_FLAG;
  head[1] = delta.depth;
  head.write(delta.base, 2, 20, "hex");
  return head;
}

/** Streams version-2 entries into a temp file; `finish` writes the index and renames it in. */
export interface PackWriter {
  /** Append one object's entry (`parts` concatenated are the entry: head and payload). */
  add(oid: string, size: number, parts: readonly Uint8Array[]): void;
  readonly count: number;
  /** Index, header, fsync, rename into place (then the directory is synced); the new pack. */
  finish(): Pack;
  /** Remove the temp file (after an error). */
  abort(): void;
}

export function createPackWriter(dir: string): PackWriter {
  const packDir = join(dir, PACK_DIR);
  mkdirSync(packDir, { recursive: true });
  const temp = tempPathFor(join(packDir, "pack-new.twpack"));
  const fd = openSync(temp, "wx", 0o444);
  let closed = false;
  let at = HEADER_V2;
  const slots: Array<{ oid: string; offset: number; stored: number; size: number }> = [];
  const write = (bytes: Uint8Array, position: number) => {
    for (let off = 0; off < bytes.length; )
      off += writeSync(fd, bytes, off, bytes.length - off, position + off);
  };
  const close = () => {
    if (!closed) closeSync(fd);
    closed = true;
  };
  return {
    get count() {
      return slots.length;
    },
    add(oid, size, parts) {
      const offset = at;
      for (const part of parts) {
        write(part, at);
        at += part.length;
      }
      slots.push({ oid, offset, stored: at - offset, size });
    },
    finish() {
      slots.sort((a, b) => (a.oid < b.oid ? -1 : a.oid > b.oid ? 1 : 0));
      const index = Buffer.alloc(HEADER + slots.length * ENTRY);
      MAGIC.copy(index, 0);
      index.writeUInt32LE(VERSION_PACKED, 4);
      index.writeUInt32LE(slots.length, 8);
      slots.forEach((s, i) => {
        const e = HEADER + i * ENTRY;
        index.write(s.oid, e, 20, "hex");
        index.writeDoubleLE(s.offset, e + 20);
        index.writeUInt32LE(s.stored, e + 28);
        index.writeUInt32LE(s.size, e + 32);
      });
      const head = Buffer.alloc(HEADER_V2);
      index.copy(head, 0, 0, HEADER);
      head.writeDoubleLE(at, HEADER);
      write(index.subarray(HEADER), at);
      write(head, 0);
      // Durable before the packs it replaces are deleted: a power cut must not take both.
      fsyncSync(fd);
      close();
      const name = createHash("sha1").update(index).digest("hex");
      const file = join(packDir, `pack-${name}.twpack`);
      renameSync(temp, file);
      fsyncDirectory(packDir);
      return {
        file,
        version: VERSION_PACKED,
        index,
        count: slots.length,
        fanout: fanoutOf(index, slots.length),
        bases: new Map(),
        cached: 0,
      };
    },
    abort() {
      close();
      try {
        unlinkSync(temp);
      } catch {
        // already gone
      }
    },
  };
}

/** Leftover temp files in the pack directory. */
export function packTemps(dir: string): string[] {
  try {
    return readdirSync(join(dir, PACK_DIR))
      .filter(isTempName)
      .map((n) => join(dir, PACK_DIR, n));
  } catch {
    return [];
  }
}
