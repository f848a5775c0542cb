import { type ChildProcess, spawnSync } from "node:child_process";
import {
  chmodSync,
  existsSync,
  mkdirSync,
  readFileSync,
  rmSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { fsck, listSnapshots, readManifest } from "../src/store/index.ts";
import {
  fixIssue,
  getIssue,
  listIssues,
  readStatus,
  recover,
  reportIssue,
  returnToPresent,
  startSession,
  travel,
} from "../src/timemachine/index.ts";
import { makeTempDir } from "./helpers/cli.ts";
import { holdLockInChild } from "./helpers/lock-holder.ts";
import { canMountTmpfs, mountSmallTmpfs } from "./helpers/small-fs.ts";
import { buildTimemachineChild, runTimemachineChild } from "./helpers/timemachine-child.ts";
import {
  buildPastState,
  mutateToPresent,
  readTree,
  treeDiff,
  writeFiles,
} from "./helpers/timemachine-fixtures.ts";

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.splice(0).reverse()) c();
});

function workspace(): string {
  const t = makeTempDir("tw-faults-");
  cleanups.push(t.cleanup);
  return t.dir;
}

/** A workspace in the present whose session snapshot holds an older state. */
async function prepared(files = 20): Promise<{ root: string; snapshotId: string }> {
  const root = workspace();
  buildPastState(root, files);
  const { snapshot_id } = await startSession({ root, sessionId: "faults" });
  mutateToPresent(root, files);
  return { root, snapshotId: snapshot_id };
}

function expectCode(
  fn: () => unknown,
  code: string,
): Error & { code: string; data?: Record<string, unknown> } {
  try {
    fn();
  } catch (error) {
    expect((error as { code?: string }).code, (error as Error).message).toBe(code);
    return error as Error & { code: string };
  }
  throw new Error(`expected ${code}, nothing was thrown`);
}

async function expectCodeAsync(p: Promise<unknown>, code: string): Promise<Error> {
  try {
    await p;
  } catch (error) {
    expect((error as { code?: string }).code, (error as Error).message).toBe(code);
    return error as Error;
  }
  throw new Error(`expected ${code}, nothing was thrown`);
}

let child: string;
let childDir: ReturnType<typeof makeTempDir> | undefined;
beforeAll(() => {
  childDir = makeTempDir("tw-child-");
  child = buildTimemachineChild(childDir.dir);
});
afterAll(() => childDir?.cleanup());

describe("two processes racing to travel", () => {
  it("one wins, the other gets LOCKED and touches nothing", async () => {
    const { root, snapshotId } = await prepared();
    // whoever takes the lock first holds it until the other has answered, so the race has one
    // answer however far apart a loaded machine starts the two (a fixed pause did not promise it)
    const hold = makeTempDir("tw-race-hold-");
    cleanups.push(hold.cleanup);
    const env = { TIMEWARP_HOLD_AT: `travel:locked@${hold.dir}` };
    const runs = [
      runTimemachineChild(child, ["travel", root, snapshotId], env),
      runTimemachineChild(child, ["travel", root, snapshotId], env),
    ];
    await Promise.race(runs);
    writeFileSync(join(hold.dir, "go"), "");
    const results = await Promise.all(runs);
    expect(results.filter((r) => r.ok).length).toBe(1);
    const loser = results.find((r) => r.error);
    expect(loser?.error?.code).toBe("LOCKED");
    expect(loser?.error?.message).toMatch(/locked by pid \d+/);
    expect(readStatus(root).mode).toBe("past");
  });
});

/** Another process holding the ledger lock as an edit does while it writes, for `ms`. */
function ledgerHeldFor(root: string, ms: number): Promise<ChildProcess> {
  return holdLockInChild(join(root, ".timewarp", "history", "lock"), "edit_block", cleanups, ms);
}

