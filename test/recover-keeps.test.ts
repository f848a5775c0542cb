import { spawnSync } from "node:child_process";
import { cpSync, existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readEvents } from "../src/core/index.ts";
import {
  readStatus,
  recover,
  returnToPresent,
  startSession,
  travel,
} from "../src/timemachine/index.ts";
import { rowOfEvent } from "../src/ui/api/timeline-rows.ts";
import { makeTempDir, runCli } from "./helpers/cli.ts";
import { tempDirs } from "./helpers/temp-dirs.ts";
import { buildTimemachineChild } from "./helpers/timemachine-child.ts";
import {
  buildPastState,
  mutateToPresent,
  readTree,
  type Tree,
  treeDiff,
  writeFiles,
} from "./helpers/timemachine-fixtures.ts";

/**
 * `recover` never overwrites what it has not kept: whatever the workspace holds that neither the
 * backup of the present nor the snapshot holds (a write during a return, an edit while a travel
 * or return lay interrupted) is kept first as a git-format patch that `git apply` in the present
 * brings back byte for byte — a binary file, a deleted file, a new directory, a text edit.
 */

const tempDir = tempDirs("tw-keeps-");

let child: string;
let childDir: { dir: string; cleanup: () => void } | undefined;
beforeAll(() => {
  childDir = makeTempDir("tw-keeps-child-");
  child = buildTimemachineChild(childDir.dir);
});
afterAll(() => childDir?.cleanup());

const BINARY = Buffer.from([0, 1, 2, 255, 254, 0, 10, 13, 0x89, 0x50, 0x4e, 0x47, 0, 7]);

/** The late writes: a binary file over a text one, a deletion, a new directory, a text edit. */
function writeLate(root: string): void {
  writeFiles(root, {
    "src/m4/file4.txt": { content: BINARY },
    "late/deep/new.txt": "written during the return\n",
    "src/m5/file5.txt": `${readFileSync(join(root, "src/m5/file5.txt"), "utf8")}one more line\n`,
  });
  rmSync(join(root, "src/m3/file3.txt"));
}

/** A workspace in the present (A) whose session snapshot (B) holds an older state. */
async function prepared(bulk = 0): Promise<{ root: string; snapshotId: string; present: Tree }> {
  const root = join(tempDir(), "ws");
  buildPastState(root, 20);
  const files = (what: string) =>
    Object.fromEntries(
      Array.from({ length: bulk }, (_, i) => [`bulk/f${i}.txt`, `${what} ${i}\n`]),
    );
  writeFiles(root, files("past"));
  const { snapshot_id } = await startSession({ root, sessionId: "keeps" });
  mutateToPresent(root, 20);
  writeFiles(root, files("present"));
  // the present as it was, to apply the kept patches onto
  cpSync(root, `${root}-present`, { recursive: true, verbatimSymlinks: true });
  rmSync(join(`${root}-present`, ".timewarp"), { recursive: true, force: true });
  return { root, snapshotId: snapshot_id, present: readTree(root) };
}

/** The present with `patches` applied by git, as a tree. */
function presentWith(root: string, patches: string[]): Tree {
  const copy = `${root}-apply-${Math.random().toString(36).slice(2)}`;
  cpSync(`${root}-present`, copy, { recursive: true, verbatimSymlinks: true });
  for (const patch of patches) {
    const r = spawnSync("git", ["apply", patch], { cwd: copy, encoding: "utf8" });
    expect(r.status, `git apply ${patch}: ${r.stderr}`).toBe(0);
  }
  const tree = readTree(copy);
  rmSync(copy, { recursive: true, force: true });
  return tree;
}

/** What the present would be had the late writes (and `more`) landed on it. */
function presentWithLate(
  root: string,
  more: Record<string, string> = {},
  late: (root: string) => void = writeLate,
): Tree {
  const copy = `${root}-late`;
  rmSync(copy, { recursive: true, force: true });
  cpSync(`${root}-present`, copy, { recursive: true, verbatimSymlinks: true });
  late(copy);
  writeFiles(copy, more);
  const tree = readTree(copy);
  rmSync(copy, { recursive: true, force: true });
  return tree;
}

function keptPatches(root: string): string[] {
  const dir = join(root, ".timewarp", "recover-kept");
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((n) => n.endsWith(".patch"))
    .sort()
    .map((n) => join(dir, n));
}

/** Run one time-machine operation in a child; `crashAt` kills it there (SIGKILL). */
function runChild(op: string, root: string, crashAt?: string, id = ""): string | null {
  const env = { ...process.env };
  if (crashAt) env.TIMEWARP_CRASH_AT = crashAt;
  else delete env.TIMEWARP_CRASH_AT;
  const r = spawnSync(process.execPath, [child, op, root, id], { env, encoding: "utf8" });
  return r.signal;
}

