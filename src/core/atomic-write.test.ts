import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { canMountTmpfs, mountSmallTmpfs } from "../../test/helpers/small-fs.ts";
import { fsyncAll, isTempName, writeFileAtomic, writeJsonAtomic } from "./atomic-write.ts";
import { ErrorCode, TimewarpError } from "./errors.ts";

describe("writeFileAtomic", () => {
  const dirs: string[] = [];
  const tmp = () => {
    const d = mkdtempSync(join(tmpdir(), "tw-atomic-"));
    dirs.push(d);
    return d;
  };
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  it("replaces the whole file and leaves no temp file", () => {
    const dir = tmp();
    const file = join(dir, "a.json");
    writeFileSync(file, "old");
    writeJsonAtomic(file, { a: 1 });
    expect(JSON.parse(readFileSync(file, "utf8"))).toEqual({ a: 1 });
    expect(readdirSync(dir)).toEqual(["a.json"]);
  });

  it("writes bytes exactly, with the requested mode", () => {
    const dir = tmp();
    const file = join(dir, "bin");
    const bytes = new Uint8Array([0, 255, 10, 13, 0]);
    writeFileAtomic(file, bytes, { mode: 0o755 });
    expect(new Uint8Array(readFileSync(file))).toEqual(bytes);
  });

  it("fails with a coded error and removes its temp file when the directory is missing", () => {
    const dir = tmp();
    const file = join(dir, "missing", "x");
    let caught: unknown;
    try {
      writeFileAtomic(file, "x");
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(TimewarpError);
    expect((caught as TimewarpError).code).toBe(ErrorCode.NOT_FOUND);
    expect(existsSync(join(dir, "missing"))).toBe(false);
  });

  it("removes the temp file when the final rename fails (target is a directory)", () => {
    const dir = tmp();
    const target = join(dir, "taken");
    // A non-empty directory cannot be replaced by rename(2): the write must fail cleanly.
    writeFileSync(join(dir, "keep"), "k");
    rmSync(target, { force: true });
    mkdirSync(target);
    writeFileSync(join(target, "inner"), "i");
    expect(() => writeFileAtomic(target, "data")).toThrow(TimewarpError);
    expect(readdirSync(dir).filter(isTempName)).toEqual([]);
    expect(readFileSync(join(target, "inner"), "utf8")).toBe("i");
  });

  it("marks its temp names so readers can skip them", () => {
    expect(isTempName(".a.json.tw-tmp-123-abcd")).toBe(true);
    expect(isTempName("a.json")).toBe(false);
  });
});

describe("writeFileAtomic on a full disk", () => {
  it.skipIf(!canMountTmpfs)(
    "fails with DISK_FULL, keeps the old file and leaves no temp file",
    () => {
      const fs = mountSmallTmpfs(64);
      if (!fs) return;
      try {
        const file = join(fs.dir, "state.json");
        writeFileAtomic(file, "old contents");
        const big = new Uint8Array(256 * 1024).fill(65);
        let caught: unknown;
        try {
          writeFileAtomic(file, big);
        } catch (error) {
          caught = error;
        }
        expect((caught as TimewarpError).code).toBe(ErrorCode.DISK_FULL);
        expect(readFileSync(file, "utf8")).toBe("old contents");
        expect(readdirSync(fs.dir)).toEqual(["state.json"]);
      } finally {
        fs.unmount();
      }
    },
  );
});

describe("fsyncAll", () => {
  const openFds = () => readdirSync("/proc/self/fd").length;
  const settle = () => new Promise((r) => setTimeout(r, 100));

  it.skipIf(!existsSync("/proc/self/fd"))(
    "syncs files and directories, skips a file gone meanwhile, and leaves no descriptor open",
    async () => {
      const dir = mkdtempSync(join(tmpdir(), "tw-fsync-all-"));
      try {
        const files = Array.from({ length: 12 }, (_, i) => join(dir, `f${i}`));
        for (const f of files) writeFileSync(f, `${f}\n`);
        await settle();
        const before = openFds();
        const synced = fsyncAll({
          files,
          filesIfPresent: [join(dir, "gone"), files[0] as string],
          dirs: [dir, join(dir, "no such dir")],
        });
        expect(synced).toBe(14);
        // (the pool's descriptors close once this thread's event loop runs)
        await settle();
        expect(openFds()).toBe(before);
        // a required file that is missing: an error naming it, and nothing left open
        let error: unknown;
        try {
          fsyncAll({ files: [...files, join(dir, "missing")] });
        } catch (e) {
          error = e;
        }
        expect(error).toBeInstanceOf(TimewarpError);
        expect(String((error as Error).message)).toContain("missing");
        await settle();
        expect(openFds()).toBe(before);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );
});
