import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { gitBlobId } from "../src/core/index.ts";
import { createPatch } from "../src/diff/index.ts";
import {
  applyUnifiedDiff,
  applyWholeFileEdit,
  collectLedgerOids,
  getEditHistory,
  type OperationRecord,
  OperationRecordSchema,
  reverseOp,
} from "../src/ledger/index.ts";
import { createObjectStore } from "../src/store/index.ts";
import { recover } from "../src/timemachine/index.ts";
import { makeTempDir } from "./helpers/cli.ts";
import { buildLedgerChild, runLedgerChild, startLedgerLoop } from "./helpers/ledger-child.ts";
import { canMountTmpfs, mountSmallTmpfs } from "./helpers/small-fs.ts";
import { readTree, treeDiff } from "./helpers/timemachine-fixtures.ts";

/**
 * Issue 16 class 3: a multi-file ledger operation is all or nothing — a failure part-way rolls
 * back, a crash at any step is completed by the next writer or `recover`. Never "file changed,
 * no record".
 */

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.splice(0).reverse()) c();
});

function workspace(prefix = "tw-wal-"): string {
  const t = makeTempDir(prefix);
  cleanups.push(t.cleanup);
  return t.dir;
}

let child = "";
let removeChild: () => void = () => {};
beforeAll(() => {
  const t = makeTempDir("tw-wal-child-");
  removeChild = t.cleanup;
  child = buildLedgerChild(t.dir);
}, 60_000);
afterAll(() => removeChild());

type Image = { oid: string; mode: string };

/** Every regular file of the workspace (not `.timewarp/`) as blob id and git mode. */
function fileImages(root: string): Map<string, Image> {
  const out = new Map<string, Image>();
  const walk = (rel: string) => {
    for (const name of readdirSync(join(root, rel)).sort()) {
      if (rel === "" && name === ".timewarp") continue;
      const r = rel === "" ? name : `${rel}/${name}`;
      const st = lstatSync(join(root, r));
      if (st.isDirectory()) walk(r);
      else
        out.set(r, {
          oid: gitBlobId(readFileSync(join(root, r))),
          mode: (st.mode & 0o111) !== 0 ? "100755" : "100644",
        });
    }
  };
  walk("");
  return out;
}

/** Every recorded operation, oldest first (the index's order). */
function recordedOperations(root: string): OperationRecord[] {
  const dir = join(root, ".timewarp/history/snapshots");
  const byId = new Map<string, OperationRecord>();
  if (existsSync(dir)) {
    for (const f of readdirSync(dir, { recursive: true }).map(String)) {
      if (!f.endsWith(".json") || f.includes(".tw-tmp-")) continue;
      const r = OperationRecordSchema.parse(JSON.parse(readFileSync(join(dir, f), "utf8")));
      byId.set(r.id, r);
    }
  }
  const ids: string[] = [];
  let cursor: string | undefined;
  for (;;) {
    const page = getEditHistory({ root }, { limit: 100, ...(cursor ? { cursor } : {}) });
    ids.push(...page.history.map((h) => h.id));
    if (!page.pagination.hasMore || page.pagination.nextCursor === undefined) break;
    cursor = page.pagination.nextCursor;
  }
  expect(ids.length, "every record has its index line").toBe(byId.size);
  return ids.reverse().map((id) => {
    const r = byId.get(id);
    if (r === undefined) throw new Error(`index names ${id}, which has no record`);
    return r;
  });
}

/**
 * The paths where the workspace differs from what the ledger says it should be (the initial
 * files, then each recorded operation's post-images in order): unrecorded changes. Also checks
 * that nothing is pending, no temp file is left and every pre-image is in the store.
 */
function unrecordedChanges(root: string, initial: Map<string, Image>): string[] {
  expect(existsSync(join(root, ".timewarp/history/journal.json")), "no pending journal").toBe(
    false,
  );
  const expected = new Map(initial);
  const store = createObjectStore(join(root, ".timewarp/objects"));
  for (const op of recordedOperations(root)) {
    for (const f of op.files) {
      if (f.before !== null) expect(store.has(f.before.oid), `pre-image of ${op.id}`).toBe(true);
      if (f.oldPath !== null) expected.delete(f.oldPath);
      if (f.newPath !== null && f.after !== null)
        expected.set(f.newPath, { oid: f.after.oid, mode: f.after.mode });
    }
  }
  const actual = fileImages(root);
  const out: string[] = [];
  for (const [p, e] of expected) {
    const a = actual.get(p);
    if (a === undefined) out.push(`missing ${p}`);
    else if (a.oid !== e.oid || a.mode !== e.mode) out.push(`differs ${p}`);
  }
  for (const p of actual.keys()) if (!expected.has(p)) out.push(`extra ${p}`);
  return out;
}

