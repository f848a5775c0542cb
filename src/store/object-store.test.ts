import { chmodSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { makeTempDir } from "../../test/helpers/cli.ts";
import { gitBlobId, isTimewarpError } from "../core/index.ts";
import {
  batchObjectWrites,
  createMemoryObjectStore,
  createObjectStore,
  type ObjectStore,
} from "./object-store.ts";

interface Driver {
  store: ObjectStore;
  tamper(oid: string, bytes: string): void;
}

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

const drivers: [string, () => Driver][] = [
  [
    "file system",
    () => {
      const t = makeTempDir();
      cleanups.push(t.cleanup);
      const store = createObjectStore(join(t.dir, "objects"));
      return {
        store,
        tamper: (oid, bytes) => {
          chmodSync(store.pathOf(oid), 0o644);
          writeFileSync(store.pathOf(oid), bytes);
        },
      };
    },
  ],
  [
    "memory",
    () => {
      const store = createMemoryObjectStore();
      return { store, tamper: (oid, bytes) => store.tamper(oid, Buffer.from(bytes)) };
    },
  ],
];

describe.each(drivers)("object store conformance (%s)", (_name, make) => {
  it("names objects by git blob id and reads them back", () => {
    const { store } = make();
    const oid = store.write(Buffer.from("hello\n"));
    // `printf 'hello\n' | git hash-object --stdin`
    expect(oid).toBe("ce013625030ba8dba906f756967f9e9ca394464a");
    expect(store.read(oid).toString()).toBe("hello\n");
    expect(store.has(oid)).toBe(true);
    expect(store.list()).toEqual([oid]);
  });

  it("is write-once: a second write of the same id reports that nothing was written", () => {
    const { store } = make();
    const bytes = Buffer.from("same");
    const oid = gitBlobId(bytes);
    expect(store.writeKnown(oid, bytes)).toBe(true);
    expect(store.writeKnown(oid, bytes)).toBe(false);
    expect(store.list()).toEqual([oid]);
  });

  it("verify-on-read catches a corrupted object; a plain read does not pay for the hash", () => {
    const { store, tamper } = make();
    const oid = store.write(Buffer.from("original"));
    tamper(oid, "tampered");
    expect(store.read(oid).toString()).toBe("tampered");
    let caught: unknown;
    try {
      store.read(oid, { verify: true });
    } catch (error) {
      caught = error;
    }
    expect(isTimewarpError(caught, "OBJECT_CORRUPT")).toBe(true);
  });

  it("reports a missing object as OBJECT_NOT_FOUND and rejects malformed ids", () => {
    const { store } = make();
    let caught: unknown;
    try {
      store.read("a".repeat(40));
    } catch (error) {
      caught = error;
    }
    expect(isTimewarpError(caught, "OBJECT_NOT_FOUND")).toBe(true);
    expect(() => store.read("../../etc/passwd")).toThrow(/not an object id/);
  });

  it("removes objects, returning their size (0 when absent)", () => {
    const { store } = make();
    const oid = store.write(Buffer.from("12345"));
    expect(store.remove(oid)).toBe(5);
    expect(store.has(oid)).toBe(false);
    expect(store.remove(oid)).toBe(0);
  });
});

describe("file-system object store", () => {
  it("uses a fan-out path, leaves no temp file, and lists leftovers of dead writers apart", () => {
    const t = makeTempDir();
    cleanups.push(t.cleanup);
    const store = createObjectStore(join(t.dir, "objects"));
    const oid = store.write(Buffer.from("12345"));
    expect(store.pathOf(oid)).toBe(join(store.dir, oid.slice(0, 2), oid.slice(2)));
    const before = statSync(store.pathOf(oid)).mtimeMs;
    store.write(Buffer.from("12345"));
    expect(statSync(store.pathOf(oid)).mtimeMs).toBe(before);
    expect(readdirSync(join(store.dir, oid.slice(0, 2)))).toHaveLength(1);
    const temp = join(store.dir, oid.slice(0, 2), `.${oid.slice(2)}.tw-tmp-999999-abcd`);
    writeFileSync(temp, "half");
    expect(store.list()).toEqual([oid]);
    expect(store.listTemp()).toEqual([temp]);
  });
});

describe("packs (many objects in one file)", () => {
  const fill = (n: number, tag: string) => {
    const objects = new Map<string, Buffer>();
    for (let i = 0; i < n; i++) {
      const bytes = Buffer.from(`${tag} object ${i}\n`.repeat(1 + (i % 7)));
      objects.set(gitBlobId(bytes), bytes);
    }
    return objects;
  };

  it("writes many objects as one pack and few loose; both read back, verified, and list once", () => {
    const t = makeTempDir();
    cleanups.push(t.cleanup);
    const dir = join(t.dir, "objects");
    const store = createObjectStore(dir);
    const many = fill(200, "many");
    store.writeMany(many);
    expect(readdirSync(join(dir, "pack")).filter((n) => n.endsWith(".twpack"))).toHaveLength(1);
    expect(readdirSync(dir).filter((n) => n !== "pack")).toEqual([]);
    const few = fill(10, "few");
    store.writeMany(few);
    expect(readdirSync(dir).filter((n) => n !== "pack").length).toBeGreaterThan(0);
    // a fresh store instance finds them from the files alone
    const again = createObjectStore(dir);
    for (const [oid, bytes] of [...many, ...few]) {
      expect(again.read(oid, { verify: true }).equals(bytes)).toBe(true);
      expect(again.sizeOf(oid)).toBe(bytes.length);
      expect(again.has(oid)).toBe(true);
      expect(again.writeKnown(oid, bytes)).toBe(false);
    }
    expect(again.list().sort()).toEqual([...many.keys(), ...few.keys()].sort());
    expect(again.has("0".repeat(40))).toBe(false);
  });

  it("a repack keeps the live objects and drops the rest; a damaged entry fails verification", () => {
    const t = makeTempDir();
    cleanups.push(t.cleanup);
    const dir = join(t.dir, "objects");
    const store = createObjectStore(dir);
    const objects = fill(150, "p");
    store.writeMany(objects);
    const ids = [...objects.keys()];
    const keep = new Set(ids.slice(0, 100));
    const repacked = createObjectStore(dir).repack(keep);
    expect(repacked.removed.sort()).toEqual(ids.slice(100).sort());
    expect(repacked.freed).toBeGreaterThan(0);
    expect(repacked.stats?.objects).toBe(100);
    const after = createObjectStore(dir);
    expect(after.list().sort()).toEqual([...keep].sort());
    for (const oid of keep)
      expect(after.read(oid, { verify: true }).equals(objects.get(oid)!)).toBe(true);
    // flip a byte inside the entries: every read with verify gives the bytes or says so
    const pack = join(dir, "pack", readdirSync(join(dir, "pack"))[0] as string);
    const bytes = readFileSync(pack);
    bytes[40] = (bytes[40] as number) ^ 0xff;
    writeFileSync(pack, bytes);
    const damaged = createObjectStore(dir);
    let bad = 0;
    for (const oid of damaged.list()) {
      try {
        expect(damaged.read(oid, { verify: true }).equals(objects.get(oid)!)).toBe(true);
      } catch (error) {
        expect(isTimewarpError(error) && error.code).toBe("OBJECT_CORRUPT");
        bad++;
      }
    }
    expect(bad).toBeGreaterThanOrEqual(1);
  });

  it("a pack a killed writer left half-written is a temp file: never read, listed for cleanup", () => {
    const t = makeTempDir();
    cleanups.push(t.cleanup);
    const dir = join(t.dir, "objects");
    const store = createObjectStore(dir);
    const objects = fill(100, "k");
    store.writeMany(objects);
    const pack = readdirSync(join(dir, "pack"))[0] as string;
    // the first half of a pack under its temp name, as a kill -9 before the rename leaves it
    const torn = join(dir, "pack", `.${pack}.tw-tmp-999999-0badc0de`);
    writeFileSync(torn, readFileSync(join(dir, "pack", pack)).subarray(0, 500));
    const again = createObjectStore(dir);
    expect(again.list().sort()).toEqual([...objects.keys()].sort());
    expect(again.listTemp()).toEqual([torn]);
  });

  it("a batch holds new objects and stores them in bulk on flush", () => {
    const t = makeTempDir();
    cleanups.push(t.cleanup);
    const dir = join(t.dir, "objects");
    const batch = batchObjectWrites(createObjectStore(dir), { bytes: 1 << 20, count: 100 });
    const objects = fill(250, "b");
    let written = 0;
    for (const [oid, bytes] of objects) if (batch.writeKnown(oid, bytes)) written++;
    expect(written).toBe(250);
    // two flushes at 100, the rest held (and readable) until flush()
    expect(readdirSync(join(dir, "pack"))).toHaveLength(2);
    const [first] = objects;
    expect(batch.has(first?.[0] as string)).toBe(true);
    batch.flush();
    const store = createObjectStore(dir);
    expect(store.list()).toHaveLength(250);
  });

  it("a batch holds at most 4 MiB or 1024 objects by default (counted at each writeMany)", () => {
    const memory = createMemoryObjectStore();
    const batches: { count: number; bytes: number }[] = [];
    const counting: ObjectStore = {
      ...memory,
      writeMany(many) {
        let bytes = 0;
        for (const b of many.values()) bytes += b.length;
        batches.push({ count: many.size, bytes });
        return memory.writeMany(many);
      },
    };
    const batch = batchObjectWrites(counting);
    // 1500 small objects, then 40 of 300 KiB: the count bounds the first batches, bytes the later
    for (let i = 0; i < 1500; i++) batch.write(Buffer.from(`small ${i}`));
    for (let i = 0; i < 40; i++) batch.write(Buffer.alloc(300 * 1024, i + 1));
    // one larger than the arena goes straight to the store
    const big = batch.write(Buffer.alloc(5 * 1024 * 1024, 7));
    batch.flush();
    expect(batches.length).toBeGreaterThanOrEqual(3);
    for (const b of batches) {
      expect(b.count).toBeLessThanOrEqual(1024);
      expect(b.bytes).toBeLessThanOrEqual(4 * 1024 * 1024);
    }
    expect(batches.reduce((n, b) => n + b.count, 0)).toBe(1540);
    expect(memory.has(big)).toBe(true);
    expect(memory.list()).toHaveLength(1541);
  });
});
