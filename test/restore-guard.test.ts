import { spawnSync } from "node:child_process";
import { cpSync, existsSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { isTimewarpError, type TimewarpError } from "../src/core/index.ts";
import {
  checkpointTurn,
  readStatus,
  recover,
  returnToPresent,
  rewind,
  startSession,
  travel,
} from "../src/timemachine/index.ts";
import { tempDirs } from "./helpers/temp-dirs.ts";
import {
  buildPastState,
  mutateToPresent,
  readTree,
  type Tree,
  treeDiff,
  writeFiles,
} from "./helpers/timemachine-fixtures.ts";

/**
 * A restore never overwrites a path that changed since the scan it was planned from: a write
 * by something other than timewarp (the user's editor, another agent) between travel's,
 * return's or recover's scan and the restore is left on disk (CHANGED_SINCE_SCAN), or kept as
 * a patch `git apply` brings back before a roll-back restores over it.
 */

const tempDir = tempDirs("tw-guard-");

/** The present (A) in `root`, its session snapshot (B) holding the past; a copy of A beside it. */
async function prepared(): Promise<{ root: string; snapshotId: string; present: Tree }> {
  const root = join(tempDir(), "ws");
  buildPastState(root, 20);
  const { snapshot_id } = await startSession({ root, sessionId: "guard" });
  mutateToPresent(root, 20);
  cpSync(root, `${root}-present`, { recursive: true, verbatimSymlinks: true });
  rmSync(join(`${root}-present`, ".timewarp"), { recursive: true, force: true });
  return { root, snapshotId: snapshot_id, present: readTree(root) };
}

/**
 * Late writes on the three kinds of path a restore touches: one it overwrites (`write`), one it
 * deletes (`del`), one it creates where there is nothing now (`create`).
 */
interface LatePaths {
  write: string;
  del: string;
  create: string;
}
/** Travel A → B: file0 is rewritten, new/dir0/added0.txt deleted, src/m1/file1.txt created. */
const TRAVEL: LatePaths = {
  write: "src/m0/file0.txt",
  del: "new/dir0/added0.txt",
  create: "src/m1/file1.txt",
};
/** Return B → A: the other way round. */
const RETURN: LatePaths = {
  write: "src/m0/file0.txt",
  del: "src/m1/file1.txt",
  create: "new/dir0/added0.txt",
};

function lateContent(path: string): string {
  return `late write to ${path}, by someone other than timewarp\n`;
}

function writeLate(root: string, late: LatePaths): void {
  writeFiles(root, {
    [late.write]: lateContent(late.write),
    [late.del]: lateContent(late.del),
    [late.create]: lateContent(late.create),
  });
}

function expectLateOnDisk(root: string, late: LatePaths): void {
  for (const p of [late.write, late.del, late.create])
    expect(readFileSync(join(root, p), "utf8"), p).toBe(lateContent(p));
}

function caught(run: () => unknown): TimewarpError {
  try {
    run();
  } catch (error) {
    if (isTimewarpError(error)) return error;
    throw error;
  }
  throw new Error("expected the command to fail");
}

function keptPatches(root: string): string[] {
  const dir = join(root, ".timewarp", "recover-kept");
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((n) => n.endsWith(".patch"))
    .sort()
    .map((n) => join(dir, n));
}

/** The copy of the present with `patches` applied by git. */
function presentWith(root: string, patches: string[]): Tree {
  const copy = `${root}-apply`;
  rmSync(copy, { recursive: true, force: true });
  cpSync(`${root}-present`, copy, { recursive: true, verbatimSymlinks: true });
  for (const patch of patches) {
    const r = spawnSync("git", ["apply", patch], { cwd: copy, encoding: "utf8" });
    expect(r.status, `git apply ${patch}: ${r.stderr}`).toBe(0);
  }
  const tree = readTree(copy);
  rmSync(copy, { recursive: true, force: true });
  return tree;
}

/** The present had the late writes landed on it. */
function presentWithLate(root: string, late: LatePaths): Tree {
  const copy = `${root}-late`;
  rmSync(copy, { recursive: true, force: true });
  cpSync(`${root}-present`, copy, { recursive: true, verbatimSymlinks: true });
  writeLate(copy, late);
  const tree = readTree(copy);
  rmSync(copy, { recursive: true, force: true });
  return tree;
}

describe("a write between the scan and the restore is never overwritten", () => {
  it("travel: left alone, kept as a patch before its roll-back, the present back", async () => {
    const { root, snapshotId, present } = await prepared();
    const err = caught(() =>
      travel({
        root,
        snapshotId,
        onStep: (s) => {
          if (s === "travel:restore") writeLate(root, TRAVEL);
        },
      }),
    );
    expect(err.code, JSON.stringify(err.data?.blocked)).toBe("CHANGED_SINCE_SCAN");
    expect(err.message).toMatch(/changed since the scan/);
    for (const p of Object.values(TRAVEL)) expect(err.message).toContain(p);
    expect(err.data?.rolled_back).toBe(true);
    const patches = keptPatches(root);
    expect(patches).toHaveLength(1);
    expect(err.message).toContain(patches[0]);
    expect(err.data?.kept_path).toBe(patches[0]);
    // the workspace is the present again; the patch brings the late writes back byte for byte
    expect(treeDiff(readTree(root), present)).toEqual([]);
    expect(treeDiff(presentWith(root, patches), presentWithLate(root, TRAVEL))).toEqual([]);
    expect(readStatus(root).mode).toBe("present");
  });

  it("return: stops, the late writes on disk; recover keeps them as a patch, then restores", async () => {
    const { root, snapshotId, present } = await prepared();
    travel({ root, snapshotId });
    const err = caught(() =>
      returnToPresent({
        root,
        onStep: (s) => {
          if (s === "return:journal-restore") writeLate(root, RETURN);
        },
      }),
    );
    expect(err.code, JSON.stringify(err.data?.blocked)).toBe("CHANGED_SINCE_SCAN");
    for (const p of Object.values(RETURN)) expect(err.message).toContain(p);
    expect(err.message).toMatch(/run `timewarp recover`: it keeps/);
    expectLateOnDisk(root, RETURN);
    const done = recover({ root });
    expect(done.outcome).toBe("return_finished");
    expect(treeDiff(readTree(root), present)).toEqual([]);
    expect(done.kept_path).not.toBeNull();
    expect(
      treeDiff(presentWith(root, [done.kept_path ?? ""]), presentWithLate(root, RETURN)),
    ).toEqual([]);
  });

  it("recover: stops, the late writes on disk; recover again keeps them, then restores", async () => {
    const { root, snapshotId, present } = await prepared();
    travel({ root, snapshotId });
    // a return stopped after its journal (as a kill would): recover is to finish it
    expect(() =>
      returnToPresent({
        root,
        onStep: (s) => {
          if (s === "return:journal-restore") throw new Error("stopped here");
        },
      }),
    ).toThrow(/stopped here/);
    const err = caught(() =>
      recover({
        root,
        onStep: (s) => {
          if (s === "recover:kept") writeLate(root, RETURN);
        },
      }),
    );
    expect(err.code, JSON.stringify(err.data?.blocked)).toBe("CHANGED_SINCE_SCAN");
    for (const p of Object.values(RETURN)) expect(err.message).toContain(p);
    expect(err.message).toMatch(/run `timewarp recover` again/);
    expectLateOnDisk(root, RETURN);
    const done = recover({ root });
    expect(done.outcome).toBe("return_finished");
    expect(treeDiff(readTree(root), present)).toEqual([]);
    expect(treeDiff(presentWith(root, keptPatches(root)), presentWithLate(root, RETURN))).toEqual(
      [],
    );
  });

  it("rewind: writes nothing, the late writes on disk, and says to run it again", async () => {
    const root = join(tempDir(), "ws");
    writeFiles(root, { "a.txt": "turn one\n", "gone.txt": "kept at the turn\n" });
    await startSession({ root, sessionId: "rw" });
    await checkpointTurn({ root, sessionId: "rw", prompt: "first" });
    // after the turn: a.txt edited, gone.txt deleted, new.txt added; the rewind undoes all three
    writeFiles(root, { "a.txt": "edited by the agent\n", "new.txt": "added by the agent\n" });
    rmSync(join(root, "gone.txt"));
    const late = {
      "a.txt": "late a, by the user\n",
      "new.txt": "late new, by the user\n",
      "gone.txt": "late gone, by the user\n",
    };
    const err = caught(() =>
      rewind({
        root,
        turn: "1",
        sessionId: "rw",
        onProgress: (p) => {
          if (p.phase === "write") writeFiles(root, late);
        },
      }),
    );
    expect(err.code).toBe("CHANGED_SINCE_SCAN");
    for (const p of Object.keys(late)) expect(err.message).toContain(p);
    expect(err.message).toMatch(/Run the rewind again/);
    for (const [p, text] of Object.entries(late))
      expect(readFileSync(join(root, p), "utf8"), p).toBe(text);
  });
});