/** a.txt modified, b.txt deleted, c.sh modified (mode kept 755), new/d.txt created in a new dir. */
function threeFileWorkspace(root = workspace()): { root: string; diff: string } {
  writeFileSync(join(root, "a.txt"), "alpha\n");
  writeFileSync(join(root, "b.txt"), "bravo\n");
  writeFileSync(join(root, "c.sh"), "#!/bin/sh\necho charlie\n");
  chmodSync(join(root, "c.sh"), 0o755);
  const diff = createPatch([
    {
      oldPath: "a.txt",
      newPath: "a.txt",
      before: Buffer.from("alpha\n"),
      after: Buffer.from("ALPHA\n"),
    },
    { oldPath: "b.txt", newPath: null, before: Buffer.from("bravo\n"), after: null },
    {
      oldPath: "c.sh",
      newPath: "c.sh",
      before: Buffer.from("#!/bin/sh\necho charlie\n"),
      after: Buffer.from("#!/bin/sh\necho CHARLIE\n"),
      oldMode: "100755",
      newMode: "100755",
    },
    { oldPath: null, newPath: "new/d.txt", before: null, after: Buffer.from("delta\n") },
  ]);
  return { root, diff };
}

function expectNoRecord(root: string): void {
  expect(getEditHistory({ root }).pagination.total).toBe(0);
  expect(existsSync(join(root, ".timewarp/history/snapshots"))).toBe(false);
  expect(existsSync(join(root, ".timewarp/history/journal.json"))).toBe(false);
}

