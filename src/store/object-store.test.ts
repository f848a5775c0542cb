import { chmodSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { makeTempDir } from "../../test/helpers/cli.ts";
import { gitBlobId, isTimewarpError } from "../core/index.ts";
import { createMemoryObjectStore, createObjectStore, type ObjectStore } from "./object-store.ts";

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