describe("a travel or return while an edit is being written", () => {
  it("waits for a short edit, and refuses with LOCKED, touching nothing, past a long one", async () => {
    const { root, snapshotId } = await prepared();
    const present = readFileSync(join(root, "src/m0/file0.txt"), "utf8");
    const long = await ledgerHeldFor(root, 60_000);
    const e = expectCode(() => travel({ root, snapshotId }), "LOCKED");
    expect(e.message).toMatch(/edit_block/);
    expect(readStatus(root).mode).toBe("present");
    expect(readFileSync(join(root, "src/m0/file0.txt"), "utf8")).toBe(present);
    long.kill("SIGKILL");
    await new Promise((resolve) => long.once("exit", resolve));

    await ledgerHeldFor(root, 300); // an edit that ends within the wait
    expect(travel({ root, snapshotId }).mode).toBe("past");
    await ledgerHeldFor(root, 300);
    expect(returnToPresent({ root }).mode).toBe("present");
    expect(readFileSync(join(root, "src/m0/file0.txt"), "utf8")).toBe(present);
  });
});

describe("corrupt or hand-edited protocol files", () => {
  it("state.json: CORRUPT_FILE naming the file and the field, for every command, never a reset", async () => {
    const { root, snapshotId } = await prepared();
    const state = join(root, ".timewarp", "state.json");
    const good = readFileSync(state, "utf8");
    writeFileSync(state, good.replace('"mode": "present"', '"mode": "sideways"'));
    const e = expectCode(() => travel({ root, snapshotId }), "CORRUPT_FILE");
    expect(e.message).toContain(state);
    expect(e.message).toContain("mode");
    expectCode(() => readStatus(root), "CORRUPT_FILE");
    await expectCodeAsync(startSession({ root }), "CORRUPT_FILE");
    writeFileSync(state, "{ not json");
    expect(expectCode(() => returnToPresent({ root }), "CORRUPT_FILE").message).toContain(
      "not valid JSON",
    );
    expect(readFileSync(state, "utf8")).toBe("{ not json"); // nothing reset it
  });

  it("issue.json: get/list/fix say which file and field; cleanup then deletes nothing", async () => {
    const { root, snapshotId } = await prepared();
    const { issue_id } = await reportIssue({
      root,
      task_context: "t",
      symptom: "s",
      success_criteria: "c",
    });
    const file = join(root, ".timewarp", "issues", issue_id, "issue.json");
    const issue = JSON.parse(readFileSync(file, "utf8"));
    writeFileSync(file, JSON.stringify({ ...issue, status: "maybe", snapshot_id: 42 }));
    const e = expectCode(() => getIssue({ root, issueId: issue_id }), "CORRUPT_FILE");
    expect(e.message).toContain(file);
    expect(e.message).toMatch(/status/);
    expect(e.message).toMatch(/snapshot_id/);
    expectCode(() => listIssues({ root }), "CORRUPT_FILE");
    expectCode(() => fixIssue({ root, issueId: issue_id }), "CORRUPT_FILE");
    // another session would make the first snapshot unreferenced — but an unreadable issue might
    // reference it, so cleanup must not delete anything
    rmSync(join(root, ".timewarp", "sessions"), { recursive: true });
    const s = await startSession({ root, sessionId: "second" });
    expect(s.cleanup.skipped).toMatch(/cannot read every issue/);
    expect(s.cleanup.deleted_snapshots).toEqual([]);
    expect(existsSync(join(root, ".timewarp", "snapshots", snapshotId))).toBe(true);
  });
});