describe("a multi-file operation that fails part-way changes nothing", () => {
  it("a patch whose 3rd file cannot be written (EISDIR): dry-run predicts it, the real run changes nothing and records nothing", async () => {
    const root = workspace();
    writeFileSync(join(root, "a.txt"), "a\n");
    writeFileSync(join(root, "b.txt"), "b\n");
    const before = readTree(root);
    // `d` as a file and `d/e` under it: the third file would hit EISDIR (or ENOTDIR).
    const diff = createPatch([
      { oldPath: "a.txt", newPath: "a.txt", before: Buffer.from("a\n"), after: Buffer.from("A\n") },
      { oldPath: "b.txt", newPath: "b.txt", before: Buffer.from("b\n"), after: Buffer.from("B\n") },
      { oldPath: null, newPath: "d", before: null, after: Buffer.from("d\n") },
      { oldPath: null, newPath: "d/e", before: null, after: Buffer.from("e\n") },
    ]);
    await expect(applyUnifiedDiff({ root }, { diff, dryRun: true })).rejects.toMatchObject({
      code: "NOT_A_DIRECTORY",
    });
    await expect(applyUnifiedDiff({ root }, { diff })).rejects.toMatchObject({
      code: "NOT_A_DIRECTORY",
    });
    expect(treeDiff(readTree(root), before)).toEqual([]);
    expectNoRecord(root);
  });

  it("dry-run predicts a parent that is a file, and a target that is a directory", async () => {
    const root = workspace();
    writeFileSync(join(root, "a.txt"), "a\n");
    mkdirSync(join(root, "dir"));
    writeFileSync(join(root, "dir/x"), "x\n");
    const before = readTree(root);
    const underFile = createPatch([
      { oldPath: "a.txt", newPath: "a.txt", before: Buffer.from("a\n"), after: Buffer.from("A\n") },
      { oldPath: null, newPath: "a.txt/inner", before: null, after: Buffer.from("i\n") },
    ]);
    for (const dryRun of [true, false]) {
      await expect(applyUnifiedDiff({ root }, { diff: underFile, dryRun })).rejects.toMatchObject({
        code: "NOT_A_DIRECTORY",
      });
    }
    const onDirectory = createPatch([
      { oldPath: "a.txt", newPath: "a.txt", before: Buffer.from("a\n"), after: Buffer.from("A\n") },
      { oldPath: null, newPath: "dir", before: null, after: Buffer.from("i\n") },
    ]);
    for (const dryRun of [true, false]) {
      await expect(applyUnifiedDiff({ root }, { diff: onDirectory, dryRun })).rejects.toThrow(
        /dir/,
      );
    }
    expect(treeDiff(readTree(root), before)).toEqual([]);
    expectNoRecord(root);
  });

  it("a patch that replaces a file by a directory applies (deletions first), and its revert restores the file", async () => {
    const root = workspace();
    writeFileSync(join(root, "d"), "d\n");
    const before = readTree(root);
    const diff = createPatch([
      { oldPath: "d", newPath: null, before: Buffer.from("d\n"), after: null },
      { oldPath: null, newPath: "d/e", before: null, after: Buffer.from("e\n") },
    ]);
    expect((await applyUnifiedDiff({ root }, { diff, dryRun: true })).success).toBe(true);
    const r = await applyUnifiedDiff({ root }, { diff });
    expect(readFileSync(join(root, "d/e"), "utf8")).toBe("e\n");
    const back = await reverseOp({ root }, { snapshotId: String(r.snapshotId) });
    expect(back.success).toBe(true);
    expect(treeDiff(readTree(root), before)).toEqual([]);
  });

  it("a patch that hits ENOSPC on its 3rd file rolls the first two back (injected fault)", async () => {
    const { root, diff } = threeFileWorkspace();
    const before = readTree(root);
    const patch = join(workspace("tw-wal-patch-"), "p.diff");
    writeFileSync(patch, diff);
    const r = await runLedgerChild(child, ["patch", root, patch], {
      TIMEWARP_ENOSPC_AT: "ledger:file:3",
    });
    expect(r.error?.code).toBe("DISK_FULL");
    expect(r.error?.message).toMatch(/rolled back, nothing was changed/);
    expect(treeDiff(readTree(root), before)).toEqual([]);
    expectNoRecord(root);
  });

  it("revert --to that hits ENOSPC part-way rolls back too, and the history stays as it was", async () => {
    const { root, diff } = threeFileWorkspace();
    const first = await applyUnifiedDiff({ root }, { diff });
    writeFileSync(join(root, "e.txt"), "echo\n");
    const second = await applyUnifiedDiff(
      { root },
      {
        diff: createPatch([
          {
            oldPath: "a.txt",
            newPath: "a.txt",
            before: Buffer.from("ALPHA\n"),
            after: Buffer.from("ALPHA 2\n"),
          },
          {
            oldPath: "e.txt",
            newPath: "e.txt",
            before: Buffer.from("echo\n"),
            after: Buffer.from("ECHO\n"),
          },
        ]),
      },
    );
    const base = await applyUnifiedDiff(
      { root },
      {
        diff: createPatch([
          { oldPath: null, newPath: "z.txt", before: null, after: Buffer.from("z\n") },
        ]),
      },
    );
    expect(first.snapshotId && second.snapshotId && base.snapshotId).toBeTruthy();
    const before = readTree(root);
    const ops = getEditHistory({ root }).pagination.total;
    // every operation after `first`, newest first: base, second
    const r = await runLedgerChild(
      child,
      ["revert", root, String(base.snapshotId), String(first.snapshotId)],
      { TIMEWARP_ENOSPC_AT: "ledger:file:2" },
    );
    expect(r.error?.code).toBe("DISK_FULL");
    expect(treeDiff(readTree(root), before)).toEqual([]);
    expect(getEditHistory({ root }).pagination.total).toBe(ops);
    expect(existsSync(join(root, ".timewarp/history/journal.json"))).toBe(false);
  });

  it.skipIf(!canMountTmpfs)(
    "a patch that hits a real ENOSPC (tiny tmpfs) on its 3rd file changes nothing and records nothing",
    async () => {
      const fs = mountSmallTmpfs(1024);
      if (fs === null) return;
      cleanups.push(fs.unmount);
      const root = join(fs.dir, "ws");
      mkdirSync(root);
      writeFileSync(join(root, "a.txt"), "a\n");
      writeFileSync(join(root, "b.txt"), "b\n");
      writeFileSync(join(root, "c.txt"), "c\n");
      // 600 KiB: its object fits in the store, but a second copy (the workspace's temp file)
      // does not fit beside it on a 1 MiB file system.
      const big = Buffer.from("0123456789abcdef".repeat(600 * 64));
      const before = readTree(root);
      const diff = createPatch([
        {
          oldPath: "a.txt",
          newPath: "a.txt",
          before: Buffer.from("a\n"),
          after: Buffer.from("A\n"),
        },
        {
          oldPath: "b.txt",
          newPath: "b.txt",
          before: Buffer.from("b\n"),
          after: Buffer.from("B\n"),
        },
        { oldPath: "c.txt", newPath: "c.txt", before: Buffer.from("c\n"), after: big },
      ]);
      const err = await applyUnifiedDiff({ root }, { diff }).then(
        () => null,
        (e: unknown) => e as { code?: string; message?: string },
      );
      expect(err?.code).toBe("DISK_FULL");
      expect(treeDiff(readTree(root), before)).toEqual([]);
      expectNoRecord(root);
      // and the ledger still works once there is room
      const ok = await applyUnifiedDiff(
        { root },
        {
          diff: createPatch([
            {
              oldPath: "a.txt",
              newPath: "a.txt",
              before: Buffer.from("a\n"),
              after: Buffer.from("A\n"),
            },
          ]),
        },
      );
      expect(ok.snapshotId).toBeDefined();
      expect(readFileSync(join(root, "a.txt"), "utf8")).toBe("A\n");
    },
    60_000,
  );
});

