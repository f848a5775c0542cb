import { createHash } from "node:crypto";
import {
  closeSync,
  constants,
  existsSync,
  fstatSync,
  ftruncateSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  renameSync,
  statSync,
  unlinkSync,
  writeSync,
} from "node:fs";
import { join } from "node:path";
import {
  ErrorCode,
  errnoCode,
  fromSystemError,
  gitBlobId,
  isTempName,
  TimewarpError,
  tempPathFor,
} from "../core/index.ts";
import {
  findInPack,
  loadPacks,
  MIN_PACK_OBJECTS,
  type Pack,
  type PackSlot,
  packIds,
  packTemps,
  readFromPack,
  writePack,
} from "./object-packs.ts";
import { type RepackStats, repackStore } from "./repack.ts";

const OID = /^[0-9a-f]{40}$/;

/**
 * Files larger than this are never held whole in memory: a scan hashes them in chunks and
 * copies them into the store with `writeFromFile`, a restore writes them with `readChunks`.
 * Below it a file is one read (the fast path for source trees). The batch writer's arena holds
 * at most half of this, so a large object is never packed.
 */
export const LARGE_OBJECT_BYTES = 8 * 1024 * 1024;
/** The chunk a large object is read and written in. */
export const OBJECT_CHUNK_BYTES = 1024 * 1024;
const ZEROS = Buffer.alloc(OBJECT_CHUNK_BYTES);

/** True when the first `n` bytes of `chunk` are all zero (a hole can stand for them). */
export function isZeroChunk(chunk: Buffer, n: number): boolean {
  return chunk.compare(ZEROS, 0, n, 0, n) === 0;
}

/** What `writeFromFile` did. */
export type StreamedWrite = "written" | "present" | "changed";

/**
 * Content-addressed, write-once object store keyed by git blob id. Objects are stored raw
 * (no zlib: snapshots are dominated by hashing and I/O, and raw objects are restored with one
 * read) under a fan-out directory `ab/cdef…`, or many at once in a pack (`object-packs.ts`).
 * A write goes to a temp file in the same directory and is renamed into place, so a reader (or
 * a process killed with -9) never sees a half-written object.
 */
export interface ObjectStore {
  readonly dir: string;
  /** The file path of an object (whether or not it exists). */
  pathOf(oid: string): string;
  has(oid: string): boolean;
  /** The stored size of an object in bytes, or null when it is absent. */
  sizeOf(oid: string): number | null;
  /** Store `bytes` whose id the caller already computed; returns false when it was already there. */
  writeKnown(oid: string, bytes: Uint8Array): boolean;
  /** Hash and store `bytes`; returns the id. */
  write(bytes: Uint8Array): string;
  /**
   * Store the file at `path` (`size` bytes, hashing to `oid` when it was read a moment ago) by
   * copying it in chunks, never whole in memory; runs of zeros stay holes, so a sparse file
   * stays cheap. The copy is hashed on the way: `changed` (nothing stored) when the file no
   * longer gives `oid`; `present` when the store already had it.
   */
  writeFromFile(oid: string, path: string | Buffer, size: number): StreamedWrite;
  /**
   * The bytes of an object in order, chunk by chunk (`chunk` is reused: use it before
   * returning); returns the size. With `verify` the bytes are hashed and OBJECT_CORRUPT is
   * thrown after the last chunk when they do not give `oid` (the caller discards what it made).
   */
  readChunks(
    oid: string,
    onChunk: (chunk: Buffer, position: number) => void,
    options?: { verify?: boolean },
  ): number;
  /** The bytes of an object: OBJECT_NOT_FOUND when absent; OBJECT_CORRUPT when `verify` and the hash differs. */
  read(oid: string, options?: { verify?: boolean }): Buffer;
  /** Every object id present (temp files excluded). */
  list(): string[];
  /** Remove an object; returns its size in bytes, or 0 when it was absent. */
  remove(oid: string): number;
  /** Leftover temp files (from writers that died), as paths. */
  listTemp(): string[];
  /** `list()` and `listTemp()` in one pass over the fan-out directories (gc wants both). */
  listAll(): { objects: string[]; temps: string[] };
  /**
   * Store many objects at once (id → bytes, ids already computed): as one pack when there are
   * many (one file instead of one per object), else loose. Objects already present are skipped.
   * With `packed` they always go into one pack, however few: for a travel's backup, which then
   * syncs one file, not one per object. Returns the pack written, or null.
   */
  writeMany(
    objects: ReadonlyMap<string, Uint8Array>,
    options?: { packed?: boolean },
  ): string | null;
  /**
   * gc's repack (`repack.ts`): every object in `keep` that is loose (up to `LARGE_OBJECT_BYTES`)
   * or packed goes into one new compressed pack, many as deltas (`names`, object id → a path it
   * had, puts similar ones side by side); then the old packs and the loose copies go. The new
   * pack is complete, synced and renamed in before anything is deleted, so a crash leaves
   * duplicates, never a loss. Packed objects not in `keep` are dropped with their packs
   * (returned with the bytes freed); dead loose ones are the caller's (`remove`). Nothing is
   * written when the store is one such pack already (or none), with nothing dead in it and
   * fewer than `MIN_PACK_OBJECTS` (64) loose objects: those wait, as git's `gc --auto` lets them.
   */
  repack(
    keep: { has(oid: string): boolean },
    names?: ReadonlyMap<string, string>,
  ): { removed: string[]; freed: number; stats: RepackStats | null };
}

