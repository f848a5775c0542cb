import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { makeTempDir } from "../../test/helpers/cli.ts";
import { workspacePaths } from "../core/index.ts";
import { collectDroppedObjects, collectGarbage, fsck } from "./gc.ts";
import { initWorkspace } from "./init-workspace.ts";
import { createObjectStore } from "./object-store.ts";
import { recordId } from "./snapshot-record.ts";
import {
  createSnapshot,
  deleteSnapshot,
  listSnapshots,
  readManifest,
  readManifestText,
} from "./snapshots.ts";

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

/**
 * The cleanup's gc (`collectDroppedObjects`) against the whole gc, over random histories: after
 * it, a whole gc with the same roots finds nothing left to remove, and nothing a kept record or
 * an extra root names is gone. Contents come from a small pool, so many files share an object
 * (a copy whose other name stays is the case a line diff alone gets wrong).
 */
describe("collectDroppedObjects", () => {
  it("removes exactly the garbage the deleted records made, over 25 random histories", () => {
    for (let seed = 1; seed <= 25; seed++) {
      const t = makeTempDir("tw-gc-dropped-");
      cleanups.push(t.cleanup);
      const root = t.dir;
      initWorkspace(root);
      let state = seed;
      const rnd = () => {
        state = (state * 1103515245 + 12345) % 2147483648;
        return state / 2147483648;
      };
      const pool = Array.from({ length: 30 }, (_, i) => `content ${i} of seed ${seed}\n`);
      mkdirSync(join(root, "d"), { recursive: true });
      // 90 files: the first snapshot packs its objects, later ones write them loose
      const files = Array.from({ length: 90 }, (_, i) => `d/f${i}.txt`);
      const fill = (rel: string, n: number) =>
        writeFileSync(
          join(root, rel),
          n < pool.length ? (pool[n] as string) : `unique ${n} ${seed}\n`,
        );
      for (const [i, f] of files.entries()) fill(f, i);
      const ids: string[] = [];
      for (let s = 0; s < 6; s++) {
        for (let k = 0; k < 1 + Math.floor(rnd() * 8); k++) {
          const f = files[Math.floor(rnd() * files.length)] as string;
          fill(f, Math.floor(rnd() * 60) + s * 100);
        }
        ids.push(createSnapshot(root).id);
      }
      const newest = ids[ids.length - 1] as string;
      const drop = ids.slice(0, -1).filter(() => rnd() < 0.6);
      if (drop.length === 0) drop.push(ids[0] as string);
      const droppedTexts = drop.map((id) => readManifestText(root, id));
      // some objects of the dropped records stay for another reason (the ledger's images)
      const extra = new Set<string>();
      for (const id of drop)
        for (const e of readManifest(root, id).entries)
          if (e.type === "file" && e.oid !== undefined && rnd() < 0.1) extra.add(e.oid);
      for (const id of drop) deleteSnapshot(root, id);
      const kept = listSnapshots(root).filter((r) => recordId(r) !== newest);
      const result = collectDroppedObjects(root, {
        dropped: droppedTexts,
        base: readManifestText(root, newest),
        kept: kept.map((r) => readManifestText(root, r)),
        extraRoots: extra,
      });
      expect(result, `seed ${seed}`).not.toBeNull();
      // nothing a kept record or an extra root names is gone
      const store = createObjectStore(workspacePaths(root).objects);
      for (const r of listSnapshots(root))
        for (const e of readManifest(root, r).entries)
          if (e.type === "file" && e.oid !== undefined)
            expect(store.has(e.oid), `seed ${seed}: ${e.path} lost its object`).toBe(true);
      for (const oid of extra) expect(store.has(oid), `seed ${seed}: extra root lost`).toBe(true);
      expect(fsck(root).ok, `seed ${seed}`).toBe(true);
      // and nothing the deletion made garbage is left
      const roots = [...listSnapshots(root).map((r) => readManifest(root, r)), ...extra];
      expect(collectGarbage(root, { roots }).removed_objects, `seed ${seed}`).toBe(0);
    }
  }, 60_000);
});
