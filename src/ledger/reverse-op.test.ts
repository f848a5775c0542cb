import { createHash } from "node:crypto";
import {
  chmodSync,
  existsSync,
  lstatSync,
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
import {
  applyEditBlock,
  applyRangedEdit,
  applyUnifiedDiff,
  applyWholeFileEdit,
  createDirectory,
  createMilestone,
  deletePath,
  getEditHistory,
  reverseOp,
} from "./index.ts";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
function workspace(files: Record<string, string | Buffer> = {}): string {
  const root = mkdtempSync(join(tmpdir(), "tw-ledger-rev-"));
  dirs.push(root);
  for (const [rel, content] of Object.entries(files)) {
    mkdirSync(join(root, rel, ".."), { recursive: true });
    writeFileSync(join(root, rel), content);
  }
  return root;
}
function treeOf(dir: string, options: { data?: boolean } = {}): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (rel: string) => {
    for (const name of readdirSync(join(dir, rel))) {
      if (rel === "" && name === ".timewarp" && options.data === false) continue;
      const r = rel ? `${rel}/${name}` : name;
      const st = lstatSync(join(dir, r));
      if (st.isDirectory()) {
        out[r] = "dir";
        walk(r);
      } else
        out[r] = `${st.mode.toString(8)} ${createHash("sha1")
          .update(readFileSync(join(dir, r)))
          .digest("hex")}`;
    }
  };
  walk("");
  return out;
}
const read = (root: string, rel: string) => readFileSync(join(root, rel));
const lines = (n: number, prefix = "line") =>
  Array.from({ length: n }, (_, i) => `${prefix} ${i + 1}\n`).join("");