/** Open (lazily creating) the object store in `dir` (normally `.timewarp/objects`). */
export function createObjectStore(dir: string): ObjectStore {
  const madeDirs = new Set<string>();
  let packs: Pack[] | undefined;
  const allPacks = (): Pack[] => {
    packs ??= loadPacks(dir);
    return packs;
  };
  const findPacked = (oid: string): { pack: Pack; slot: PackSlot; size: number } | null => {
    const list = allPacks();
    if (list.length === 0) return null;
    const raw = Buffer.from(oid, "hex");
    for (const pack of list) {
      const slot = findInPack(pack, raw);
      if (slot !== null) return { pack, slot, size: slot.size };
    }
    return null;
  };
  /**
   * Where `oid` is packed, asked only once the packs are loaded (a restore checked its objects
   * first): `read` and `sizeOf` then look there before the loose path, so a packed object costs
   * no failed open of a loose path (a thrown ENOENT is ~15 µs).
   */
  const packedIfLoaded = (oid: string) => (packs !== undefined ? findPacked(oid) : null);
  const pathOf = (oid: string): string => {
    if (!OID.test(oid)) {
      throw new TimewarpError(ErrorCode.INVALID_INPUT, `not an object id: ${JSON.stringify(oid)}`);
    }
    return join(dir, oid.slice(0, 2), oid.slice(2));
  };
  const writeKnown = (oid: string, bytes: Uint8Array): boolean => {
    const path = pathOf(oid);
    if (existsSync(path) || findPacked(oid) !== null) return false;
    const fan = join(dir, oid.slice(0, 2));
    if (!madeDirs.has(fan)) {
      mkdirSync(fan, { recursive: true });
      madeDirs.add(fan);
    }
    const temp = tempPathFor(path);
    let fd: number | undefined;
    try {
      fd = openSync(temp, "wx", 0o444);
      let offset = 0;
      while (offset < bytes.length) offset += writeSync(fd, bytes, offset, bytes.length - offset);
      closeSync(fd);
      fd = undefined;
      // Same id means same bytes, so losing a race to another writer is harmless.
      renameSync(temp, path);
    } catch (error) {
      if (fd !== undefined) closeSync(fd);
      try {
        unlinkSync(temp);
      } catch {
        // never created
      }
      throw fromSystemError(error, `writing object ${oid}`);
    }
    return true;
  };
  const writeFromFile = (oid: string, path: string | Buffer, size: number): StreamedWrite => {
    const dest = pathOf(oid);
    if (existsSync(dest) || findPacked(oid) !== null) return "present";
    const fan = join(dir, oid.slice(0, 2));
    if (!madeDirs.has(fan)) {
      mkdirSync(fan, { recursive: true });
      madeDirs.add(fan);
    }
    const temp = tempPathFor(dest);
    let src: number | undefined;
    let out: number | undefined;
    try {
      src = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
      out = openSync(temp, "wx", 0o444);
      const hash = createHash("sha1").update(`blob ${size}\0`);
      const chunk = Buffer.allocUnsafe(OBJECT_CHUNK_BYTES);
      let pos = 0;
      for (;;) {
        const n = readSync(src, chunk, 0, chunk.length, pos);
        if (n === 0) break;
        hash.update(chunk.subarray(0, n));
        if (!isZeroChunk(chunk, n)) {
          for (let off = 0; off < n; ) off += writeSync(out, chunk, off, n - off, pos + off);
        }
        pos += n;
        if (pos > size) break;
      }
      ftruncateSync(out, pos);
      const same = pos === size && fstatSync(src).size === size && hash.digest("hex") === oid;
      closeSync(out);
      out = undefined;
      if (!same) {
        unlinkSync(temp);
        return "changed";
      }
      renameSync(temp, dest);
      return "written";
    } catch (error) {
      if (out !== undefined) closeSync(out);
      try {
        unlinkSync(temp);
      } catch {
        // never created
      }
      throw fromSystemError(error, `writing object ${oid}`);
    } finally {
      if (src !== undefined) closeSync(src);
    }
  };
  const fanDirs = (): string[] => {
    try {
      return readdirSync(dir).filter((n) => /^[0-9a-f]{2}$/.test(n));
    } catch (error) {
      if (errnoCode(error) === "ENOENT") return [];
      throw fromSystemError(error, `listing ${dir}`);
    }
  };
  const listAll = (): { objects: string[]; temps: string[] } => {
    const objects: string[] = [];
    const temps: string[] = [];
    for (const fan of fanDirs()) {
      for (const name of readdirSync(join(dir, fan))) {
        if (isTempName(name)) temps.push(join(dir, fan, name));
        else if (name.length === 38) objects.push(fan + name);
      }
    }
    const list = allPacks();
    if (list.length > 0) {
      const seen = new Set(objects);
      for (const pack of list) {
        for (const oid of packIds(pack)) {
          if (!seen.has(oid)) {
            seen.add(oid);
            objects.push(oid);
          }
        }
      }
    }
    temps.push(...packTemps(dir));
    return { objects, temps };
  };
  const listLoose = (): string[] => {
    const objects: string[] = [];
    for (const fan of fanDirs()) {
      for (const name of readdirSync(join(dir, fan))) {
        if (!isTempName(name) && name.length === 38) objects.push(fan + name);
      }
    }
    return objects;
  };
  return {
    dir,
    pathOf,
    has: (oid) => existsSync(pathOf(oid)) || findPacked(oid) !== null,
    sizeOf: (oid) => {
      const path = pathOf(oid);
      const early = packedIfLoaded(oid);
      if (early !== null) return early.size;
      return statSync(path, { throwIfNoEntry: false })?.size ?? findPacked(oid)?.size ?? null;
    },
    writeKnown,
    writeMany(objects, options = {}) {
      const packed = options.packed === true;
      const fresh = new Map<string, Uint8Array>();
      for (const [oid, bytes] of objects) {
        pathOf(oid); // checks the id
        if (!existsSync(pathOf(oid)) && findPacked(oid) === null) fresh.set(oid, bytes);
      }
      if (fresh.size === 0) return null;
      if (fresh.size < MIN_PACK_OBJECTS && !packed) {
        for (const [oid, bytes] of fresh) writeKnown(oid, bytes);
        return null;
      }
      try {
        const pack = writePack(dir, fresh);
        allPacks().push(pack);
        return pack.file;
      } catch (error) {
        throw fromSystemError(error, `writing a pack of ${fresh.size} objects in ${dir}`);
      }
    },
    repack(keep, names) {
      const result = repackStore({ dir, packs: allPacks(), loose: listLoose(), keep, names });
      packs = result.packs;
      return { removed: result.removed, freed: result.freed, stats: result.stats };
    },
    write(bytes) {
      const oid = gitBlobId(bytes);
      writeKnown(oid, bytes);
      return oid;
    },
    writeFromFile,
    readChunks(oid, onChunk, options = {}) {
      const path = pathOf(oid);
      let fd: number;
      try {
        fd = openSync(path, "r");
      } catch (error) {
        if (errnoCode(error) !== "ENOENT") throw fromSystemError(error, `reading object ${oid}`);
        // packed (only small objects are): one chunk
        const bytes = this.read(oid, options);
        onChunk(bytes, 0);
        return bytes.length;
      }
      try {
        return readChunksFrom(fd, oid, onChunk, options.verify === true);
      } finally {
        closeSync(fd);
      }
    },
    read(oid, options = {}) {
      const path = pathOf(oid);
      const fromPack = (packed: { pack: Pack; slot: PackSlot }): Buffer | null => {
        try {
          return readFromPack(packed.pack, packed.slot);
        } catch (packError) {
          // A gc in another process replaced the pack after this one loaded the list: the
          // object is in its new pack (or loose); the caller looks again.
          if (errnoCode(packError) === "ENOENT") return null;
          throw fromSystemError(packError, `reading object ${oid} from ${packed.pack.file}`);
        }
      };
      const fromLoose = (): Buffer | null => {
        try {
          return readFileSync(path);
        } catch (error) {
          if (errnoCode(error) !== "ENOENT") throw fromSystemError(error, `reading object ${oid}`);
          return null;
        }
      };
      const early = packedIfLoaded(oid);
      let bytes = early === null ? fromLoose() : fromPack(early);
      for (let attempt = 0; bytes === null && attempt < 2; attempt++) {
        if (attempt === 1) packs = undefined; // reload: the list may be stale
        const packed = findPacked(oid);
        bytes = packed === null ? null : fromPack(packed);
        if (bytes === null && attempt === 1) bytes = fromLoose();
      }
      if (bytes === null) {
        throw new TimewarpError(ErrorCode.OBJECT_NOT_FOUND, `object ${oid} not found in ${dir}`, {
          data: { oid },
        });
      }
      if (options.verify === true) {
        const got = createHash("sha1").update(`blob ${bytes.length}\0`).update(bytes).digest("hex");
        if (got !== oid) {
          throw new TimewarpError(
            ErrorCode.OBJECT_CORRUPT,
            `object ${oid} is corrupt: its ${bytes.length} bytes hash to ${got}`,
            { data: { oid, got } },
          );
        }
      }
      return bytes;
    },
    list() {
      return listAll().objects;
    },
    remove(oid) {
      const path = pathOf(oid);
      try {
        const size = statSync(path).size;
        unlinkSync(path);
        return size;
      } catch (error) {
        if (errnoCode(error) === "ENOENT") return 0;
        throw fromSystemError(error, `removing object ${oid}`);
      }
    },
    listTemp() {
      return listAll().temps;
    },
    listAll,
  };
}

