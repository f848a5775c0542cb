import { chmodSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { createSnapshot } from "../src/store/index.ts";
import { recover, returnToPresent, travel } from "../src/timemachine/index.ts";
import { runCli } from "./helpers/cli.ts";
import { cleanups, runCleanups, workspace } from "./helpers/scripted-hook-server.ts";
import { failedReturn } from "./helpers/timemachine-fixtures.ts";

// With the watch daemon running, return scans once (after a mark in the daemon's journal), plans
// the past work and the restore from that scan, and its verify reads only the paths that differed
// then and the paths the daemon saw change since the mark. What an agent changes meanwhile, at
// any of those moments, must still fail the verify; recover then brings the present back.

beforeAll(() => {
  // vitest.config.ts turns watch daemons off for the other tests; this one needs one
  delete process.env.TIMEWARP_WATCH;
});
afterEach(runCleanups);

/** 10 directories × 10 files, a daemon, a first snapshot by walk (the next go by delta). */
function watchedWorkspace(): string {
  const root = workspace();
  for (let d = 0; d < 10; d++) {
    mkdirSync(join(root, `d${d}`));
    for (let f = 0; f < 10; f++) writeFileSync(join(root, `d${d}`, `f${f}.txt`), `${d}/${f}\n`);
  }
  const started = runCli(["watch", "start", "--json", "-C", root]);
  expect(started.status, started.stderr).toBe(0);
  cleanups.push(() => runCli(["watch", "stop", "-C", root]));
  expect(createSnapshot(root).scan).toBe("walk");
  return root;
}

/** The past (a snapshot), then the present: 5 files changed, one added. */
function pastAndPresent(root: string): string {
  const past = createSnapshot(root).id;
  for (let d = 0; d < 5; d++) writeFileSync(join(root, `d${d}`, "f0.txt"), `present ${d}\n`);
  writeFileSync(join(root, "d9", "added.txt"), "present only\n");
  return past;
}

describe("return's verify by the daemon's journal", () => {
  it("comes back exactly, counting every entry, when nothing else changed", () => {
    const root = watchedWorkspace();
    const past = pastAndPresent(root);
    travel({ root, snapshotId: past });
    writeFileSync(join(root, "d7", "f7.txt"), "work in the past\n");
    const back = returnToPresent({ root });
    expect(back.verified.checked).toBe(10 + 100 + 1);
    expect(back.past_work_files).toBe(1);
    expect(readFileSync(join(root, "d0", "f0.txt"), "utf8")).toBe("present 0\n");
    expect(readFileSync(join(root, "d7", "f7.txt"), "utf8")).toBe("7/7\n");
    expect(readFileSync(join(root, "d9", "added.txt"), "utf8")).toBe("present only\n");
  }, 120_000);

  it("catches a file the restore did not touch, changed and chmodded after the restore", () => {
    const root = watchedWorkspace();
    const past = pastAndPresent(root);
    travel({ root, snapshotId: past });
    const got = failedReturn(root, "return:verify", () => {
      writeFileSync(join(root, "d8", "f3.txt"), "an agent wrote this during the return\n");
      chmodSync(join(root, "d6", "f6.txt"), 0o755);
    });
    expect(got.code).toBe("RETURN_VERIFY_FAILED");
    expect(got.data?.paths).toEqual(["d6/f6.txt", "d8/f3.txt"]);
    expect(recover({ root })).toMatchObject({ outcome: "return_finished", mode: "present" });
    expect(readFileSync(join(root, "d8", "f3.txt"), "utf8")).toBe("8/3\n");
    expect(statSync(join(root, "d6", "f6.txt")).mode & 0o777).toBe(0o644);
    expect(readFileSync(join(root, "d0", "f0.txt"), "utf8")).toBe("present 0\n");
  }, 120_000);

  it("catches a change made between the scan and the restore, which the plan did not see", () => {
    const root = watchedWorkspace();
    const past = pastAndPresent(root);
    travel({ root, snapshotId: past });
    const got = failedReturn(root, "return:journal-restore", () => {
      writeFileSync(join(root, "d4", "f9.txt"), "written after the scan\n");
      mkdirSync(join(root, "d3", "fresh"));
      writeFileSync(join(root, "d3", "fresh", "inside.txt"), "a new directory\n");
    });
    expect(got.code).toBe("RETURN_VERIFY_FAILED");
    expect(got.data?.paths).toEqual(["d3/fresh", "d3/fresh/inside.txt", "d4/f9.txt"]);
    expect(recover({ root })).toMatchObject({ outcome: "return_finished", mode: "present" });
    expect(readFileSync(join(root, "d4", "f9.txt"), "utf8")).toBe("4/9\n");
  }, 120_000);
});