describe("a snapshot record that does not read", () => {
  /**
   * Two sessions' snapshots, then the sessions forgotten: a third session start would delete
   * both (no issue, session or state names them any more) — unless a record does not read.
   */
  async function twoForgotten(): Promise<{ root: string; first: string; second: string }> {
    const { root, snapshotId: first } = await prepared();
    const { snapshot_id: second } = await startSession({ root, sessionId: "second" });
    rmSync(join(root, ".timewarp", "sessions"), { recursive: true });
    return { root, first, second };
  }

  it("session start deletes nothing and says which record and how to look", async () => {
    const { root, first, second } = await twoForgotten();
    const record = join(root, ".timewarp", "snapshots", first, "snapshot.json");
    writeFileSync(record, "{ torn");
    const s = await startSession({ root, sessionId: "third" });
    expect(s.cleanup.skipped).toBe(
      `1 snapshot record(s) do not read (${first}: CORRUPT_FILE); run \`timewarp fsck\``,
    );
    expect(s.cleanup.deleted_snapshots).toEqual([]);
    expect(s.cleanup.removed_objects).toBe(0);
    expect(existsSync(join(root, ".timewarp", "snapshots", second, "snapshot.json"))).toBe(true);
    expect(readFileSync(record, "utf8")).toBe("{ torn");
    // the record was never skipped in silence: fsck names it
    expect(fsck(root).problems).toContainEqual(
      expect.objectContaining({ kind: "bad_record", subject: first, path: record }),
    );
  });

  it("a present backup's record that does not read stops it too", async () => {
    const { root, first, second } = await twoForgotten();
    const backup = join(root, ".timewarp", "present_backup", "b_20260101_000000_abcdef");
    mkdirSync(backup, { recursive: true });
    writeFileSync(join(backup, "snapshot.json"), "[]");
    const s = await startSession({ root, sessionId: "third" });
    expect(s.cleanup.skipped).toBe(
      "1 snapshot record(s) do not read (b_20260101_000000_abcdef: CORRUPT_FILE); run `timewarp fsck`",
    );
    expect(s.cleanup.deleted_snapshots).toEqual([]);
    expect(s.cleanup.deleted_backups).toEqual([]);
    for (const id of [first, second]) {
      expect(existsSync(join(root, ".timewarp", "snapshots", id))).toBe(true);
    }
    expect(existsSync(backup)).toBe(true);
  });
});

describe("a snapshot whose objects were deleted", () => {
  it("fsck names them; travel refuses before touching the workspace", async () => {
    const { root, snapshotId } = await prepared();
    const manifest = readManifest(root, snapshotId);
    const victim = manifest.entries.find((e) => e.type === "file" && e.path === "src/m1/file1.txt");
    expect(victim?.oid).toBeDefined();
    const oid = victim?.oid ?? "";
    unlinkSync(join(root, ".timewarp", "objects", oid.slice(0, 2), oid.slice(2)));
    const report = fsck(root);
    expect(report.ok).toBe(false);
    expect(report.problems).toContainEqual(
      expect.objectContaining({
        kind: "missing_object",
        subject: oid,
        detail: expect.stringContaining("src/m1/file1.txt"),
      }),
    );
    const before = readTree(root);
    const e = expectCode(() => travel({ root, snapshotId }), "OBJECT_NOT_FOUND");
    expect(e.message).toContain("src/m1/file1.txt");
    expect(e.message).toContain("not touched");
    expect(treeDiff(readTree(root), before)).toEqual([]);
    const status = readStatus(root);
    expect(status.mode).toBe("present");
    expect(status.transition).toBeNull();
  });
});

describe("a present file whose stored object was lost", () => {
  it("travel refuses before overwriting it: the backup could not bring it back", async () => {
    const { root, snapshotId } = await prepared();
    // a second session's snapshot caches the present's stat data, so the backup scan trusts it
    const second = await startSession({ root, sessionId: "second" });
    const present = readManifest(root, second.snapshot_id);
    const victim = present.entries.find((e) => e.path === "src/m0/file0.txt");
    const oid = victim?.oid ?? "";
    expect(readFileSync(join(root, "src/m0/file0.txt"), "utf8")).toBe("present 0\n");
    unlinkSync(join(root, ".timewarp", "objects", oid.slice(0, 2), oid.slice(2)));
    const before = readTree(root);
    const e = expectCode(() => travel({ root, snapshotId }), "OBJECT_NOT_FOUND");
    expect(e.message).toContain("src/m0/file0.txt");
    expect(e.message).toContain("present content");
    expect(e.message).toContain("not touched");
    expect(treeDiff(readTree(root), before)).toEqual([]);
    expect(readStatus(root)).toMatchObject({ mode: "present", transition: null });
    expect(listSnapshots(root, { kind: "present_backup" })).toEqual([]);
  });
});