/** `readChunks` over an open object file. */
function readChunksFrom(
  fd: number,
  oid: string,
  onChunk: (chunk: Buffer, position: number) => void,
  verify: boolean,
): number {
  const size = fstatSync(fd).size;
  const hash = verify ? createHash("sha1").update(`blob ${size}\0`) : null;
  const chunk = Buffer.allocUnsafe(Math.min(OBJECT_CHUNK_BYTES, Math.max(size, 1)));
  let pos = 0;
  while (pos < size) {
    const n = readSync(fd, chunk, 0, Math.min(chunk.length, size - pos), pos);
    if (n === 0) break;
    const view = chunk.subarray(0, n);
    hash?.update(view);
    onChunk(view, pos);
    pos += n;
  }
  if (hash !== null) {
    const got = hash.digest("hex");
    if (got !== oid || pos !== size) {
      throw new TimewarpError(
        ErrorCode.OBJECT_CORRUPT,
        `object ${oid} is corrupt: its ${pos} bytes hash to ${got}`,
        { data: { oid, got } },
      );
    }
  }
  return pos;
}

/**
 * An in-memory object store with the same contract (the conformance suite in
 * object-store.test.ts runs against both): for tests of code that only needs objects.
 */
export function createMemoryObjectStore(): ObjectStore & {
  /** Replace an object's bytes without changing its id (to test verification). */
  tamper(oid: string, bytes: Uint8Array): void;
} {
  const objects = new Map<string, Buffer>();
  const check = (oid: string) => {
    if (!OID.test(oid)) {
      throw new TimewarpError(ErrorCode.INVALID_INPUT, `not an object id: ${JSON.stringify(oid)}`);
    }
  };
  const writeKnown = (oid: string, bytes: Uint8Array): boolean => {
    check(oid);
    if (objects.has(oid)) return false;
    objects.set(oid, Buffer.from(bytes));
    return true;
  };
  return {
    dir: ":memory:",
    pathOf: (oid) => {
      check(oid);
      return `:memory:/${oid.slice(0, 2)}/${oid.slice(2)}`;
    },
    has: (oid) => objects.has(oid),
    sizeOf: (oid) => objects.get(oid)?.length ?? null,
    writeKnown,
    write(bytes) {
      const oid = gitBlobId(bytes);
      writeKnown(oid, bytes);
      return oid;
    },
    read(oid, options = {}) {
      check(oid);
      const bytes = objects.get(oid);
      if (bytes === undefined) {
        throw new TimewarpError(ErrorCode.OBJECT_NOT_FOUND, `object ${oid} not found in memory`, {
          data: { oid },
        });
      }
      if (options.verify === true && gitBlobId(bytes) !== oid) {
        throw new TimewarpError(ErrorCode.OBJECT_CORRUPT, `object ${oid} is corrupt`, {
          data: { oid, got: gitBlobId(bytes) },
        });
      }
      return Buffer.from(bytes);
    },
    writeFromFile(oid, path, size) {
      check(oid);
      if (objects.has(oid)) return "present";
      const bytes = readFileSync(path);
      if (bytes.length !== size || gitBlobId(bytes) !== oid) return "changed";
      objects.set(oid, bytes);
      return "written";
    },
    readChunks(oid, onChunk, options) {
      const bytes = this.read(oid, options);
      onChunk(bytes, 0);
      return bytes.length;
    },
    list: () => [...objects.keys()].sort(),
    remove(oid) {
      const bytes = objects.get(oid);
      objects.delete(oid);
      return bytes?.length ?? 0;
    },
    listTemp: () => [],
    listAll: () => ({ objects: [...objects.keys()], temps: [] }),
    writeMany(many) {
      for (const [oid, bytes] of many) writeKnown(oid, bytes);
      return null;
    },
    repack: () => ({ removed: [], freed: 0, stats: null }),
    tamper(oid, bytes) {
      objects.set(oid, Buffer.from(bytes));
    },
  };
}

