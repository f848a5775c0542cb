import { execFileSync } from "node:child_process";
import { mkdirSync, readlinkSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { applyUnifiedDiff, deletePath, reverseOp } from "../src/ledger/index.ts";
import { makeTempDir } from "./helpers/cli.ts";
import { readDiskTree, treeLines } from "./helpers/disk-tree.ts";

/**
 * Issue 16 §7, the patch side: `edit patch` (ApplyUnifiedDiff) gives the tree `git apply` gives
 * (symlinks, type changes, names that are not UTF-8, folders a patch empties), and reverting the
 * operation gives the tree `git apply -R` gives (the one we started from).
 */

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

type Setup = Record<string, string | { link: string }>;

function makeTree(dir: string, files: Setup): void {
  mkdirSync(dir, { recursive: true });
  for (const [rel, v] of Object.entries(files)) {
    const path = Buffer.concat([Buffer.from(`${dir}/`), Buffer.from(rel, "latin1")]);
    mkdirSync(path.subarray(0, path.lastIndexOf(0x2f)), { recursive: true });
    if (typeof v === "string") writeFileSync(path, v);
    else symlinkSync(v.link, path);
  }
}

function twins(files: Setup): { ours: string; git: string } {
  const t = makeTempDir("tw-patch-fidelity-");
  cleanups.push(t.cleanup);
  const ours = join(t.dir, "ours");
  const git = join(t.dir, "git");
  makeTree(ours, files);
  makeTree(git, files);
  return { ours, git };
}

function gitApply(dir: string, patch: string, reverse = false): void {
  writeFileSync(`${dir}.patch`, patch, "latin1");
  execFileSync("git", ["apply", ...(reverse ? ["-R"] : []), `${dir}.patch`], {
    cwd: dir,
    stdio: ["ignore", "pipe", "pipe"],
  });
}

/** Apply with the ledger and with git; compare; revert and `git apply -R`; compare again. */
async function sameAsGit(files: Setup, patch: string): Promise<ReturnType<typeof readDiskTree>> {
  const { ours, git } = twins(files);
  const start = readDiskTree(ours);
  const r = await applyUnifiedDiff({ root: ours }, { diff: patch });
  expect(r.success).toBe(true);
  gitApply(git, patch);
  const after = readDiskTree(ours);
  const expected = readDiskTree(git);
  expect(treeLines(after.tree)).toEqual(treeLines(expected.tree));
  expect(after.dirs).toEqual(expected.dirs);
  const back = await reverseOp({ root: ours }, { snapshotId: r.snapshotId ?? "" });
  expect(back.success).toBe(true);
  gitApply(git, patch, true);
  const reverted = readDiskTree(ours);
  expect(treeLines(reverted.tree)).toEqual(treeLines(start.tree));
  expect(treeLines(readDiskTree(git).tree)).toEqual(treeLines(start.tree));
  expect(reverted.dirs).toEqual(start.dirs);
  return after;
}

describe("edit patch does what git apply does", () => {
  it("new file mode 120000 creates a symlink (not a file holding the target)", async () => {
    const after = await sameAsGit(
      { "a.txt": "a\n" },
      "diff --git a/l b/l\nnew file mode 120000\nindex 0000000..1de5659\n--- /dev/null\n+++ b/l\n@@ -0,0 +1 @@\n+target\n\\ No newline at end of file\n",
    );
    expect(after.tree.get("l")?.mode).toBe("120000");
  });

  it("deletes a symlink and changes a symlink's target", async () => {
    await sameAsGit(
      { l: { link: "old" }, m: { link: "keep" } },
      "diff --git a/l b/l\ndeleted file mode 120000\n--- a/l\n+++ /dev/null\n@@ -1 +0,0 @@\n-old\n\\ No newline at end of file\n" +
        "diff --git a/m b/m\nindex 1..2 120000\n--- a/m\n+++ b/m\n@@ -1 +1 @@\n-keep\n\\ No newline at end of file\n+moved\n\\ No newline at end of file\n",
    );
  });

  it("a type change written as git writes it (delete + create) turns a file into a link and back", async () => {
    await sameAsGit(
      { f: "target" },
      "diff --git a/f b/f\ndeleted file mode 100644\n--- a/f\n+++ /dev/null\n@@ -1 +0,0 @@\n-target\n\\ No newline at end of file\n" +
        "diff --git a/f b/f\nnew file mode 120000\n--- /dev/null\n+++ b/f\n@@ -0,0 +1 @@\n+target\n\\ No newline at end of file\n",
    );
  });

  it('keeps the bytes of a name git quotes as "\\377\\376"', async () => {
    const after = await sameAsGit(
      { "a.txt": "a\n", "\xff\xfe-old": "old\n" },
      'diff --git "a/\\377\\376" "b/\\377\\376"\nnew file mode 100644\n--- /dev/null\n+++ "b/\\377\\376"\n@@ -0,0 +1 @@\n+hi\n' +
        'diff --git "a/\\377\\376-old" "b/\\377\\376-old"\n--- "a/\\377\\376-old"\n+++ "b/\\377\\376-old"\n@@ -1 +1 @@\n-old\n+new\n',
    );
    expect([...after.tree.keys()].sort()).toEqual(["a.txt", "\xff\xfe", "\xff\xfe-old"]);
  });

  it("removes the folders a delete empties, as git does (and a revert brings them back)", async () => {
    await sameAsGit(
      { "d/e/only.txt": "x\n", "keep/a.txt": "a\n", "keep/sub/b.txt": "b\n" },
      "diff --git a/d/e/only.txt b/d/e/only.txt\ndeleted file mode 100644\n--- a/d/e/only.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n" +
        "diff --git a/keep/sub/b.txt b/keep/sub/b.txt\ndeleted file mode 100644\n--- a/keep/sub/b.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-b\n",
    );
  });

  it("removes the folder a rename empties, and creates the new one", async () => {
    await sameAsGit(
      { "old/dir/f.txt": "f\n", "x.txt": "x\n" },
      "diff --git a/old/dir/f.txt b/new/f.txt\nsimilarity index 100%\nrename from old/dir/f.txt\nrename to new/f.txt\n",
    );
  });
});

describe("mode-only type changes (git apply refuses them; the ledger applies them)", () => {
  it("old mode 100644 / new mode 120000 turns the file into a symlink; the reverse turns it back", async () => {
    const { ours } = twins({ f: "target" });
    const r = await applyUnifiedDiff(
      { root: ours },
      { diff: "diff --git a/f b/f\nold mode 100644\nnew mode 120000\n" },
    );
    expect(r.message).not.toMatch(/nothing changed/);
    expect(readlinkSync(join(ours, "f"), "utf8")).toBe("target");
    const back = await applyUnifiedDiff(
      { root: ours },
      { diff: "diff --git a/f b/f\nold mode 120000\nnew mode 100644\n" },
    );
    expect(back.message).not.toMatch(/nothing changed/);
    const tree = readDiskTree(ours).tree;
    expect(tree.get("f")).toEqual({ mode: "100644", data: Buffer.from("target") });
    // And the ledger's own revert of the first step gives the file back as well.
    await reverseOp({ root: ours }, { snapshotId: back.snapshotId ?? "" });
    expect(readlinkSync(join(ours, "f"), "utf8")).toBe("target");
    await reverseOp({ root: ours }, { snapshotId: r.snapshotId ?? "" });
    expect(readDiskTree(ours).tree.get("f")).toEqual({
      mode: "100644",
      data: Buffer.from("target"),
    });
  });
});

describe("names that are not UTF-8 outside patches", () => {
  it("Delete of a folder records and removes a \\377\\376 name; a revert brings its bytes back", async () => {
    const { ours } = twins({ "d/\xff\xfe": "bytes\n", "d/ok.txt": "ok\n", "x.txt": "x\n" });
    const start = readDiskTree(ours);
    const r = await deletePath({ root: ours }, { path: "d" });
    expect(readDiskTree(ours).dirs).toEqual([]);
    await reverseOp({ root: ours }, { snapshotId: r.snapshotId ?? "" });
    const back = readDiskTree(ours);
    expect(treeLines(back.tree)).toEqual(treeLines(start.tree));
    expect(back.dirs).toEqual(start.dirs);
  });
});