describe("ReverseOp", () => {
  it("restores bytes exactly: CRLF, no final newline", async () => {
    const original = "alpha\r\nbeta\r\ngamma";
    const root = workspace({ "w.txt": original });
    const r = await applyEditBlock(
      { root },
      { path: "w.txt", searchBlock: "gamma", replaceBlock: "GAMMA\r\ndelta\r\n" },
    );
    expect(read(root, "w.txt").toString()).toBe("alpha\r\nbeta\r\nGAMMA\r\ndelta\r\n");
    const rev = await reverseOp({ root }, { snapshotId: r.snapshotId ?? "" });
    expect(rev.success).toBe(true);
    expect(read(root, "w.txt").toString()).toBe(original);
  });

  it("restores a binary file rewritten by a whole-file edit, and the exec bit", async () => {
    const bin = Buffer.from([0, 1, 2, 255, 254, 0, 10, 13, 10, 0x89, 0x50, 0x4e, 0x47]);
    const root = workspace({ "img.bin": bin, "tool.sh": "#!/bin/sh\necho a\n" });
    chmodSync(join(root, "tool.sh"), 0o755);
    const a = await applyWholeFileEdit(
      { root },
      { path: "img.bin", content: Buffer.from([9, 9, 0, 9]) },
    );
    const b = await applyWholeFileEdit(
      { root },
      { path: "tool.sh", content: "#!/bin/sh\necho b\n" },
    );
    await reverseOp({ root }, { snapshotId: a.snapshotId ?? "" });
    await reverseOp({ root }, { snapshotId: b.snapshotId ?? "" });
    expect(read(root, "img.bin").equals(bin)).toBe(true);
    expect(read(root, "tool.sh").toString()).toBe("#!/bin/sh\necho a\n");
    expect(lstatSync(join(root, "tool.sh")).mode & 0o777).toBe(0o755);
  });

  it("undoes a mode change made by a diff", async () => {
    const root = workspace({ "s.sh": "echo\n" });
    chmodSync(join(root, "s.sh"), 0o644);
    const r = await applyUnifiedDiff(
      { root },
      { diff: "diff --git a/s.sh b/s.sh\nold mode 100644\nnew mode 100755\n" },
    );
    expect(lstatSync(join(root, "s.sh")).mode & 0o111).not.toBe(0);
    await reverseOp({ root }, { snapshotId: r.snapshotId ?? "" });
    expect(lstatSync(join(root, "s.sh")).mode & 0o777).toBe(0o644);
  });

  it("still restores exactly without the object store (reverse diff verified by blob id)", async () => {
    const root = workspace({ "a.txt": lines(30) });
    const r = await applyRangedEdit(
      { root },
      { path: "a.txt", startLine: 10, endLine: 12, content: "X\nY" },
    );
    rmSync(join(root, ".timewarp/objects"), { recursive: true });
    const rev = await reverseOp({ root }, { snapshotId: r.snapshotId ?? "" });
    expect(rev.message).toContain("(exact)");
    expect(read(root, "a.txt").toString()).toBe(lines(30));
  });

  it("reverts an older operation when a later one changed other lines (reverse diff applies strictly)", async () => {
    const root = workspace({ "a.txt": lines(40) });
    const older = await applyEditBlock(
      { root },
      { path: "a.txt", searchBlock: "line 5\n", replaceBlock: "FIVE\n" },
    );
    await applyEditBlock(
      { root },
      { path: "a.txt", searchBlock: "line 30\n", replaceBlock: "THIRTY\n" },
    );
    const rev = await reverseOp({ root }, { snapshotId: older.snapshotId ?? "" });
    expect(rev.success).toBe(true);
    expect(rev.message).toContain("reverse-diff");
    expect(read(root, "a.txt").toString()).toBe(lines(40).replace("line 30\n", "THIRTY\n"));
    expect(rev.newSnapshotId).toMatch(/^[0-9a-z]{10}$/);
  });

  it("refuses when the same lines changed since: conflicts listed, file untouched", async () => {
    const root = workspace({ "a.txt": lines(20) });
    const r = await applyEditBlock(
      { root },
      { path: "a.txt", searchBlock: "line 7\n", replaceBlock: "SEVEN\n" },
    );
    writeFileSync(join(root, "a.txt"), lines(20).replace("line 7\n", "seven, again\n"));
    const before = treeOf(root);
    const rev = await reverseOp({ root }, { snapshotId: r.snapshotId ?? "" });
    expect(rev.success).toBe(false);
    expect(rev.conflicts?.[0]).toMatch(/^a\.txt: hunk 1 @@ -4,7 \+4,7 @@/);
    expect(rev.conflictDetails?.[0]).toMatchObject({
      operationId: r.snapshotId,
      path: "a.txt",
      hunk: 1,
    });
    expect(treeOf(root)).toEqual(before);
  });

  it("never applies at the wrong place: the block moved and now exists twice", async () => {
    const root = workspace({ "a.txt": lines(12) });
    const r = await applyEditBlock(
      { root },
      { path: "a.txt", searchBlock: "line 6\n", replaceBlock: "SIX\n" },
    );
    // Someone else inserts lines on top and duplicates the edited region further down.
    const now = read(root, "a.txt").toString();
    const block = "line 3\nline 4\nline 5\nSIX\nline 7\nline 8\nline 9\n";
    writeFileSync(join(root, "a.txt"), `new 1\nnew 2\n${now}${block}`);
    const before = treeOf(root);
    const rev = await reverseOp({ root }, { snapshotId: r.snapshotId ?? "" });
    expect(rev.success).toBe(false);
    expect(treeOf(root)).toEqual(before);
    // force restores the stored pre-image exactly
    const forced = await reverseOp({ root }, { snapshotId: r.snapshotId ?? "", force: true });
    expect(forced.success).toBe(true);
    expect(read(root, "a.txt").toString()).toBe(lines(12));
  });

  it("targetSnapshot reverts every later operation, newest first, all or nothing", async () => {
    const root = workspace({ "a.txt": lines(10), "b.txt": lines(10, "b") });
    const t = await applyEditBlock(
      { root },
      { path: "a.txt", searchBlock: "line 1\n", replaceBlock: "ONE\n" },
    );
    const x = await applyEditBlock(
      { root },
      { path: "a.txt", searchBlock: "line 9\n", replaceBlock: "NINE\n" },
    );
    const y = await applyEditBlock(
      { root },
      { path: "b.txt", searchBlock: "b 2\n", replaceBlock: "B2\n" },
    );
    const z = await applyEditBlock(
      { root },
      { path: "a.txt", searchBlock: "NINE\n", replaceBlock: "NINE!\n" },
    );
    // One conflict (b.txt edited by hand where y changed it) → nothing changes, a.txt included.
    writeFileSync(join(root, "b.txt"), lines(10, "b").replace("b 2\n", "hand\n"));
    const before = treeOf(root);
    const refused = await reverseOp(
      { root },
      { snapshotId: z.snapshotId ?? "", targetSnapshot: t.snapshotId ?? "" },
    );
    expect(refused.success).toBe(false);
    expect(refused.revertedIds).toEqual([z.snapshotId, y.snapshotId, x.snapshotId]);
    expect(treeOf(root)).toEqual(before);
    // Put b.txt back as y left it: now the chain reverts and a.txt is back to t's state.
    writeFileSync(join(root, "b.txt"), lines(10, "b").replace("b 2\n", "B2\n"));
    const ok = await reverseOp(
      { root },
      { snapshotId: z.snapshotId ?? "", targetSnapshot: t.snapshotId ?? "" },
    );
    expect(ok.success).toBe(true);
    expect(read(root, "a.txt").toString()).toBe(lines(10).replace("line 1\n", "ONE\n"));
    expect(read(root, "b.txt").toString()).toBe(lines(10, "b"));
    // the rollback is one operation of its own, which can itself be reverted
    const again = await reverseOp({ root }, { snapshotId: ok.newSnapshotId ?? "" });
    expect(again.success).toBe(true);
    expect(read(root, "a.txt").toString()).toContain("NINE!\n");
  });

  it("dryRun plans and reports but writes nothing", async () => {
    const root = workspace({ "a.txt": lines(5) });
    const r = await applyEditBlock(
      { root },
      { path: "a.txt", searchBlock: "line 2\n", replaceBlock: "TWO\n" },
    );
    const before = treeOf(root);
    const dry = await reverseOp({ root }, { snapshotId: r.snapshotId ?? "", dryRun: true });
    expect(dry.success).toBe(true);
    expect(dry.reversedDiff).toContain("-TWO\n+line 2\n");
    expect(dry.newSnapshotId).toBeUndefined();
    expect(treeOf(root)).toEqual(before);
  });

  it("reverts a directory delete, a create and a mkdir", async () => {
    const root = workspace({ "d/x.txt": "x\n", "d/e/y.txt": "y\n" });
    chmodSync(join(root, "d/x.txt"), 0o755);
    const before = treeOf(root, { data: false });
    const del = await deletePath({ root }, { path: "d" });
    expect(existsSync(join(root, "d"))).toBe(false);
    await reverseOp({ root }, { snapshotId: del.snapshotId ?? "" });
    expect(treeOf(root, { data: false })).toEqual(before);
    const mk = await createDirectory({ root }, { path: "p/q/r" });
    const cr = await applyWholeFileEdit({ root }, { path: "p/q/r/new.txt", content: "n" });
    // reverting the mkdir alone conflicts: the directory is not empty
    const refused = await reverseOp({ root }, { snapshotId: mk.snapshotId ?? "" });
    expect(refused.success).toBe(false);
    expect(refused.conflicts?.join("\n")).toContain("not empty");
    expect((await reverseOp({ root }, { snapshotId: cr.snapshotId ?? "" })).success).toBe(true);
    expect(existsSync(join(root, "p/q/r/new.txt"))).toBe(false);
    expect((await reverseOp({ root }, { snapshotId: mk.snapshotId ?? "" })).success).toBe(true);
    expect(existsSync(join(root, "p"))).toBe(false);
    expect(treeOf(root, { data: false })).toEqual(before);
  });

  it("reverting a file created in new folders removes the folders too", async () => {
    const root = workspace({ "keep.txt": "k\n" });
    const before = treeOf(root, { data: false });
    const r = await applyWholeFileEdit({ root }, { path: "n/m/new.txt", content: "x\n" });
    expect(r.affectedFiles).toEqual(["n/m/new.txt", "n", "n/m"]);
    await reverseOp({ root }, { snapshotId: r.snapshotId ?? "" });
    expect(treeOf(root, { data: false })).toEqual(before);
  });

  it("reverts a whole milestone", async () => {
    const root = workspace({ "a.txt": lines(20), "b.txt": "b\n" });
    const one = await applyEditBlock(
      { root },
      { path: "a.txt", searchBlock: "line 2\n", replaceBlock: "2\n" },
    );
    const other = await applyEditBlock(
      { root },
      { path: "a.txt", searchBlock: "line 15\n", replaceBlock: "15\n" },
    );
    const two = await applyWholeFileEdit({ root }, { path: "b.txt", content: "B\n" });
    const m = await createMilestone(
      { root },
      { title: "m", description: "d", snapshotIds: [one.snapshotId ?? "", two.snapshotId ?? ""] },
    );
    const rev = await reverseOp({ root }, { snapshotId: m.milestoneId });
    expect(rev.conflicts).toBeUndefined();
    expect(rev.success).toBe(true);
    expect(rev.revertedIds).toEqual([two.snapshotId, one.snapshotId]);
    expect(read(root, "a.txt").toString()).toBe(lines(20).replace("line 15\n", "15\n"));
    expect(read(root, "b.txt").toString()).toBe("b\n");
    expect(other.snapshotId).toBeDefined();
    expect(getEditHistory({ root }, { toolFilter: ["ReverseOp"] }).pagination.total).toBe(1);
    expect(existsSync(join(root, "a.txt"))).toBe(true);
  });
});