/**
 * An arena with room for `need` bytes, its first `used` kept: grown by doubling from 64 KiB up
 * to `max`. Allocating the whole `max` at once cost every small snapshot 8 MiB of external
 * memory, which made V8 run a full mark-compact after each (~10 ms in the hook worker).
 */
function roomFor(arena: Buffer | undefined, used: number, need: number, max: number): Buffer {
  if (arena !== undefined && arena.length >= need) return arena;
  let size = Math.max(arena?.length ?? 0, 64 * 1024);
  while (size < need) size *= 2;
  const grown = Buffer.allocUnsafeSlow(Math.min(size, Math.max(max, need)));
  if (arena !== undefined) arena.copy(grown, 0, 0, used);
  return grown;
}

/**
 * A writer over `store` that holds new objects back and stores them in bulk (`writeMany`: a
 * pack when there are many): for a scan that may write thousands (a first snapshot). Held
 * objects count as present. `flush()` before anything refers to them (a record); objects held
 * when the process dies are simply not stored, and nothing refers to them yet.
 *
 * With `packed` (a travel's backup) every flush writes one pack, however few objects it holds:
 * the sweep of young store files that follows (`youngStoreFiles`) syncs it with the rest.
 *
 * Held bytes are copied into one arena, not kept as the caller's buffers: a small file's buffer
 * is a slice of Node's shared 8 KiB pool, and holding thousands of them pinned whole pool slabs
 * (+37 MiB at 100k small files). An object larger than the arena is written at once. The
 * arena is 4 MiB, not 8: at 100k files a first snapshot's peak fell by ~10 MiB (the arena and
 * its last doubling), for 11 packs instead of 7 (issue 22, item 5).
 */
