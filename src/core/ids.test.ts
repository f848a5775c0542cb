import { describe, expect, it } from "vitest";
import { createFixedClock, createSeededRandom } from "./clock.ts";
import { ErrorCode } from "./errors.ts";
import {
  assertIssueId,
  createIssueId,
  createJobId,
  createSnapshotId,
  ISSUE_ID_PATTERN,
  JOB_ID_PATTERN,
  SNAPSHOT_ID_PATTERN,
} from "./ids.ts";

describe("ids", () => {
  const clock = createFixedClock(new Date("2026-02-28T15:30:12Z"));

  it("follow the seed formats", () => {
    const random = createSeededRandom(7);
    const s = createSnapshotId(clock, random);
    expect(s).toMatch(/^s_20260228_153012_[0-9a-z]{6}$/);
    expect(s).toMatch(SNAPSHOT_ID_PATTERN);
    expect(createIssueId(clock, random)).toMatch(ISSUE_ID_PATTERN);
    const job = createJobId(clock, random, 4242);
    expect(job).toMatch(/^20260228_153012_4242_[0-9a-z]{4}$/);
    expect(job).toMatch(JOB_ID_PATTERN);
  });

  it("sort by time", () => {
    const random = createSeededRandom(1);
    const a = createSnapshotId(createFixedClock(new Date("2026-02-28T15:30:12Z")), random);
    const b = createSnapshotId(createFixedClock(new Date("2026-02-28T15:30:13Z")), random);
    expect([b, a].sort()).toEqual([a, b]);
  });

  it("sort by time within one second too (the millisecond leads the suffix)", () => {
    const at = (ms: number) => createFixedClock(new Date(Date.UTC(2026, 1, 28, 15, 30, 12, ms)));
    // A seeded source that favours late letters: the random part must not decide the order.
    const ids = [0, 1, 35, 36, 500, 999].map((ms) =>
      createSnapshotId(at(ms), createSeededRandom(ms)),
    );
    expect([...ids].reverse().sort()).toEqual(ids);
    expect(ids[0]).toMatch(/^s_20260228_153012_00[0-9a-z]{4}$/);
    expect(ids[5]).toMatch(/^s_20260228_153012_rr[0-9a-z]{4}$/);
    for (const id of ids) expect(id).toMatch(SNAPSHOT_ID_PATTERN);
  });

  it("are reproducible from a seed and differ across seeds", () => {
    expect(createSnapshotId(clock, createSeededRandom(3))).toBe(
      createSnapshotId(clock, createSeededRandom(3)),
    );
    expect(createSnapshotId(clock, createSeededRandom(3))).not.toBe(
      createSnapshotId(clock, createSeededRandom(4)),
    );
  });

  it("refuse issue ids that could escape the issues folder", () => {
    for (const bad of ["../x", "i_1", "i_20260228_153012_AB12CD", "i_20260228_153012_ab12cd/.."]) {
      expect(() => assertIssueId(bad)).toThrow(
        expect.objectContaining({ code: ErrorCode.INVALID_ISSUE_ID }),
      );
    }
    expect(() => assertIssueId("i_20260228_153500_ef34gh")).not.toThrow();
  });
});