function lateFiles(): string[] {
  return ["late/deep/new.txt", "src/m3/file3.txt", "src/m4/file4.txt", "src/m5/file5.txt"];
}

describe("recover keeps what no record holds before it restores", () => {
  it("a return that failed its verify (late writes): the CLI's recover keeps them, then restores", async () => {
    const { root, snapshotId, present } = await prepared();
    travel({ root, snapshotId });
    let err: { code?: string; message?: string } = {};
    try {
      returnToPresent({ root, onStep: (s) => s === "return:verify" && writeLate(root) });
    } catch (error) {
      err = error as typeof err;
    }
    expect(err.code).toBe("RETURN_VERIFY_FAILED");
    expect(err.message).toMatch(/keeps what was written to them during the return as a patch/);
    expect(err.message).not.toMatch(/copy first/);
    const late = readTree(root);
    expect(treeDiff(late, presentWithLate(root))).toEqual([]);

    const r = runCli(["--json", "recover"], { cwd: root });
    expect(r.status, r.stderr).toBe(0);
    const out = r.json() as { outcome: string; kept_path: string; kept_files: number };
    expect(out).toMatchObject({ outcome: "return_finished", kept_files: 4 });
    expect(keptPatches(root)).toEqual([out.kept_path]);
    expect(treeDiff(readTree(root), present)).toEqual([]);
    // byte for byte, through git
    expect(treeDiff(presentWith(root, [out.kept_path]), late)).toEqual([]);
    const bus = readEvents(join(root, ".timewarp", "events.jsonl")).events;
    expect(bus.filter((e) => e.type === "recover.kept").map((e) => e.data)).toEqual([
      expect.objectContaining({ patch_path: out.kept_path, files: lateFiles() }),
    ]);
    // the dashboard's timeline says it too
    const done = bus.find((e) => e.type === "recover.completed");
    expect(done && rowOfEvent("k", done)?.title).toBe(
      `recovered: return_finished; late work kept in ${out.kept_path}`,
    );
  }, 90_000);

  it("the CLI says where it kept them", async () => {
    const { root, snapshotId } = await prepared();
    travel({ root, snapshotId });
    expect(runChild("return", root, "return:journal-restore:1")).toBe("SIGKILL");
    writeFiles(root, { "late/x.txt": "late\n" });
    const r = runCli(["recover"], { cwd: root });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/return finished: now present/);
    expect(r.stdout).toMatch(/kept first what no record held \(1 files\): .*recover-kept.*\.patch/);
  }, 90_000);

  it("a return killed after its journal, files edited before recover: kept, the past's own content not", async () => {
    const { root, snapshotId, present } = await prepared();
    travel({ root, snapshotId });
    expect(runChild("return", root, "return:journal-restore:1")).toBe("SIGKILL");
    writeLate(root); // onto the past the killed return left
    const r = recover({ root });
    expect(r).toMatchObject({ outcome: "return_finished", mode: "present", kept_files: 4 });
    expect(treeDiff(readTree(root), present)).toEqual([]);
    // only the late writes: the snapshot's content, everywhere else, is held by the snapshot
    expect(treeDiff(presentWith(root, [r.kept_path ?? ""]), presentWithLate(root))).toEqual([]);
  }, 90_000);

  it("a travel killed mid-way, files edited before recover: kept, the snapshot's content not; rolled back", async () => {
    const { root, snapshotId, present } = await prepared();
    expect(runChild("travel", root, "travel:restored:1", snapshotId)).toBe("SIGKILL");
    writeLate(root); // onto the snapshot's content the killed travel wrote
    const r = recover({ root });
    // the travel cannot finish over content no object holds (it could never come back), so
    // recover puts the present back, over the late writes only once they are kept
    expect(r).toMatchObject({ outcome: "travel_rolled_back", mode: "present", kept_files: 4 });
    expect(treeDiff(readTree(root), present)).toEqual([]);
    expect(treeDiff(presentWith(root, [r.kept_path ?? ""]), presentWithLate(root))).toEqual([]);
  }, 90_000);

  it("a travel that failed half-way and could not roll back: recover keeps the late writes only, then rolls back", async () => {
    const { root, snapshotId, present } = await prepared(400);
    let undoing = 0;
    const full = () => Object.assign(new Error("ENOSPC: no space left"), { code: "ENOSPC" });
    expect(() =>
      travel({
        root,
        snapshotId,
        // the disk fills after 200 of the restore's entries, and again as the roll-back starts
        onProgress: (p) => {
          if (p.phase === "restore" && p.done === 200) throw full();
        },
        onStep: (s) => {
          if (s === "travel:restore-present" && undoing++ === 0) throw full();
        },
      }),
    ).toThrow(/timewarp recover/);
    expect(readStatus(root).transition).toMatchObject({ rolling_back: true });
    const bulk = [...readTree(root)].filter(([k]) => k.startsWith("bulk/f"));
    const past = bulk.filter(
      ([k, v]) => v === `file 644 ${Buffer.from(`past ${k.slice(6, -4)}\n`).toString("hex")}`,
    );
    expect(past.length).toBeGreaterThan(0); // half-applied: some files hold the snapshot's content …
    expect(past.length).toBeLessThan(bulk.length); // … and some still the present's
    writeLate(root); // onto the half-done travel
    const r = recover({ root });
    expect(r).toMatchObject({ outcome: "travel_rolled_back", mode: "present", kept_files: 4 });
    expect(treeDiff(readTree(root), present)).toEqual([]);
    expect(treeDiff(presentWith(root, [r.kept_path ?? ""]), presentWithLate(root))).toEqual([]);
  }, 90_000);

  it("a recover killed while keeping, then after keeping, then run again: every patch kept, nothing lost", async () => {
    const { root, snapshotId, present } = await prepared();
    travel({ root, snapshotId });
    expect(runChild("return", root, "return:journal-restore:1")).toBe("SIGKILL");
    writeLate(root);
    const late = readTree(root);
    // killed between the patch's temp file and its rename: no patch, the workspace untouched
    expect(runChild("recover", root, "recover:keeping:1")).toBe("SIGKILL");
    expect(keptPatches(root)).toEqual([]);
    expect(treeDiff(readTree(root), late)).toEqual([]);
    // killed once the patch is durable: the patch, the workspace untouched
    expect(runChild("recover", root, "recover:kept:1")).toBe("SIGKILL");
    const [first] = keptPatches(root);
    expect(keptPatches(root)).toHaveLength(1);
    expect(treeDiff(readTree(root), late)).toEqual([]);
    // one more write before the next recover; the first patch must survive it
    writeFiles(root, { "late/second.txt": "after the first recover\n" });
    const firstText = readFileSync(first ?? "", "utf8");
    const r = recover({ root });
    expect(r).toMatchObject({ outcome: "return_finished", kept_files: 5 });
    expect(keptPatches(root)).toHaveLength(2);
    expect(keptPatches(root)).toContain(r.kept_path);
    expect(readFileSync(first ?? "", "utf8")).toBe(firstText);
    expect(treeDiff(readTree(root), present)).toEqual([]);
    expect(treeDiff(presentWith(root, [first ?? ""]), presentWithLate(root))).toEqual([]);
    const both = presentWithLate(root, { "late/second.txt": "after the first recover\n" });
    expect(treeDiff(presentWith(root, [r.kept_path ?? ""]), both)).toEqual([]);
  }, 90_000);

  it("a return with past work killed after its journal: that work, kept by the return, is not kept again; a late write onto it is", async () => {
    const { root, snapshotId, present } = await prepared();
    const experiment = () => {
      writeFiles(root, { "src/m0/file0.txt": "experiment\n", "experiment/new.txt": "exp\n" });
      rmSync(join(root, "src/m6/file6.txt"));
    };
    travel({ root, snapshotId });
    experiment();
    expect(runChild("return", root, "return:journal-restore:1")).toBe("SIGKILL");
    const pastWork = readdirSync(join(root, ".timewarp", "past-work"));
    expect(pastWork.filter((n) => n.endsWith(".patch"))).toHaveLength(1);
    expect(recover({ root })).toMatchObject({ outcome: "return_finished", kept_path: null });
    expect(treeDiff(readTree(root), present)).toEqual([]);

    travel({ root, snapshotId });
    experiment();
    expect(runChild("return", root, "return:journal-restore:1")).toBe("SIGKILL");
    writeFiles(root, { "experiment/new.txt": "late\n" });
    const r = recover({ root });
    expect(r).toMatchObject({ outcome: "return_finished", kept_files: 1 });
    const expected = presentWithLate(root, { "experiment/new.txt": "late\n" }, () => {});
    expect(treeDiff(presentWith(root, [r.kept_path ?? ""]), expected)).toEqual([]);
  }, 90_000);

  it("nothing late: no patch is written", async () => {
    const { root, snapshotId, present } = await prepared();
    expect(runChild("travel", root, "travel:restored:1", snapshotId)).toBe("SIGKILL");
    writeFileSync(join(root, ".timewarp", "probe"), ""); // .timewarp/ is never work
    expect(recover({ root })).toMatchObject({ outcome: "travel_finished", kept_path: null });
    returnToPresent({ root });
    travel({ root, snapshotId });
    expect(runChild("return", root, "return:journal-restore:1")).toBe("SIGKILL");
    const r = recover({ root });
    expect(r).toMatchObject({ outcome: "return_finished", kept_path: null, kept_files: 0 });
    expect(treeDiff(readTree(root), present)).toEqual([]);
    expect(existsSync(join(root, ".timewarp", "recover-kept"))).toBe(false);
  }, 90_000);
});
