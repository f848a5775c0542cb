import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createSnapshot, treeLeavesRead } from "../store/index.ts";
import { returnToPresent } from "./return.ts";
import { diffSnapshots } from "./snapshot-diff.ts";
import { travel } from "./travel.ts";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A workspace of 40 directories × 100 files (~130 leaves of ~32 lines). */
function workspace(): string {
  const root = join(mkdtempSync(join(tmpdir(), "tw-travel-tree-")), "ws");
  dirs.push(join(root, ".."));
  mkdirSync(join(root, ".timewarp"), { recursive: true });
  writeFileSync(
    join(root, ".timewarp", "config.json"),
    JSON.stringify({ schema_version: 1, watch: false }),
  );
  for (let d = 0; d < 40; d++) {
    mkdirSync(join(root, `d${d}`));
    for (let f = 0; f < 100; f++) writeFileSync(join(root, `d${d}`, `f${f}.txt`), `${d}/${f}\n`);
  }
  return root;
}

describe("travel between trees that differ in a few paths", () => {
  it("decodes only the leaves around the differing paths, and lands exactly", () => {
    const root = workspace();
    const past = createSnapshot(root, {});
    writeFileSync(join(root, "d3", "f7.txt"), "changed\n");
    writeFileSync(join(root, "d21", "new.txt"), "new\n");
    rmSync(join(root, "d38", "f99.txt"));
    const leaves = Math.ceil(4040 / 32);

    const before = treeLeavesRead();
    const t = travel({ root, snapshotId: past.id });
    const read = treeLeavesRead() - before;
    expect(t.written).toBe(2); // f7 back, f99 back
    expect(t.deleted).toBe(1); // new.txt
    expect(readFileSync(join(root, "d3", "f7.txt"), "utf8")).toBe("3/7\n");
    // Three differences: each opens its leaf on both sides (a neighbour at most), plus the
    // leaves holding the directories above them (is one a symlink?).
    expect(read).toBeGreaterThan(0);
    expect(read).toBeLessThanOrEqual(3 * 4 + 3);
    expect(read).toBeLessThan(leaves / 4);

    const back = returnToPresent({ root });
    expect(back.verified.checked).toBe(4040);
    expect(readFileSync(join(root, "d3", "f7.txt"), "utf8")).toBe("changed\n");

    // snapshot diff reads as little.
    const now = createSnapshot(root, {});
    const mid = treeLeavesRead();
    const d = diffSnapshots({ root, from: past.id, to: now.id });
    expect(treeLeavesRead() - mid).toBeLessThanOrEqual(3 * 4);
    expect(d.added).toEqual(["d21/new.txt"]);
    expect(d.removed).toEqual(["d38/f99.txt"]);
    expect(d.modified).toEqual(["d3/f7.txt"]);
  });
});
