import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { ProgressUpdate } from "../src/core/index.ts";
import { fsckLedger } from "../src/ledger/index.ts";
import { collectGarbage, collectReferencedOids, exportSnapshot, fsck } from "../src/store/index.ts";
import { returnToPresent, startSession, travel } from "../src/timemachine/index.ts";
import { makeTempDir } from "./helpers/cli.ts";

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.splice(0).reverse()) c();
});

function recorder(): { updates: ProgressUpdate[]; on: (u: ProgressUpdate) => void } {
  const updates: ProgressUpdate[] = [];
  return { updates, on: (u) => updates.push(u) };
}

const phases = (updates: ProgressUpdate[]) => [...new Set(updates.map((u) => u.phase))];
const last = (updates: ProgressUpdate[], phase: string) =>
  updates.filter((u) => u.phase === phase).at(-1);

describe("library progress callbacks", () => {
  it("gc, fsck, export, travel and return report their phases and final counts", async () => {
    const t = makeTempDir("tw-lib-progress-");
    cleanups.push(t.cleanup);
    const root = t.dir;
    for (let i = 0; i < 30; i++) writeFileSync(join(root, `f${i}.txt`), `one ${i}\n`);
    const { snapshot_id } = await startSession({ root, sessionId: "lp" });
    for (let i = 0; i < 30; i += 3) writeFileSync(join(root, `f${i}.txt`), `two ${i}\n`);

    const gc = recorder();
    const roots = collectReferencedOids(root, { onProgress: gc.on });
    collectGarbage(root, { roots, onProgress: gc.on });
    expect(phases(gc.updates)).toEqual(["mark", "list objects", "repack", "sweep"]);
    expect(last(gc.updates, "mark")).toEqual({ phase: "mark", done: 1, total: 1 });
    expect(last(gc.updates, "sweep")).toMatchObject({ done: 30, total: 30 });

    const check = recorder();
    fsckLedger(root, fsck(root, { onProgress: check.on }), { onProgress: check.on });
    expect(phases(check.updates)).toEqual([
      "list objects",
      "check objects",
      "check snapshots",
      "check backups",
      "check caches",
      "check index",
      "check operations",
      "check milestones",
    ]);
    expect(last(check.updates, "check objects")).toMatchObject({ done: 30, total: 30 });

    const out = makeTempDir("tw-lib-progress-out-");
    cleanups.push(out.cleanup);
    const exp = recorder();
    exportSnapshot(root, snapshot_id, join(out.dir, "copy"), { onProgress: exp.on });
    const written = last(exp.updates, "write");
    expect(written?.done).toBe(written?.total);
    expect(written?.total).toBeGreaterThanOrEqual(30);

    const go = recorder();
    travel({ root, snapshotId: snapshot_id, onProgress: go.on });
    expect(phases(go.updates)).toEqual(["back up", "restore"]);
    expect(last(go.updates, "restore")).toMatchObject({ done: 10, total: 10 });

    const back = recorder();
    returnToPresent({ root, onProgress: back.on });
    expect(phases(back.updates)).toEqual(["keep past work", "restore", "verify"]);
    expect(last(back.updates, "restore")).toMatchObject({ done: 10, total: 10 });
  });
});
