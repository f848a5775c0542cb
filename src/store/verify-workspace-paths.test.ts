import {
  chmodSync,
  linkSync,
  mkdirSync,
  mkdtempSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createSnapshot, readManifestTree } from "./snapshots.ts";
import { verifyWorkspacePaths } from "./verify-workspace.ts";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A workspace of 3 directories × 5 files, a symlink and a hard link, snapshotted. */
function workspace() {
  const root = join(mkdtempSync(join(tmpdir(), "tw-verify-paths-")), "ws");
  dirs.push(join(root, ".."));
  mkdirSync(join(root, ".timewarp"), { recursive: true });
  for (let d = 0; d < 3; d++) {
    mkdirSync(join(root, `d${d}`));
    for (let f = 0; f < 5; f++) writeFileSync(join(root, `d${d}`, `f${f}.txt`), `${d}/${f}\n`);
  }
  symlinkSync("d0/f0.txt", join(root, "link"));
  linkSync(join(root, "d2", "f0.txt"), join(root, "d2", "same.txt"));
  const made = createSnapshot(root, { excludes: ["*.log"] });
  return { root, tree: readManifestTree(root, made.record), entries: 3 + 15 + 2 };
}

const base = { excludes: ["*.log"], skipped: [], scanSkipped: [], maxFileBytes: 1 << 20 };

describe("verifyWorkspacePaths: a verify that reads only the paths that may differ", () => {
  it("finds a workspace equal at every path given, and counts the rest as the scan did", () => {
    const { root, tree, entries } = workspace();
    const planned = ["d0", "d0/f1.txt", "link", "d2/same.txt"];
    const r = verifyWorkspacePaths(root, tree, {
      ...base,
      planned,
      changed: ["d0/f1.txt", "d1/f3.txt", "build.log"],
      same: entries - planned.length,
    });
    expect(r).toEqual({ ok: true, differences: [], checked: entries });
  });

  it("catches content, mode, type, missing and extra at the given paths, and nothing elsewhere", () => {
    const { root, tree, entries } = workspace();
    writeFileSync(join(root, "d0", "f1.txt"), "changed during the restore\n");
    chmodSync(join(root, "d1", "f2.txt"), 0o755);
    rmSync(join(root, "d1", "f3.txt"));
    writeFileSync(join(root, "d1", "new.txt"), "an agent's file\n");
    rmSync(join(root, "link"));
    writeFileSync(join(root, "link"), "a file now\n");
    writeFileSync(join(root, "d2", "f4.txt"), "not reported: the scan vouches for it\n");
    const r = verifyWorkspacePaths(root, tree, {
      ...base,
      planned: [],
      changed: ["d0/f1.txt", "d1/f2.txt", "d1/f3.txt", "d1/new.txt", "link"],
      same: entries,
    });
    expect(r?.differences).toEqual([
      { path: "d0/f1.txt", kind: "content" },
      { path: "d1/f2.txt", kind: "mode" },
      { path: "d1/f3.txt", kind: "missing" },
      { path: "d1/new.txt", kind: "extra" },
      { path: "link", kind: "type" },
    ]);
    expect(r?.ok).toBe(false);
  });

  it("sees a hard link broken into a file of its own, and a file below a directory now a symlink as gone", () => {
    const { root, tree, entries } = workspace();
    rmSync(join(root, "d2", "same.txt"));
    writeFileSync(join(root, "d2", "same.txt"), "2/0\n"); // same bytes, no longer the same inode
    const r = verifyWorkspacePaths(root, tree, {
      ...base,
      planned: ["d2/same.txt"],
      changed: [],
      same: entries - 1,
    });
    expect(r?.differences).toEqual([{ path: "d2/same.txt", kind: "content" }]);

    rmSync(join(root, "d1"), { recursive: true });
    symlinkSync("d0", join(root, "d1"));
    const below = verifyWorkspacePaths(root, tree, {
      ...base,
      planned: ["d1", "d1/f0.txt"],
      changed: [],
      same: entries - 2,
    });
    expect(below?.differences).toEqual([
      { path: "d1", kind: "type" },
      { path: "d1/f0.txt", kind: "missing" },
    ]);
  });

  it("leaves the answer to a whole verify where only a walk can tell", () => {
    const { root, tree, entries } = workspace();
    const at = (changed: string[]) =>
      verifyWorkspacePaths(root, tree, { ...base, planned: [], changed, same: entries });
    // a directory reported that the scan found equal: what lies below it is listed nowhere
    expect(at(["d1"])).toBeNull();
    mkdirSync(join(root, "moved-in"));
    writeFileSync(join(root, "moved-in", "x.txt"), "x\n");
    expect(at(["moved-in"])).toBeNull();
    // too large to read here, or special
    writeFileSync(join(root, "d0", "f2.txt"), Buffer.alloc(2 << 20));
    expect(at(["d0/f2.txt"])).toBeNull();
    // a name that may not be UTF-8
    expect(at(["d0/\uFFFD.txt"])).toBeNull();
  });

  it("neither expects nor reads what is excluded, a directory-only pattern included", () => {
    const { root, tree, entries } = workspace();
    mkdirSync(join(root, "out"));
    writeFileSync(join(root, "out", "big.bin"), Buffer.alloc(2 << 20));
    writeFileSync(join(root, "d1", "run.log"), "noise\n");
    mkdirSync(join(root, ".timewarp", "tmp"), { recursive: true });
    const r = verifyWorkspacePaths(root, tree, {
      ...base,
      excludes: ["*.log", "out/"],
      planned: [],
      changed: ["out", "out/big.bin", "d1/run.log", ".timewarp/tmp"],
      same: entries,
    });
    expect(r).toEqual({ ok: true, differences: [], checked: entries });
  });
});