describe("read-only files and directories", () => {
  it("a chmod 444 file and a 0555 directory: travel and return succeed and restore the modes", async () => {
    // As root (CI, containers) permission bits do not block writes, and restores replace files by
    // rename, which needs only the directory: so both succeed, and the modes come back exactly.
    const root = workspace();
    writeFiles(root, { "ro/locked.txt": "past\n", "ro/other.txt": "x\n" });
    const { snapshot_id } = await startSession({ root, sessionId: "ro" });
    writeFiles(root, { "ro/locked.txt": { content: "present\n", mode: 0o444 } });
    chmodSync(join(root, "ro"), 0o555);
    const present = readTree(root);
    try {
      travel({ root, snapshotId: snapshot_id });
      expect(readFileSync(join(root, "ro/locked.txt"), "utf8")).toBe("past\n");
      expect(statSync(join(root, "ro/locked.txt")).mode & 0o777).toBe(0o644);
      returnToPresent({ root });
      expect(treeDiff(readTree(root), present)).toEqual([]);
      expect(statSync(join(root, "ro")).mode & 0o777).toBe(0o555);
    } finally {
      chmodSync(join(root, "ro"), 0o755);
    }
  });

  const canChattr = (() => {
    const t = makeTempDir("tw-chattr-");
    const f = join(t.dir, "f");
    writeFileSync(f, "x");
    const ok = spawnSync("chattr", ["+i", f]).status === 0;
    if (ok) spawnSync("chattr", ["-i", f]);
    t.cleanup();
    return ok;
  })();

  it.skipIf(!canChattr)(
    "an immutable file (what blocks even root): travel fails cleanly and puts the present back",
    async () => {
      const root = workspace();
      writeFiles(root, { "a.txt": "past a\n", "z.txt": "past z\n" });
      const { snapshot_id } = await startSession({ root, sessionId: "imm" });
      writeFiles(root, { "a.txt": "present a\n", "z.txt": "present z\n" });
      const present = readTree(root);
      spawnSync("chattr", ["+i", join(root, "z.txt")]);
      try {
        const e = expectCode(() => travel({ root, snapshotId: snapshot_id }), "PERMISSION_DENIED");
        expect(e.message).toContain("z.txt");
        expect(e.message).toMatch(/put back to the present/);
        expect(e.data?.rolled_back).toBe(true);
        expect(treeDiff(readTree(root), present)).toEqual([]); // a.txt was rewritten, then restored
        expect(readStatus(root)).toMatchObject({ mode: "present", transition: null });
      } finally {
        spawnSync("chattr", ["-i", join(root, "z.txt")]);
      }
    },
  );
});

describe("disk full mid-travel", () => {
  it("injected ENOSPC while restoring: the travel rolls back, the present is intact", async () => {
    const { root, snapshotId } = await prepared();
    const present = readTree(root);
    process.env.TIMEWARP_ENOSPC_AT = "travel:restore:1";
    try {
      const e = expectCode(() => travel({ root, snapshotId }), "DISK_FULL");
      expect(e.message).toMatch(/put back to the present/);
    } finally {
      delete process.env.TIMEWARP_ENOSPC_AT;
    }
    expect(treeDiff(readTree(root), present)).toEqual([]);
    expect(readStatus(root)).toMatchObject({ mode: "present", transition: null });
    travel({ root, snapshotId }); // and it works once there is room
    expect(readStatus(root).mode).toBe("past");
  });

  it("ENOSPC while restoring and again while undoing: TRANSITION_INTERRUPTED, then recover puts the present back", async () => {
    const { root, snapshotId } = await prepared();
    const present = readTree(root);
    let restoring = 0;
    const e = expectCode(
      () =>
        travel({
          root,
          snapshotId,
          onStep: (s) => {
            if (s === "travel:restored")
              throw Object.assign(new Error("ENOSPC: no space left"), { code: "ENOSPC" });
            if (s === "travel:restore-present" && restoring++ === 0)
              throw Object.assign(new Error("ENOSPC: still no space"), { code: "ENOSPC" });
          },
        }),
      "TRANSITION_INTERRUPTED",
    );
    expect(e.message).toMatch(/timewarp recover/);
    // meanwhile every other command refuses and points to recover
    expectCode(() => travel({ root, snapshotId }), "TRANSITION_INTERRUPTED");
    expectCode(() => returnToPresent({ root }), "TRANSITION_INTERRUPTED");
    await expectCodeAsync(startSession({ root }), "TRANSITION_INTERRUPTED");
    await expectCodeAsync(
      reportIssue({ root, task_context: "t", symptom: "s", success_criteria: "c" }),
      "TRANSITION_INTERRUPTED",
    );
    expectCode(() => listIssues({ root }), "TRANSITION_INTERRUPTED");
    expectCode(
      () => fixIssue({ root, issueId: "i_20260101_000000_abcdef" }),
      "TRANSITION_INTERRUPTED",
    );
    expect(readStatus(root).transition).toMatchObject({ kind: "travel", rolling_back: true });
    const r = recover({ root });
    expect(r).toMatchObject({ outcome: "travel_rolled_back", mode: "present" });
    expect(treeDiff(readTree(root), present)).toEqual([]);
    expectCode(() => recover({ root }), "NOTHING_TO_RECOVER");
  });

  it.skipIf(!canMountTmpfs)(
    "a real full tmpfs: DISK_FULL, the present stays whole and recoverable",
    async () => {
      const fs = mountSmallTmpfs(1400);
      if (!fs) return;
      cleanups.push(fs.unmount);
      const root = join(fs.dir, "ws");
      mkdirSync(root);
      const bytes = (n: number, seed: number) =>
        Buffer.from(Array.from({ length: n }, (_, i) => (i * seed + (i >> 7)) & 0xff));
      writeFiles(root, { "data.bin": { content: bytes(600 * 1024, 7) }, "small.txt": "past\n" });
      const { snapshot_id } = await startSession({ root, sessionId: "full" });
      writeFiles(root, {
        "data.bin": { content: bytes(300 * 1024, 13) },
        "small.txt": "present\n",
      });
      const present = readTree(root);
      // objects: 600K (past) + 300K (backup); the workspace 300K; the past data.bin (600K) does
      // not fit even in place of the present one, and the rollback puts the present one back
      const e = expectCode(() => travel({ root, snapshotId: snapshot_id }), "DISK_FULL");
      expect(e.message).toMatch(/ENOSPC|disk full/);
      expect((e as { data?: { rolled_back?: boolean } }).data?.rolled_back).toBe(true);
      expect(treeDiff(readTree(root), present)).toEqual([]);
      expect(readStatus(root)).toMatchObject({ mode: "present", transition: null });
    },
  );
});