/** The crash points of one operation, with what a recovery must make of each. */
const CRASHES: {
  point: string;
  env: Record<string, string>;
  expect: "applied" | "undone";
  /** What `recover` reports for the ledger. */
  outcome: "rolled_back" | "rolled_forward" | "completed";
}[] = [
  {
    point: "after the journal",
    env: { TIMEWARP_CRASH_AT: "ledger:journal:1" },
    expect: "undone",
    outcome: "rolled_back",
  },
  {
    point: "after the 1st of 4 files",
    env: { TIMEWARP_CRASH_AT: "ledger:file:1" },
    expect: "undone",
    outcome: "rolled_back",
  },
  {
    point: "after the 3rd of 4 files",
    env: { TIMEWARP_CRASH_AT: "ledger:file:3" },
    expect: "undone",
    outcome: "rolled_back",
  },
  {
    point: "after all files, before the record",
    env: { TIMEWARP_CRASH_AT: "ledger:files:1" },
    expect: "applied",
    outcome: "rolled_forward",
  },
  {
    point: "after the record, before clearing the journal",
    env: { TIMEWARP_CRASH_AT: "ledger:record:1" },
    expect: "applied",
    outcome: "completed",
  },
  {
    point: "in the middle of rolling back a failure",
    env: { TIMEWARP_ENOSPC_AT: "ledger:file:3", TIMEWARP_CRASH_AT: "ledger:rollback:2" },
    expect: "undone",
    outcome: "rolled_back",
  },
];

