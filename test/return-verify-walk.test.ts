import {
  chmodSync,
  mkdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { createSnapshot, initWorkspace } from "../src/store/index.ts";
import { recover, returnToPresent, travel } from "../src/timemachine/index.ts";
import { writeOldGrid } from "./helpers/backdate.ts";
import { tempDirs } from "./helpers/temp-dirs.ts";
import { failedReturn } from "./helpers/timemachine-fixtures.ts";

// Without a watch daemon, return scans once (the past work and the restore's plan), and its verify
// walks the tree by stat against that scan: only the paths the restore wrote, and those whose
// lstat (or racy mtime) says they may have changed since the scan, are read again. Whatever an
// agent changes meanwhile must still fail the verify, even a write that hides from size and mtime.

beforeAll(() => {
  process.env.TIMEWARP_WATCH = "0"; // vitest.config.ts sets it too: no daemon answers here
});

describe("return's verify by a walk against its own scan (no daemon)", () => {
  const tmp = tempDirs("tw-return-walk-");

  /** 6 directories × 6 files a minute old (none racy); a snapshot; 3 changed, 1 added; travel. */
  function inThePast(): string {
    const root = tmp();
    initWorkspace(root);
    writeOldGrid(root, 6, 6);
    const past = createSnapshot(root).id;
    for (let d = 0; d < 3; d++) writeFileSync(join(root, `d${d}`, "f0.txt"), `present ${d}\n`);
    writeFileSync(join(root, "d5", "added.txt"), "present only\n");
    travel({ root, snapshotId: past });
    return root;
  }

  it("comes back exactly, counting every entry, when nothing else changed", () => {
    const root = inThePast();
    writeFileSync(join(root, "d4", "f4.txt"), "work in the past\n");
    const back = returnToPresent({ root });
    expect(back.verified.checked).toBe(6 + 36 + 1);
    expect(back.past_work_files).toBe(1);
    expect(readFileSync(join(root, "d0", "f0.txt"), "utf8")).toBe("present 0\n");
    expect(readFileSync(join(root, "d4", "f4.txt"), "utf8")).toBe("4/4\n");
    expect(readFileSync(join(root, "d5", "added.txt"), "utf8")).toBe("present only\n");
  });

  it("catches a write of the same size whose mtime was put back (only its ctime moved)", () => {
    const root = inThePast();
    const p = join(root, "d3", "f2.txt");
    const got = failedReturn(root, "return:verify", () => {
      const before = statSync(p);
      writeFileSync(p, "X/2\n");
      utimesSync(p, before.atime, before.mtime);
    });
    expect(got.code).toBe("RETURN_VERIFY_FAILED");
    expect(got.data?.differences).toEqual([{ path: "d3/f2.txt", kind: "content" }]);
    expect(recover({ root })).toMatchObject({ outcome: "return_finished", mode: "present" });
    expect(readFileSync(p, "utf8")).toBe("3/2\n");
  });

  it("catches a mode change and a file replaced by a symlink", () => {
    const root = inThePast();
    const got = failedReturn(root, "return:verify", () => {
      chmodSync(join(root, "d4", "f1.txt"), 0o755);
      rmSync(join(root, "d1", "f5.txt"));
      symlinkSync("f4.txt", join(root, "d1", "f5.txt"));
    });
    expect(got.code).toBe("RETURN_VERIFY_FAILED");
    expect(got.data?.differences).toEqual([
      { path: "d1/f5.txt", kind: "type" },
      { path: "d4/f1.txt", kind: "mode" },
    ]);
    expect(recover({ root })).toMatchObject({ outcome: "return_finished", mode: "present" });
    expect(statSync(join(root, "d4", "f1.txt")).mode & 0o777).toBe(0o644);
    expect(readFileSync(join(root, "d1", "f5.txt"), "utf8")).toBe("1/5\n");
  });

  it("catches what changed between the scan and the restore, which the plan did not see", () => {
    const root = inThePast();
    const got = failedReturn(root, "return:journal-restore", () => {
      writeFileSync(join(root, "d2", "f3.txt"), "written after the scan\n");
      rmSync(join(root, "d5", "f5.txt"));
      mkdirSync(join(root, "d3", "fresh"));
      writeFileSync(join(root, "d3", "fresh", "inside.txt"), "a new directory\n");
    });
    expect(got.code).toBe("RETURN_VERIFY_FAILED");
    expect(got.data?.differences).toEqual([
      { path: "d2/f3.txt", kind: "content" },
      { path: "d3/fresh", kind: "extra" },
      { path: "d3/fresh/inside.txt", kind: "extra" },
      { path: "d5/f5.txt", kind: "missing" },
    ]);
    expect(recover({ root })).toMatchObject({ outcome: "return_finished", mode: "present" });
    expect(readFileSync(join(root, "d5", "f5.txt"), "utf8")).toBe("5/5\n");
  });
});
