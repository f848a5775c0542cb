import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { DEFAULT_EXCLUDES, isTimewarpError } from "../src/core/index.ts";
import { writeWorkspacePath } from "../src/ledger/apply-operation.ts";
import {
  applyUnifiedDiff,
  applyWholeFileEdit,
  createDirectory,
  deletePath,
  ledgerPaths,
  reverseOp,
} from "../src/ledger/index.ts";
import {
  createObjectStore,
  createSnapshot,
  exportSnapshot,
  readManifest,
  restoreManifest,
  scanWorkspace,
} from "../src/store/index.ts";
import { makeTempDir } from "./helpers/cli.ts";

/**
 * Issue 16 §2: nothing is ever written or deleted outside the workspace. Every write goes through
 * core's safe path, checked at write time: a parent swapped for a symlink to an outside folder,
 * or a path read from a hand-edited record, is UNSAFE_PATH and the outside stays as it was.
 */

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

/** A workspace `ws/` and an outside folder `outside/` side by side in one temp dir. */
function setup(files: Record<string, string> = {}): { root: string; outside: string } {
  const t = makeTempDir("tw-escape-");
  cleanups.push(t.cleanup);
  const root = join(t.dir, "ws");
  const outside = join(t.dir, "outside");
  mkdirSync(root);
  mkdirSync(outside);
  for (const [rel, content] of Object.entries(files)) {
    mkdirSync(join(root, rel, ".."), { recursive: true });
    writeFileSync(join(root, rel), content);
  }
  return { root, outside };
}

/** Replace the workspace directory `rel` by a symlink to `outside` (the old one kept aside). */
function swapForLink(root: string, rel: string, outside: string): void {
  renameSync(join(root, rel), join(root, `${rel}.aside`));
  symlinkSync(outside, join(root, rel));
}

async function codeOf(run: () => unknown): Promise<string | undefined> {
  try {
    await run();
  } catch (error) {
    return isTimewarpError(error) ? error.code : `not a TimewarpError: ${String(error)}`;
  }
  return undefined;
}

function findRecordFile(root: string, id: string): string {
  const found: string[] = [];
  const walk = (dir: string) => {
    for (const d of readdirSync(dir, { withFileTypes: true })) {
      if (d.isDirectory()) walk(join(dir, d.name));
      else if (d.name.endsWith(`_${id}.json`)) found.push(join(dir, d.name));
    }
  };
  walk(ledgerPaths(root).snapshots);
  if (found[0] === undefined) throw new Error(`no record file for ${id}`);
  return found[0];
}

describe("revert never leaves the workspace", () => {
  it("delete case: a created file whose parent is now a symlink is not deleted outside", async () => {
    const { root, outside } = setup({ "sub/keep.txt": "keep\n" });
    const made = await applyWholeFileEdit({ root }, { path: "sub/new.txt", content: "same\n" });
    writeFileSync(join(outside, "new.txt"), "same\n");
    swapForLink(root, "sub", outside);
    expect(await codeOf(() => reverseOp({ root }, { snapshotId: made.snapshotId ?? "" }))).toBe(
      "UNSAFE_PATH",
    );
    expect(readFileSync(join(outside, "new.txt"), "utf8")).toBe("same\n");
  });

  it("create case: a deleted file whose parent is now a symlink is not created outside", async () => {
    const { root, outside } = setup({ "sub/a.txt": "alpha\n", "sub/b.txt": "beta\n" });
    const del = await deletePath({ root }, { path: "sub/a.txt" });
    swapForLink(root, "sub", outside);
    expect(await codeOf(() => reverseOp({ root }, { snapshotId: del.snapshotId ?? "" }))).toBe(
      "UNSAFE_PATH",
    );
    expect(readdirSync(outside)).toEqual([]);
  });

  it("a record hand-edited to ../outside/zz.txt is refused; the outside file stays", async () => {
    const { root, outside } = setup();
    const made = await applyWholeFileEdit({ root }, { path: "zz.txt", content: "zz\n" });
    writeFileSync(join(outside, "zz.txt"), "zz\n");
    const file = findRecordFile(root, made.snapshotId ?? "");
    const text = readFileSync(file, "utf8").replaceAll('"zz.txt"', '"../outside/zz.txt"');
    writeFileSync(file, text);
    for (const force of [false, true]) {
      expect(
        await codeOf(() => reverseOp({ root }, { snapshotId: made.snapshotId ?? "", force })),
      ).toBe("UNSAFE_PATH");
    }
    expect(readFileSync(join(outside, "zz.txt"), "utf8")).toBe("zz\n");
    expect(readFileSync(join(root, "zz.txt"), "utf8")).toBe("zz\n");
  });

  it("a record naming an absolute path or a directory ../x is refused", async () => {
    const { root, outside } = setup();
    const made = await createDirectory({ root }, { path: "d" });
    const file = findRecordFile(root, made.snapshotId ?? "");
    writeFileSync(file, readFileSync(file, "utf8").replaceAll('"d"', JSON.stringify(outside)));
    expect(await codeOf(() => reverseOp({ root }, { snapshotId: made.snapshotId ?? "" }))).toBe(
      "UNSAFE_PATH",
    );
    expect(existsSync(outside)).toBe(true);
  });
});

