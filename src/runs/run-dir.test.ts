import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createFixedClock, type Random } from "../core/index.ts";
import { createRunDir, runsRootFor } from "./run-dir.ts";

describe("createRunDir (§2)", () => {
  let cwd: string;
  afterEach(() => rmSync(cwd, { recursive: true, force: true }));

  it("never reuses a job id, even when the clock and the random source repeat", () => {
    cwd = mkdtempSync(join(tmpdir(), "tw-rundir-"));
    const clock = createFixedClock(new Date("2026-02-04T17:03:01Z"));
    let calls = 0;
    // the first two ids collide; the exclusive mkdir makes the second job draw again
    const random: Random = { bytes: (n) => new Uint8Array(n).fill(calls++ < 2 ? 1 : 2) };
    const a = createRunDir({ cwd, clock, random });
    const b = createRunDir({ cwd, clock, random });
    expect(a.jobId).toMatch(/^20260204_170301_\d+_1111$/);
    expect(b.jobId).not.toBe(a.jobId);
    expect(readdirSync(runsRootFor(cwd)).sort()).toEqual([a.jobId, b.jobId].sort());
    expect(readdirSync(a.paths.runDir).sort()).toEqual([
      "ack",
      "queue",
      "reports",
      "scripts",
      "session",
    ]);
  });
});
