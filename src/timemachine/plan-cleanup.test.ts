import { describe, expect, it } from "vitest";
import { planCleanup } from "./plan-cleanup.ts";
import { initialState } from "./state.ts";

const base = {
  snapshotIds: ["s1", "s2", "s3", "s4", "s5", "new"],
  backupIds: ["b1", "b2"],
  issueRefs: new Set(["s1"]),
  liveSessionRefs: new Set(["s2"]),
  newSnapshotId: "new",
};

describe("planCleanup", () => {
  it("deletes what nothing references; keeps issues', live sessions', the state's and the new one", () => {
    const state = { ...initialState("/w"), session_snapshot_id: "s3" };
    const plan = planCleanup({ ...base, state });
    expect(plan.skipped).toBeNull();
    expect(plan.deleteSnapshots).toEqual(["s4", "s5"]);
    expect(plan.deleteBackups).toEqual(["b1", "b2"]);
    expect(plan.kept.map((k) => `${k.snapshot_id}:${k.reason}`)).toEqual([
      "s1:referenced by an issue",
      "s2:snapshot of a live session",
      "s3:state.session_snapshot_id",
      "new:new session snapshot",
    ]);
  });

  it("skips entirely while in the past or while a transition awaits recover", () => {
    const past = {
      ...initialState("/w"),
      mode: "past" as const,
      current_snapshot_id: "s4",
      backup_path: "/w/.timewarp/present_backup/b1",
    };
    expect(planCleanup({ ...base, state: past })).toMatchObject({
      skipped: "mode=past",
      deleteSnapshots: [],
      deleteBackups: [],
    });
    const interrupted = {
      ...initialState("/w"),
      transition: {
        kind: "travel" as const,
        phase: "restore" as const,
        snapshot_id: "s5",
        backup_id: "b2",
        started_at: "t",
      },
    };
    expect(planCleanup({ ...base, state: interrupted })).toMatchObject({
      skipped: "a travel awaits recover",
      deleteSnapshots: [],
    });
  });

  it("keeps hand-made and pinned snapshots; the retention lets the oldest hand-made ones go", () => {
    const state = initialState("/w");
    const manual = [
      { snapshot_id: "s4", created_at: "2026-01-01T00:00:00Z" },
      { snapshot_id: "s5", created_at: "2026-03-01T00:00:00Z" },
    ];
    const all = planCleanup({ ...base, state, manual, pinned: new Set(["s3"]) });
    expect(all.deleteSnapshots).toEqual([]);
    expect(all.kept.map((k) => `${k.snapshot_id}:${k.reason}`)).toContain("s3:pinned");
    expect(all.kept.map((k) => `${k.snapshot_id}:${k.reason}`)).toContain("s4:made by hand");
    const now = new Date("2026-03-10T00:00:00Z");
    const newest = planCleanup({
      ...base,
      state,
      manual,
      manualRetention: { keep: 1, maxAgeDays: 0, now },
    });
    expect(newest.deleteSnapshots).toEqual(["s3", "s4"]);
    const young = planCleanup({
      ...base,
      state,
      manual,
      pinned: new Set(["s4"]),
      manualRetention: { keep: 0, maxAgeDays: 30, now },
    });
    expect(young.deleteSnapshots).toEqual(["s3"]); // s4 is old but pinned, s5 young enough
  });
});
