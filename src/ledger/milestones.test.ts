import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createFixedClock, isTimewarpError } from "../core/index.ts";
import {
  acceptMilestoneProposal,
  applyEditBlock,
  applyRetention,
  applyWholeFileEdit,
  collectLedgerOids,
  createMilestone,
  getEditHistory,
  getMilestones,
  listMilestoneProposals,
  readSnapshotDiff,
  recordMilestoneSignal,
  repairIndex,
} from "./index.ts";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
function workspace(files: Record<string, string> = {}): string {
  const root = mkdtempSync(join(tmpdir(), "tw-ledger-ms-"));
  dirs.push(root);
  for (const [rel, content] of Object.entries(files)) {
    mkdirSync(join(root, rel, ".."), { recursive: true });
    writeFileSync(join(root, rel), content);
  }
  return root;
}
const lines = (n: number) => Array.from({ length: n }, (_, i) => `line ${i + 1}\n`).join("");

describe("milestones", () => {
  it("combinedDiff is the net change per file, not a concatenation", async () => {
    const root = workspace({ "a.txt": lines(10), "b.txt": "keep\n" });
    const ctx = { root };
    const x = await applyEditBlock(ctx, {
      path: "a.txt",
      searchBlock: "line 3\n",
      replaceBlock: "tmp\n",
    });
    const y = await applyEditBlock(ctx, {
      path: "a.txt",
      searchBlock: "tmp\n",
      replaceBlock: "THREE\nTHREE.5\n",
    });
    const z = await applyWholeFileEdit(ctx, { path: "b.txt", content: "changed\n" });
    const w = await applyWholeFileEdit(ctx, { path: "b.txt", content: "keep\n" }); // b.txt back to start
    const ids = [x, y, z, w].map((r) => r.snapshotId ?? "");
    const created = await createMilestone(ctx, {
      title: "Auth",
      description: "login",
      snapshotIds: ids,
      tags: ["feature"],
    });
    expect(created.milestoneId).toBe("milestone_001");
    expect(created.summary).toEqual({
      totalOperations: 4,
      affectedFiles: ["a.txt", "b.txt"],
      linesAdded: 2,
      linesRemoved: 1,
    });
    const file = JSON.parse(
      readFileSync(join(root, ".timewarp/history/milestones/milestone_001.json"), "utf8"),
    );
    expect(file).toMatchObject({
      id: "milestone_001",
      title: "Auth",
      description: "login",
      snapshotIds: ids,
      tags: ["feature"],
    });
    expect(file.combinedDiff).toContain("-line 3\n+THREE\n+THREE.5\n");
    expect(file.combinedDiff).not.toContain("tmp");
    expect(file.combinedDiff).not.toContain("b.txt");
  });

  it("GetMilestones filters by tag and includes diffs only when asked", async () => {
    const root = workspace({ "a.txt": "a\n" });
    const ctx = { root };
    const r = await applyWholeFileEdit(ctx, { path: "a.txt", content: "b\n" });
    await createMilestone(ctx, {
      title: "one",
      description: "",
      snapshotIds: [r.snapshotId ?? ""],
      tags: ["x"],
    });
    await createMilestone(ctx, {
      title: "two",
      description: "",
      snapshotIds: [r.snapshotId ?? ""],
      tags: ["y"],
    });
    const all = getMilestones(ctx);
    expect(all.milestones.map((m) => m.id)).toEqual(["milestone_001", "milestone_002"]);
    expect(all.milestones[0]?.combinedDiff).toBeUndefined();
    const y = getMilestones(ctx, { tags: ["y"], includeDiffs: true });
    expect(y.milestones.map((m) => m.title)).toEqual(["two"]);
    expect(y.milestones[0]?.combinedDiff).toContain("-a\n+b\n");
  });

  it("refuses unknown operations", async () => {
    const root = workspace();
    try {
      await createMilestone({ root }, { title: "t", description: "", snapshotIds: ["zzzzzzzzzz"] });
      expect.unreachable();
    } catch (error) {
      expect(isTimewarpError(error, "OPERATION_NOT_FOUND")).toBe(true);
    }
  });

  it("proposals follow the bus signals and can be accepted", async () => {
    const root = workspace({ "src/auth/a.ts": "a\n", "src/ui/b.ts": "b\n" });
    const clock = createFixedClock(new Date("2026-01-01T10:00:00Z"), 1000);
    const ctx = { root, clock };
    const a1 = await applyWholeFileEdit(ctx, { path: "src/auth/a.ts", content: "a1\n" });
    const a2 = await applyWholeFileEdit(ctx, { path: "src/auth/a.ts", content: "a2\n" });
    recordMilestoneSignal(ctx, { kind: "tests_passed", note: "npm test" });
    const b1 = await applyWholeFileEdit(ctx, { path: "src/ui/b.ts", content: "b1\n" });
    const proposals = listMilestoneProposals(ctx);
    expect(proposals.map((p) => [p.snapshotIds, p.reason])).toEqual([
      [[a1.snapshotId, a2.snapshotId], "tests_passed"],
      [[b1.snapshotId], "end"],
    ]);
    const accepted = await acceptMilestoneProposal(ctx, { proposalId: proposals[0]?.id ?? "" });
    expect(accepted.summary.totalOperations).toBe(2);
    expect(listMilestoneProposals(ctx).map((p) => p.snapshotIds)).toEqual([[b1.snapshotId]]);
  });
});

