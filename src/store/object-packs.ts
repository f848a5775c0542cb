import { createHash } from "node:crypto";
import { closeSync, mkdirSync, openSync, readdirSync, readSync, statSync } from "node:fs";
import { join } from "node:path";
import {
  ErrorCode,
  errnoCode,
  fromSystemError,
  isTempName,
  TimewarpError,
  writeFileAtomic,
} from "../core/index.ts";

/**
 * Packs: many objects in one file, for the writes that create thousands of objects at once (a
 * first snapshot). One loose object is one inode, and on ext4 creating one costs ~150 µs of
 * journal time, which made a 10k-file first snapshot as slow as git's (git creates one loose
 * object per file too). A pack is written once, atomically (temp + rename), and never changed:
 * gc writes the live objects of a partly dead pack into a new one, then deletes the old.
 *
 * Format: "TWPK", version (u32), object count (u32), 4 bytes of padding; then one 36-byte index
 * entry per object sorted by raw id (id, data offset as f64, size as f64); then the objects'
 * bytes, raw like loose objects. Only the header and index are read to find an object.
 */

export const PACK_DIR = "pack";
const MAGIC = Buffer.from("TWPK");
const VERSION = 1;
const HEADER = 16;
const ENTRY = 36;
/** Fewer objects than this are written loose: a pack per small snapshot would only add lookups. */
export const MIN_PACK_OBJECTS = 64;

export interface Pack {
  file: string;
  /** Header and index. */
  index: Buffer;
  count: number;
  /** Per first id byte, where its entries begin (git's idx fan-out): a miss costs ~6 compares. */
  fanout: Uint32Array;
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
  for (const name of names.sort()) {
    if (!name.endsWith(".twpack") || isTempName(name)) continue;
    const pack = openPack(join(packDir, name));
    if (pack !== null) packs.push(pack);
  }
  return packs;
}

function openPack(file: string): Pack | null {
  let fd: number;
  try {
    fd = openSync(file, "r");
  } catch {
    return null;
  }
  try {
    const head = Buffer.alloc(HEADER);
    if (readSync(fd, head, 0, HEADER, 0) !== HEADER) return null;
    if (!head.subarray(0, 4).equals(MAGIC) || head.readUInt32LE(4) !== VERSION) return null;
    const count = head.readUInt32LE(8);
    const index = Buffer.alloc(HEADER + count * ENTRY);
    head.copy(index);
    if (readSync(fd, index, HEADER, count * ENTRY, HEADER) !== count * ENTRY) return null;
    // The last object must end at the end of the file (a torn pack never gets renamed in, but
    // a damaged one must not be read past its end).
    const size = statSync(file).size;
    if (count > 0) {
      let end = 0;
      for (let i = 0; i < count; i++) {
        const at = HEADER + i * ENTRY;
        end = Math.max(end, index.readDoubleLE(at + 20) + index.readDoubleLE(at + 28));
      }
      if (end !== size) return null;
    }
    return { file, index, count, fanout: fanoutOf(index, count) };
  } finally {
    closeSync(fd);
  }
}

/** Where object `raw` (its 20-byte id) lies in `pack`, or null. */
export function findInPack(pack: Pack, raw: Buffer): { offset: number; size: number } | null {
  const first = raw[0] as number;
  let lo = pack.fanout[first] as number;
  let hi = (pack.fanout[first + 1] as number) - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const at = HEADER + mid * ENTRY;
    // The entry's id against the one sought: below it, look right.
    const c = pack.index.compare(raw, 0, 20, at, at + 20);
    if (c === 0) {
      return { offset: pack.index.readDoubleLE(at + 20), size: pack.index.readDoubleLE(at + 28) };
    }
    if (c < 0) lo = mid + 1;
    else hi = mid - 1;
  }
  return null;
}

/** Every object id in `pack`, as hex. */
export function packIds(pack: Pack): string[] {
  const out: string[] = [];
  for (let i = 0; i < pack.count; i++) {
    const at = HEADER + i * ENTRY;
    out.push(pack.index.toString("hex", at, at + 20));
  }
  return out;
}

/** The bytes of an object at `offset` in the pack file. */
export function readFromPack(pack: Pack, offset: number, size: number): Buffer {
  const fd = openSync(pack.file, "r");
  try {
    const bytes = Buffer.allocUnsafe(size);
    let done = 0;
    while (done < size) {
      const n = readSync(fd, bytes, done, size - done, offset + done);
      if (n === 0) {
        throw new TimewarpError(ErrorCode.OBJECT_CORRUPT, `${pack.file} ends inside an object`, {
          data: { file: pack.file, offset, size },
        });
      }
      done += n;
    }
    return bytes;
  } finally {
    closeSync(fd);
  }
}

/** Write `objects` (id → bytes) as one new pack in the store at `dir`; returns it. */
export function writePack(dir: string, objects: ReadonlyMap<string, Uint8Array>): Pack {
  const ids = [...objects.keys()].sort();
  const indexBytes = HEADER + ids.length * ENTRY;
  const index = Buffer.alloc(indexBytes);
  MAGIC.copy(index, 0);
  index.writeUInt32LE(VERSION, 4);
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
  // cannot lose it (page cache), a power cut can.
  writeFileAtomic(file, [index, ...ids.map((id) => objects.get(id) as Uint8Array)], {
    durable: false,
    mode: 0o444,
  });
  return { file, index, count: ids.length, fanout: fanoutOf(index, ids.length) };
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
