import { createHash } from "node:crypto";
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
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

const OID = /^[0-9a-f]{40}$/;

/**
 * Content-addressed, write-once object store keyed by git blob id. Objects are stored raw
 * (no zlib: snapshots are dominated by hashing and I/O, and raw objects are restored with one
 * read) under a fan-out directory `ab/cdef…`. A write goes to a temp file in the same fan-out
 * directory and is renamed into place, so a reader (or a process killed with -9) never sees a
 * half-written object.
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
}

/** Open (lazily creating) the object store in `dir` (normally `.timewarp/objects`). */
export function createObjectStore(dir: string): ObjectStore {
  const madeDirs = new Set<string>();
  const pathOf = (oid: string): string => {
    if (!OID.test(oid)) {
      throw new TimewarpError(ErrorCode.INVALID_INPUT, `not an object id: ${JSON.stringify(oid)}`);
    }
    return join(dir, oid.slice(0, 2), oid.slice(2));
  };
  const writeKnown = (oid: string, bytes: Uint8Array): boolean => {
    const path = pathOf(oid);
    if (existsSync(path)) return false;
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
    return { objects, temps };
  };
  return {
    dir,
    pathOf,
    has: (oid) => existsSync(pathOf(oid)),
    sizeOf: (oid) => statSync(pathOf(oid), { throwIfNoEntry: false })?.size ?? null,
    writeKnown,
    write(bytes) {
      const oid = gitBlobId(bytes);
      writeKnown(oid, bytes);
      return oid;
    },
    read(oid, options = {}) {
      let bytes: Buffer;
      try {
        bytes = readFileSync(pathOf(oid));
      } catch (error) {
        if (errnoCode(error) === "ENOENT") {
          throw new TimewarpError(ErrorCode.OBJECT_NOT_FOUND, `object ${oid} not found in ${dir}`, {
            data: { oid },
          });
        }
        throw fromSystemError(error, `reading object ${oid}`);
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
    list: () => [...objects.keys()].sort(),
    remove(oid) {
      const bytes = objects.get(oid);
      objects.delete(oid);
      return bytes?.length ?? 0;
    },
    listTemp: () => [],
    listAll: () => ({ objects: [...objects.keys()], temps: [] }),
    tamper(oid, bytes) {
      objects.set(oid, Buffer.from(bytes));
    },
  };
}