describe("retention", () => {
  it("drops by count and age, never an operation a milestone references", async () => {
    const root = workspace({ "a.txt": "0\n" });
    const start = new Date("2026-01-01T00:00:00Z");
    const day = 86_400_000;
    const ids: string[] = [];
    for (let i = 1; i <= 6; i++) {
      const clock = createFixedClock(new Date(start.getTime() + i * day));
      const r = await applyWholeFileEdit({ root, clock }, { path: "a.txt", content: `${i}\n` });
      ids.push(r.snapshotId ?? "");
    }
    await createMilestone(
      { root },
      { title: "keep", description: "", snapshotIds: [ids[0] ?? ""] },
    );
    const now = createFixedClock(new Date(start.getTime() + 7 * day));
    const dry = await applyRetention({ root, clock: now }, { maxOperations: 3, dryRun: true });
    expect(dry.removed).toEqual([ids[1], ids[2], ids[3]]);
    expect(getEditHistory({ root }).pagination.total).toBe(6);
    const res = await applyRetention({ root, clock: now }, { maxOperations: 3 });
    expect(res).toMatchObject({
      removed: [ids[1], ids[2], ids[3]],
      keptForMilestones: 1,
      remaining: 3,
    });
    expect(getEditHistory({ root }).history.map((h) => h.id)).toEqual([ids[5], ids[4], ids[0]]);
    expect(() => readSnapshotDiff({ root }, { snapshotId: ids[1] ?? "" })).toThrow(/not found/);
    // age: older than 1.5 days before "now" → ids[4] (day 5) goes, ids[5] (day 6) stays, ids[0] is protected
    const aged = await applyRetention({ root, clock: now }, { maxAgeDays: 1.5 as number });
    expect(aged.removed).toEqual([ids[4]]);
    expect(collectLedgerOids(root).size).toBeGreaterThan(0);
  });

  it("repairIndex adopts a record whose index line was lost and drops a line whose record is gone", async () => {
    const root = workspace({ "a.txt": "a\n" });
    const r1 = await applyWholeFileEdit({ root }, { path: "a.txt", content: "b\n" });
    const r2 = await applyWholeFileEdit({ root }, { path: "a.txt", content: "c\n" });
    const indexPath = join(root, ".timewarp/history/index.tsv");
    const text = readFileSync(indexPath, "utf8").split("\n");
    writeFileSync(indexPath, `${text[0]}\n`); // r2's line lost (killed before the append)
    expect(getEditHistory({ root }).pagination.total).toBe(1);
    expect(readSnapshotDiff({ root }, { snapshotId: r2.snapshotId ?? "" }).diff).toContain("+c\n"); // still found by id
    const snapDir = join(root, ".timewarp/history/snapshots");
    const recs = readdirSync(snapDir, { recursive: true })
      .map(String)
      .filter((f) => f.endsWith(`_${r1.snapshotId}.json`));
    unlinkSync(join(snapDir, recs[0] ?? ""));
    const h = getEditHistory({ root });
    expect(h.history[0]).toMatchObject({ id: r1.snapshotId, recordPresent: false });
    const repaired = await repairIndex({ root });
    expect(repaired).toEqual({ adopted: [r2.snapshotId], dropped: [r1.snapshotId] });
    expect(getEditHistory({ root }).history.map((x) => x.id)).toEqual([r2.snapshotId]);
  });
});