describe("return verification", () => {
  it("a mismatch stops the return: RETURN_VERIFY_FAILED with the paths, backup and journal kept; recover finishes", async () => {
    const { root, snapshotId } = await prepared();
    const present = readTree(root);
    const t = travel({ root, snapshotId });
    const e = expectCode(
      () =>
        returnToPresent({
          root,
          onStep: (s) => {
            // something writes into the workspace between the restore and the check
            if (s === "return:verify") writeFileSync(join(root, "intruder.txt"), "late write\n");
          },
        }),
      "RETURN_VERIFY_FAILED",
    );
    expect(e.data?.paths).toEqual(["intruder.txt"]);
    expect(e.message).toContain("intruder.txt");
    expect(existsSync(t.backup_path)).toBe(true);
    expect(readStatus(root).transition).toMatchObject({ kind: "return" });
    expectCode(() => travel({ root, snapshotId }), "TRANSITION_INTERRUPTED");
    const r = recover({ root }); // the restore runs again and removes the intruder
    expect(r).toMatchObject({ outcome: "return_finished", mode: "present" });
    expect(treeDiff(readTree(root), present)).toEqual([]);
    // the backup outlives the return, unreferenced, until the next travel's journal is durable
    expect(readStatus(root)).toMatchObject({ mode: "present", backup_path: null });
    expect(existsSync(t.backup_path)).toBe(true);
    const next = travel({ root, snapshotId });
    expect(existsSync(t.backup_path)).toBe(false);
    expect(listSnapshots(root, { kind: "present_backup" }).map((r) => r.backup_id)).toEqual([
      next.backup_id,
    ]);
  });

  it("a travel removes the backups earlier returns left one by one: a damaged one keeps only itself", async () => {
    const { root, snapshotId } = await prepared();
    const first = travel({ root, snapshotId });
    returnToPresent({ root });
    const damaged = join(root, ".timewarp", "present_backup", "b_20200101_000000_abcdef");
    mkdirSync(damaged, { recursive: true });
    writeFileSync(join(damaged, "snapshot.json"), "[]");
    const next = travel({ root, snapshotId });
    expect(existsSync(first.backup_path)).toBe(false);
    expect(existsSync(damaged)).toBe(true);
    expect(existsSync(next.backup_path)).toBe(true);
  });
});
