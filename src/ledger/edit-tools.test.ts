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
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { isTimewarpError } from "../core/index.ts";
import {
  applyEditBlock,
  applyRangedEdit,
  applyUnifiedDiff,
  applyWholeFileEdit,
  createDirectory,
  deletePath,
  getEditHistory,
  readSnapshotDiff,
  recordEdit,
} from "./index.ts";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
function workspace(files: Record<string, string | Buffer> = {}): string {
  const root = mkdtempSync(join(tmpdir(), "tw-ledger-"));
  dirs.push(root);
  for (const [rel, content] of Object.entries(files)) {
    mkdirSync(join(root, rel, ".."), { recursive: true });
    writeFileSync(join(root, rel), content);
  }
  return root;
}

/** Every entry under `dir` (`.timewarp` included) with its type, mode and content hash. */
function treeOf(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (rel: string) => {
    for (const name of readdirSync(join(dir, rel))) {
      const r = rel ? `${rel}/${name}` : name;
      const st = lstatSync(join(dir, r));
      if (st.isDirectory()) {
        out[r] = `dir ${st.mode.toString(8)}`;
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

async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (error) {
    if (isTimewarpError(error)) return error.code;
    throw error;
  }
  return "no error";
}

describe("edit tools", () => {
  it("ApplyEditBlock records one operation in the seed's format, at its dated path", async () => {
    const root = workspace({ "src/auth.ts": "// TODO: Add auth\nexport {};\n" });
    const r = await applyEditBlock(
      { root, sessionId: "session_1" },
      {
        path: "src/auth.ts",
        searchBlock: "// TODO: Add auth\n",
        replaceBlock: "export function authenticate() {}\n",
      },
    );
    expect(r.snapshotId).toMatch(/^[0-9a-z]{10}$/);
    expect(readFileSync(join(root, "src/auth.ts"), "utf8")).toBe(
      "export function authenticate() {}\nexport {};\n",
    );
    const day = readdirSync(join(root, ".timewarp/history/snapshots"), { recursive: true }).map(
      String,
    );
    const file = day.find((f) => f.endsWith(`_${r.snapshotId}.json`));
    expect(file).toMatch(/^\d{4}\/\d{2}\/\d{2}\/\d{6}_[0-9a-z]{10}\.json$/);
    const record = JSON.parse(
      readFileSync(join(root, ".timewarp/history/snapshots", file ?? ""), "utf8"),
    );
    expect(Object.keys(record)).toEqual(
      expect.arrayContaining([
        "id",
        "timestamp",
        "description",
        "tool",
        "affectedFiles",
        "diff",
        "reverseDiff",
        "context",
        "metadata",
      ]),
    );
    expect(record.tool).toBe("ApplyEditBlock");
    expect(record.affectedFiles).toEqual(["src/auth.ts"]);
    expect(record.diff).toContain("--- a/src/auth.ts\n+++ b/src/auth.ts\n");
    expect(record.reverseDiff).toContain(
      "-export function authenticate() {}\n+// TODO: Add auth\n",
    );
    expect(record.context).toMatchObject({
      sessionId: "session_1",
      workspacePath: root,
      toolParams: { searchBlock: "// TODO: Add auth\n" },
    });
    expect(record.metadata).toMatchObject({ filesSizeBytes: 45, linesChanged: 2 });
    expect(typeof record.metadata.executionTimeMs).toBe("number");
    expect(record.files[0].before.oid).toMatch(/^[0-9a-f]{40}$/);
    expect(record.files[0].after.oid).not.toBe(record.files[0].before.oid);
    // both images are in the object store
    for (const oid of [record.files[0].before.oid, record.files[0].after.oid]) {
      expect(existsSync(join(root, ".timewarp/objects", oid.slice(0, 2), oid.slice(2)))).toBe(true);
    }
  });

  it("dryRun of every tool returns previewDiff and writes nothing (tree and history byte for byte)", async () => {
    const root = workspace({ "a.txt": "1\n2\n3\n", "d/b.txt": "b\n" });
    await applyWholeFileEdit({ root }, { path: "a.txt", content: "1\n2\n3\n4\n" }); // a history exists
    const before = treeOf(root);
    const ctx = { root };
    const previews = [
      await applyEditBlock(ctx, {
        path: "a.txt",
        searchBlock: "2\n",
        replaceBlock: "two\n",
        dryRun: true,
      }),
      await applyWholeFileEdit(ctx, { path: "new.txt", content: "x", dryRun: true }),
      await applyRangedEdit(ctx, {
        path: "a.txt",
        startLine: 1,
        endLine: 1,
        content: "one",
        dryRun: true,
      }),
      await applyUnifiedDiff(ctx, {
        diff: "--- a/d/b.txt\n+++ b/d/b.txt\n@@ -1 +1 @@\n-b\n+B\n",
        dryRun: true,
      }),
      await deletePath(ctx, { path: "d", dryRun: true }),
      await createDirectory(ctx, { path: "e/f", dryRun: true }),
    ];
    expect(treeOf(root)).toEqual(before);
    expect(previews.every((p) => p.dryRun && p.snapshotId === undefined)).toBe(true);
    expect(previews[0]?.previewDiff).toContain("-2\n+two\n");
    expect(previews[1]?.previewDiff).toContain("new file mode 100644");
    expect(previews[4]?.previewDiff).toContain("deleted file mode 100644");
    expect(previews[5]?.affectedFiles).toEqual(["e", "e/f"]);
  });

  it("dryRun in a fresh workspace does not even create .timewarp/", async () => {
    const root = workspace({ "a.txt": "a\n" });
    await applyEditBlock(
      { root },
      { path: "a.txt", searchBlock: "a", replaceBlock: "b", dryRun: true },
    );
    expect(existsSync(join(root, ".timewarp"))).toBe(false);
  });

  it("refuses paths outside the workspace, through symlinks, or inside .timewarp/", async () => {
    const root = workspace({ "a.txt": "a\n" });
    const outside = workspace({ "secret.txt": "s\n" });
    symlinkSync(outside, join(root, "link"));
    mkdirSync(join(root, ".timewarp"));
    const ctx = { root };
    expect(await codeOf(applyWholeFileEdit(ctx, { path: "../x.txt", content: "x" }))).toBe(
      "UNSAFE_PATH",
    );
    expect(
      await codeOf(applyWholeFileEdit(ctx, { path: join(outside, "secret.txt"), content: "x" })),
    ).toBe("UNSAFE_PATH");
    expect(await codeOf(applyWholeFileEdit(ctx, { path: "link/secret.txt", content: "x" }))).toBe(
      "UNSAFE_PATH",
    );
    expect(await codeOf(deletePath(ctx, { path: ".timewarp/config.json" }))).toBe("INVALID_INPUT");
    expect(await codeOf(deletePath(ctx, { path: "." }))).toBe("INVALID_INPUT");
    expect(readFileSync(join(outside, "secret.txt"), "utf8")).toBe("s\n");
  });

  it("edit-block failures change nothing and record nothing", async () => {
    const root = workspace({ "a.txt": "x\ny\nx\n" });
    expect(
      await codeOf(
        applyEditBlock({ root }, { path: "a.txt", searchBlock: "x\n", replaceBlock: "z\n" }),
      ),
    ).toBe("EDIT_BLOCK_AMBIGUOUS");
    expect(
      await codeOf(
        applyEditBlock({ root }, { path: "a.txt", searchBlock: "q", replaceBlock: "z" }),
      ),
    ).toBe("EDIT_BLOCK_NOT_FOUND");
    expect(
      await codeOf(
        applyEditBlock({ root }, { path: "nope.txt", searchBlock: "q", replaceBlock: "z" }),
      ),
    ).toBe("NOT_FOUND");
    expect(readFileSync(join(root, "a.txt"), "utf8")).toBe("x\ny\nx\n");
    expect(getEditHistory({ root }).pagination.total).toBe(0);
  });

  it("ApplyUnifiedDiff applies a multi-file git diff (modify, create, delete) as one operation", async () => {
    const root = workspace({ "a.txt": "1\n2\n3\n", "gone.txt": "bye\n" });
    const diff = [
      "diff --git a/a.txt b/a.txt",
      "--- a/a.txt",
      "+++ b/a.txt",
      "@@ -2 +2 @@",
      "-2",
      "+two",
      "diff --git a/new.txt b/new.txt",
      "new file mode 100755",
      "--- /dev/null",
      "+++ b/new.txt",
      "@@ -0,0 +1 @@",
      "+#!/bin/sh",
      "diff --git a/gone.txt b/gone.txt",
      "deleted file mode 100644",
      "--- a/gone.txt",
      "+++ /dev/null",
      "@@ -1 +0,0 @@",
      "-bye",
      "",
    ].join("\n");
    const r = await applyUnifiedDiff({ root }, { diff });
    expect(readFileSync(join(root, "a.txt"), "utf8")).toBe("1\ntwo\n3\n");
    expect(readFileSync(join(root, "new.txt"), "utf8")).toBe("#!/bin/sh\n");
    expect(lstatSync(join(root, "new.txt")).mode & 0o111).not.toBe(0);
    expect(existsSync(join(root, "gone.txt"))).toBe(false);
    expect(r.affectedFiles.sort()).toEqual(["a.txt", "gone.txt", "new.txt"]);
    expect(getEditHistory({ root }).pagination.total).toBe(1);
  });

  it("ApplyUnifiedDiff with one non-applying file writes none of them", async () => {
    const root = workspace({ "a.txt": "1\n2\n3\n", "b.txt": "b\n" });
    const diff =
      "--- a/a.txt\n+++ b/a.txt\n@@ -2 +2 @@\n-2\n+two\n--- a/b.txt\n+++ b/b.txt\n@@ -1 +1 @@\n-not b\n+B\n";
    expect(await codeOf(applyUnifiedDiff({ root }, { diff }))).toBe("DIFF_APPLY_CONFLICT");
    expect(readFileSync(join(root, "a.txt"), "utf8")).toBe("1\n2\n3\n");
  });

  it("Delete of a directory and CreateDirectory record what they did", async () => {
    const root = workspace({ "d/x.txt": "x\n", "d/e/y.txt": "y\n" });
    const del = await deletePath({ root }, { path: "d" });
    expect(existsSync(join(root, "d"))).toBe(false);
    expect(del.affectedFiles.sort()).toEqual(["d", "d/e", "d/e/y.txt", "d/x.txt"]);
    const mk = await createDirectory({ root }, { path: "p/q" });
    expect(lstatSync(join(root, "p/q")).isDirectory()).toBe(true);
    expect(mk.affectedFiles).toEqual(["p", "p/q"]);
    const again = await createDirectory({ root }, { path: "p/q" });
    expect(again.snapshotId).toBeUndefined();
  });

  it("ReadSnapshotDiff returns unified, context and git formats", async () => {
    const root = workspace({ "a.txt": "1\n2\n3\n" });
    const r = await applyEditBlock(
      { root },
      { path: "a.txt", searchBlock: "2", replaceBlock: "two" },
    );
    const id = r.snapshotId ?? "";
    const git = readSnapshotDiff({ root }, { snapshotId: id, format: "git" });
    expect(git.diff).toMatch(
      /^diff --git a\/a.txt b\/a.txt\nindex [0-9a-f]+\.\.[0-9a-f]+ 100644\n/,
    );
    expect(git.snapshot).toMatchObject({ id, tool: "ApplyEditBlock", affectedFiles: ["a.txt"] });
    const unified = readSnapshotDiff({ root }, { snapshotId: id });
    expect(unified.diff).toContain("--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n");
    expect(unified.diff).not.toContain("diff --git");
    const context = readSnapshotDiff({ root }, { snapshotId: id, format: "context" });
    expect(context.diff).toContain("*** 1,3 ****");
    expect(() => readSnapshotDiff({ root }, { snapshotId: "zzzzzzzzzz" })).toThrow(/not found/);
  });

  it("recordEdit records an edit made by someone else, without touching the file", async () => {
    const root = workspace({ "a.txt": "new\n" });
    const r = await recordEdit({
      root,
      file: "a.txt",
      before: "old\n",
      after: "new\n",
      tool: "Edit",
      toolParams: { old_string: "old" },
    });
    expect(r.snapshotId).toMatch(/^[0-9a-z]{10}$/);
    expect(r.diff).toContain("-old\n+new\n");
    expect(readFileSync(join(root, "a.txt"), "utf8")).toBe("new\n");
    const same = await recordEdit({ root, file: "a.txt", before: "x", after: "x", tool: "Edit" });
    expect(same.snapshotId).toBeNull();
    const h = getEditHistory({ root }, { toolFilter: ["Edit"] });
    expect(h.history.map((x) => x.id)).toEqual([r.snapshotId]);
  });

  it("keeps the exec bit through a whole-file edit", async () => {
    const root = workspace({ "run.sh": "#!/bin/sh\n" });
    chmodSync(join(root, "run.sh"), 0o755);
    await applyWholeFileEdit({ root }, { path: "run.sh", content: "#!/bin/sh\necho hi\n" });
    expect(lstatSync(join(root, "run.sh")).mode & 0o777).toBe(0o755);
  });
});