describe("edits and patches never leave the workspace", () => {
  it("whole-file edit, delete and mkdir below a symlinked parent are UNSAFE_PATH", async () => {
    const { root, outside } = setup({ "sub/x.txt": "x\n" });
    writeFileSync(join(outside, "x.txt"), "outside\n");
    swapForLink(root, "sub", outside);
    expect(
      await codeOf(() => applyWholeFileEdit({ root }, { path: "sub/y.txt", content: "y" })),
    ).toBe("UNSAFE_PATH");
    expect(await codeOf(() => deletePath({ root }, { path: "sub/x.txt" }))).toBe("UNSAFE_PATH");
    expect(await codeOf(() => createDirectory({ root }, { path: "sub/d" }))).toBe("UNSAFE_PATH");
    expect(readdirSync(outside)).toEqual(["x.txt"]);
    expect(readFileSync(join(outside, "x.txt"), "utf8")).toBe("outside\n");
  });

  it("a patch creating or deleting below a symlinked parent is UNSAFE_PATH", async () => {
    const { root, outside } = setup({ "sub/x.txt": "x\n" });
    writeFileSync(join(outside, "x.txt"), "x\n");
    swapForLink(root, "sub", outside);
    const create =
      "diff --git a/sub/n.txt b/sub/n.txt\nnew file mode 100644\n--- /dev/null\n+++ b/sub/n.txt\n@@ -0,0 +1 @@\n+n\n";
    const remove =
      "diff --git a/sub/x.txt b/sub/x.txt\ndeleted file mode 100644\n--- a/sub/x.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n";
    expect(await codeOf(() => applyUnifiedDiff({ root }, { diff: create }))).toBe("UNSAFE_PATH");
    expect(await codeOf(() => applyUnifiedDiff({ root }, { diff: remove }))).toBe("UNSAFE_PATH");
    expect(readdirSync(outside)).toEqual(["x.txt"]);
  });

  it("a parent swapped for a symlink between plan and write is refused at write time", () => {
    const { root, outside } = setup({ "sub/x.txt": "x\n" });
    writeFileSync(join(outside, "x.txt"), "x\n");
    // Planned while `sub` was a real directory …
    const edits = [
      {
        oldPath: "sub/x.txt",
        newPath: null,
        before: { bytes: Buffer.from("x\n"), mode: "100644" as const },
        after: null,
      },
      {
        oldPath: null,
        newPath: "sub/n.txt",
        before: null,
        after: { bytes: Buffer.from("n\n"), mode: "100644" as const },
      },
    ];
    // … then swapped before the write.
    swapForLink(root, "sub", outside);
    for (const e of edits) {
      let code: string | undefined;
      try {
        writeWorkspacePath(root, e.newPath ?? e.oldPath, e.after);
      } catch (error) {
        code = isTimewarpError(error) ? error.code : String(error);
      }
      expect(code).toBe("UNSAFE_PATH");
    }
    expect(readdirSync(outside)).toEqual(["x.txt"]);
  });
});

describe("restore never leaves its target", () => {
  it("a parent that became a symlink after the scan: no write, no delete outside", () => {
    const { root, outside } = setup({ "sub/a.txt": "a\n", "sub/b.txt": "b\n" });
    const snap = createSnapshot(root, { excludes: [...DEFAULT_EXCLUDES] });
    const target = readManifest(root, snap.id);
    writeFileSync(join(root, "sub/b.txt"), "changed\n");
    writeFileSync(join(root, "sub/c.txt"), "new\n");
    const current = scanWorkspace(root, { excludes: [...DEFAULT_EXCLUDES] });
    // (a size no scanned file has: the check before each write sees a change through the link)
    for (const name of ["a.txt", "b.txt", "c.txt"])
      writeFileSync(join(outside, name), "out there\n");
    swapForLink(root, "sub", outside);
    let code: string | undefined;
    try {
      restoreManifest(root, target, {
        store: createObjectStore(join(root, ".timewarp/objects")),
        excludes: [...DEFAULT_EXCLUDES],
        current: { manifest: current.manifest, skipped: current.skipped },
      });
    } catch (error) {
      code = isTimewarpError(error) ? error.code : String(error);
    }
    expect(code).toBe("UNSAFE_PATH");
    expect(readdirSync(outside).sort()).toEqual(["a.txt", "b.txt", "c.txt"]);
    for (const name of ["a.txt", "b.txt", "c.txt"])
      expect(readFileSync(join(outside, name), "utf8")).toBe("out there\n");
  });

  it("create case: a file the target has and the scan lacks is not created outside", () => {
    const { root, outside } = setup({ "sub/a.txt": "a\n", "sub/b.txt": "b\n" });
    const snap = createSnapshot(root, { excludes: [...DEFAULT_EXCLUDES] });
    const target = readManifest(root, snap.id);
    rmSync(join(root, "sub/b.txt"));
    const current = scanWorkspace(root, { excludes: [...DEFAULT_EXCLUDES] });
    swapForLink(root, "sub", outside);
    let code: string | undefined;
    try {
      restoreManifest(root, target, {
        store: createObjectStore(join(root, ".timewarp/objects")),
        excludes: [...DEFAULT_EXCLUDES],
        current: { manifest: current.manifest, skipped: current.skipped },
      });
    } catch (error) {
      code = isTimewarpError(error) ? error.code : String(error);
    }
    expect(code).toBe("UNSAFE_PATH");
    expect(readdirSync(outside)).toEqual([]);
  });

  it("an export writes only inside its target", () => {
    const { root } = setup({ "sub/a.txt": "a\n", "l/x": "x\n" });
    const snap = createSnapshot(root, { excludes: [...DEFAULT_EXCLUDES] });
    const t = makeTempDir("tw-export-");
    cleanups.push(t.cleanup);
    const out = exportSnapshot(root, snap.id, join(t.dir, "e"));
    expect(readFileSync(join(out.dir, "workspace/sub/a.txt"), "utf8")).toBe("a\n");
  });
});