describe("kill -9 at each step of a multi-file operation", () => {
  for (const c of CRASHES) {
    for (const by of ["recover", "the next writer"] as const) {
      it(`${c.point}: ${by} leaves workspace and ledger in agreement (${c.expect})`, async () => {
        const { root, diff } = threeFileWorkspace();
        const initial = fileImages(root);
        const before = readTree(root);
        const patch = join(workspace("tw-wal-patch-"), "p.diff");
        writeFileSync(patch, diff);
        const crashed = await runLedgerChild(child, ["patch", root, patch], c.env);
        expect(crashed.signal).toBe("SIGKILL");
        expect(existsSync(join(root, ".timewarp/history/journal.json"))).toBe(true);
        // gc keeps the pending operation's images
        const pending = collectLedgerOids(root);
        expect(pending.has(gitBlobId(Buffer.from("alpha\n")))).toBe(true);

        // (the crashed process is gone; what finishes its operation runs here, in this process)
        if (by === "recover") {
          const r = recover({ root });
          expect(r.outcome).toBe("ledger_only");
          expect(r.ledger).toMatchObject({ outcome: c.outcome });
        } else {
          const r = await applyWholeFileEdit({ root }, { path: "other.txt", content: "other\n" });
          expect(r.success).toBe(true);
          initial.set("other.txt", { oid: gitBlobId(Buffer.from("other\n")), mode: "100644" });
        }
        expect(unrecordedChanges(root, initial)).toEqual([]);
        const ops = recordedOperations(root).filter((o) => o.tool === "ApplyUnifiedDiff");
        if (c.expect === "undone") {
          expect(ops).toHaveLength(0);
          if (by === "recover") expect(treeDiff(readTree(root), before)).toEqual([]);
          expect(existsSync(join(root, "new")), "the created directory is gone").toBe(false);
        } else {
          expect(ops).toHaveLength(1);
          expect(readFileSync(join(root, "new/d.txt"), "utf8")).toBe("delta\n");
          // the recorded operation reverts to the exact pre-images (bytes and modes)
          const op = ops[0] as OperationRecord;
          const r = await reverseOp({ root }, { snapshotId: op.id });
          expect(r.success).toBe(true);
          if (by === "recover") expect(treeDiff(readTree(root), before)).toEqual([]);
          expect(readFileSync(join(root, "b.txt"), "utf8")).toBe("bravo\n");
          expect(lstatSync(join(root, "c.sh")).mode & 0o777).toBe(0o755);
        }
        expect(readdirSync(root).filter((n) => n.includes(".tw-tmp-"))).toEqual([]);
      }, 60_000);
    }
  }

  it("a revert killed after its 1st file is completed by recover, and nothing is lost", async () => {
    const { root, diff } = threeFileWorkspace();
    const initial = fileImages(root);
    const applied = await applyUnifiedDiff({ root }, { diff });
    const patched = readTree(root);
    const crashed = await runLedgerChild(child, ["revert", root, String(applied.snapshotId)], {
      TIMEWARP_CRASH_AT: "ledger:file:1",
    });
    expect(crashed.signal).toBe("SIGKILL");
    const r = await runLedgerChild(child, ["recover", root]);
    expect(r.ok?.ledger).toMatchObject({ outcome: "rolled_back" });
    expect(treeDiff(readTree(root), patched)).toEqual([]);
    expect(unrecordedChanges(root, initial)).toEqual([]);
    // the revert can simply be run again
    const again = await reverseOp({ root }, { snapshotId: String(applied.snapshotId) });
    expect(again.success).toBe(true);
    expect(unrecordedChanges(root, initial)).toEqual([]);
    expect(fileImages(root)).toEqual(initial);
  }, 60_000);
});

describe("random kill -9 while editing", () => {
  it("32 kills at random moments leave 0 unrecorded changes", async () => {
    const root = workspace();
    mkdirSync(join(root, "sub/deep"), { recursive: true });
    writeFileSync(join(root, "a.txt"), "a\n");
    writeFileSync(join(root, "sub/c.txt"), "c\n");
    writeFileSync(join(root, "keep.txt"), "never touched\n");
    const initial = fileImages(root);
    let seed = 12345;
    const rand = () => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed / 2147483648;
    };
    const problems: string[] = [];
    for (let round = 0; round < 32; round++) {
      const loop = startLedgerLoop(child, root, round + 1);
      await loop.ready;
      // after 0-2 finished operations (so kills land inside operations on a slow machine as on
      // a fast one), then 0-60 ms into the next
      await loop.finished(Math.floor(rand() * 3));
      await new Promise((r) => setTimeout(r, Math.floor(rand() * 60)));
      loop.process.kill("SIGKILL");
      await loop.exited;
      // the child really ran (how far it got before the kill is left to chance)
      expect(loop.output()).toContain("ready\n");
      try {
        recover({ root });
      } catch (error) {
        if ((error as { code?: string }).code !== "NOTHING_TO_RECOVER") throw error;
      }
      const wrong = unrecordedChanges(root, initial);
      if (wrong.length > 0) problems.push(`round ${round}: ${wrong.join(", ")}`);
    }
    expect(problems).toEqual([]);
    expect(readFileSync(join(root, "keep.txt"), "utf8")).toBe("never touched\n");
    // every recorded operation still reverts: the newest, back to its exact pre-images
    const ops = recordedOperations(root);
    const last = ops[ops.length - 1];
    if (last !== undefined) {
      const r = await reverseOp({ root }, { snapshotId: last.id, force: true });
      expect(r.success).toBe(true);
      const now = fileImages(root);
      for (const f of last.files) {
        if (f.oldPath === null) continue;
        expect(now.get(f.oldPath)?.oid).toBe(f.before?.oid);
      }
    }
  }, 180_000);
});
