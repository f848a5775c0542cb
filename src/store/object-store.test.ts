import { existsSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { makeTempDir } from "../../test/helpers/cli.ts";
import { gitBlobId, isTimewarpError } from "../core/index.ts";
import { createObjectStore } from "./object-store.ts";

describe("createObjectStore", () => {
  const cleanups: (() => void)[] = [];
  afterEach(() => {
    for (const c of cleanups.splice(0)) c();
  });
  const fresh = () => {
    const t = makeTempDir();
    cleanups.push(t.cleanup);
    return createObjectStore(join(t.dir, "objects"));
  };

  it("stores raw bytes under a fan-out path named by the git blob id", () => {
    const store = fresh();
    const oid = store.write(Buffer.from("hello\n"));
    // `printf 'hello\n' | git hash-object --stdin`
    expect(oid).toBe("ce013625030ba8dba906f756967f9e9ca394464a");
    expect(store.pathOf(oid)).toBe(join(store.dir, "ce", "013625030ba8dba906f756967f9e9ca394464a"));
    expect(store.read(oid).toString()).toBe("hello\n");
    expect(store.has(oid)).toBe(true);
    expect(store.list()).toEqual([oid]);
  });

  it("is write-once: a second write of the same content writes nothing", () => {
    const store = fresh();
    const bytes = Buffer.from("same");
    const oid = gitBlobId(bytes);
    expect(store.writeKnown(oid, bytes)).toBe(true);
    const before = statSync(store.pathOf(oid)).mtimeMs;
    expect(store.writeKnown(oid, bytes)).toBe(false);
    expect(statSync(store.pathOf(oid)).mtimeMs).toBe(before);
    expect(readdirSync(join(store.dir, oid.slice(0, 2)))).toHaveLength(1); // no temp left behind
  });

  it("verify-on-read catches a corrupted object; plain read does not pay for the hash", () => {
    const store = fresh();
    const oid = store.write(Buffer.from("original"));
    writeFileSync(store.pathOf(oid), "tampered");
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
    const store = fresh();
    expect(() => store.read("a".repeat(40))).toThrow(/not found/);
    expect(() => store.read("../../etc/passwd")).toThrow(/not an object id/);
  });

  it("lists temp leftovers separately and removes objects with their size", () => {
    const store = fresh();
    const oid = store.write(Buffer.from("12345"));
    const temp = join(store.dir, oid.slice(0, 2), `.${oid.slice(2)}.tw-tmp-999999-abcd`);
    writeFileSync(temp, "half");
    expect(store.list()).toEqual([oid]);
    expect(store.listTemp()).toEqual([temp]);
    expect(store.remove(oid)).toBe(5);
    expect(existsSync(store.pathOf(oid))).toBe(false);
    expect(store.remove(oid)).toBe(0);
  });
});