export function batchObjectWrites(
  store: ObjectStore,
  limits: { bytes: number; count: number } = { bytes: 4 * 1024 * 1024, count: 1024 },
  options: { packed?: boolean } = {},
): ObjectStore & { flush(): void } {
  let arena: Buffer | undefined;
  let used = 0;
  const held = new Map<string, { offset: number; size: number }>();
  const packed = options.packed === true;
  const view = (at: { offset: number; size: number }) =>
    (arena as Buffer).subarray(at.offset, at.offset + at.size);
  const flush = () => {
    if (held.size === 0) return;
    const out = new Map<string, Uint8Array>();
    for (const [oid, at] of held) out.set(oid, view(at));
    store.writeMany(out, { packed });
    held.clear();
    used = 0;
  };
  const writeKnown = (oid: string, bytes: Uint8Array): boolean => {
    if (held.has(oid) || store.has(oid)) return false;
    if (bytes.length > limits.bytes) return store.writeKnown(oid, bytes);
    if (used + bytes.length > limits.bytes) flush();
    arena = roomFor(arena, used, used + bytes.length, limits.bytes);
    arena.set(bytes, used);
    held.set(oid, { offset: used, size: bytes.length });
    used += bytes.length;
    if (held.size >= limits.count) flush();
    return true;
  };
  return {
    ...store,
    has: (oid) => held.has(oid) || store.has(oid),
    sizeOf: (oid) => held.get(oid)?.size ?? store.sizeOf(oid),
    writeKnown,
    write(bytes) {
      const oid = gitBlobId(bytes);
      writeKnown(oid, bytes);
      return oid;
    },
    read(oid, options) {
      const at = held.get(oid);
      return at === undefined ? store.read(oid, options) : Buffer.from(view(at));
    },
    writeFromFile: (oid, path, size) =>
      held.has(oid) ? "present" : store.writeFromFile(oid, path, size),
    readChunks(oid, onChunk, options) {
      const at = held.get(oid);
      if (at === undefined) return store.readChunks(oid, onChunk, options);
      onChunk(Buffer.from(view(at)), 0);
      return at.size;
    },
    flush,
  };
}
