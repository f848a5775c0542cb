import {
  chmodSync,
  linkSync,
  mkdirSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { writeOldGrid } from "../../test/helpers/backdate.ts";
import { tempDirs } from "../../test/helpers/temp-dirs.ts";
import { changedSinceScan } from "./changed-since-scan.ts";
import { scanWorkspace } from "./scan-workspace.ts";

const EXCLUDES = ["*.log", "cache/"];

describe("changedSinceScan: what a walk by stat finds changed since a scan", () => {
  const tmp = tempDirs("tw-changed-since-");

  /** 3 directories × 4 files, a symlink, an excluded file, all a minute old; then a scan. */
  function scanned() {
    const root = tmp();
    mkdirSync(join(root, ".timewarp"));
    writeOldGrid(root, 3, 4);
    symlinkSync("d0/f0.txt", join(root, "link"));
    writeFileSync(join(root, "build.log"), "excluded\n");
    const scan = scanWorkspace(root, { excludes: EXCLUDES, clockDir: join(root, ".timewarp") });
    return { root, cache: scan.statCache };
  }

  it("lists only the symlinks when nothing changed (their targets are read again)", () => {
    const { root, cache } = scanned();
    writeFileSync(join(root, "build.log"), "an excluded path is not looked at\n");
    mkdirSync(join(root, "cache"));
    writeFileSync(join(root, "cache", "x"), "nor below an excluded directory\n");
    writeFileSync(join(root, ".timewarp", "y"), "nor the store\n");
    expect(changedSinceScan(root, cache, EXCLUDES)).toEqual(["link"]);
  });

  it("sees a write that kept the size and put the mtime back: its ctime moved", () => {
    const { root, cache } = scanned();
    const p = join(root, "d1", "f2.txt");
    const before = statSync(p);
    writeFileSync(p, "X/2\n");
    utimesSync(p, before.atime, before.mtime);
    expect(statSync(p).mtimeMs).toBe(before.mtimeMs);
    expect(statSync(p).size).toBe(before.size);
    expect(changedSinceScan(root, cache, EXCLUDES)?.sort()).toEqual(["d1/f2.txt", "link"]);
  });

  it("sees a mode, a type, a new, a gone, a moved and a hard-linked path", () => {
    const { root, cache } = scanned();
    chmodSync(join(root, "d0", "f1.txt"), 0o755);
    rmSync(join(root, "d0", "f2.txt"));
    symlinkSync("f0.txt", join(root, "d0", "f2.txt")); // a file now a symlink
    writeFileSync(join(root, "d2", "new.txt"), "new\n");
    rmSync(join(root, "d2", "f3.txt"));
    renameSync(join(root, "d1", "f0.txt"), join(root, "d1", "moved.txt"));
    linkSync(join(root, "d2", "f0.txt"), join(root, "d2", "twin.txt"));
    chmodSync(join(root, "d1"), 0o700);
    expect(changedSinceScan(root, cache, EXCLUDES)?.sort()).toEqual([
      "d0/f1.txt",
      "d0/f2.txt",
      "d1",
      "d1/f0.txt",
      "d1/moved.txt",
      "d2/f0.txt",
      "d2/f3.txt",
      "d2/new.txt",
      "d2/twin.txt",
      "link",
    ]);
  });

  it("lists a directory gone and everything the scan found below it", () => {
    const { root, cache } = scanned();
    rmSync(join(root, "d2"), { recursive: true });
    mkdirSync(join(root, "d3"));
    expect(changedSinceScan(root, cache, EXCLUDES)?.sort()).toEqual([
      "d2",
      "d2/f0.txt",
      "d2/f1.txt",
      "d2/f2.txt",
      "d2/f3.txt",
      "d3",
      "link",
    ]);
  });

  it("re-reads a racily clean file: one whose mtime is not older than the scan's start", () => {
    const root = tmp();
    mkdirSync(join(root, ".timewarp"));
    writeFileSync(join(root, "old.txt"), "old\n");
    utimesSync(join(root, "old.txt"), new Date(Date.now() - 60_000), new Date(Date.now() - 60_000));
    writeFileSync(join(root, "racy.txt"), "same tick as the scan\n");
    const future = new Date(Date.now() + 60_000);
    utimesSync(join(root, "racy.txt"), future, future);
    const scan = scanWorkspace(root, { excludes: [], clockDir: join(root, ".timewarp") });
    expect(changedSinceScan(root, scan.statCache, [])).toEqual(["racy.txt"]);
  });

  it("leaves out what the scan skipped: the verify compares it as the scan left it", () => {
    const root = tmp();
    mkdirSync(join(root, ".timewarp"));
    const old = new Date(Date.now() - 60_000);
    for (const [name, text] of [
      ["small.txt", "ok\n"],
      ["big.bin", "more than max_file_bytes\n"],
    ]) {
      writeFileSync(join(root, name as string), text as string);
      utimesSync(join(root, name as string), old, old);
    }
    const scan = scanWorkspace(root, {
      excludes: [],
      maxFileBytes: 10,
      clockDir: join(root, ".timewarp"),
    });
    expect(scan.skipped.map((s) => s.path)).toEqual(["big.bin"]);
    writeFileSync(join(root, "big.bin"), "still more than max_file_bytes, and changed\n");
    expect(changedSinceScan(root, scan.statCache, [])).toEqual([]);
  });

  it("cannot say for another scope, or without the scan's index", () => {
    const { root, cache } = scanned();
    expect(changedSinceScan(root, cache, ["*.tmp"])).toBeUndefined();
    const { index: _, ...noIndex } = cache;
    expect(changedSinceScan(root, noIndex, EXCLUDES)).toBeUndefined();
  });
});
