import { existsSync, mkdirSync, writeFileSync } from "node:fs";
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
 * it, what a whole gc with the same roots still finds to remove is packed (the cleanup leaves
 * packs alone), never loose, and nothing a kept record or an extra root names is gone. Contents
 * come from small pools, so many files share an object
 * (a copy whose other name stays is the case a line diff alone gets wrong).
 */
describe("collectDroppedObjects", () => {
  it("removes exactly the loose garbage the deleted records made, over 25 random histories", () => {
    let packedLeft = 0;
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
      for (let s = 0; s < 10; s++) {
        for (let k = 0; k < 1 + Math.floor(rnd() * 8); k++) {
          const f = files[Math.floor(rnd() * files.length)] as string;
          // a packed content (one the first snapshot had), or a loose one: four new ones per
          // snapshot, or the last snapshot's, so copies under other names are common
          const r = rnd();
          const round = r < 0.3 ? s - 1 : s;
          fill(f, r < 0.2 ? Math.floor(rnd() * 60) : 100 + round * 10 + Math.floor(rnd() * 4));
        }
        ids.push(createSnapshot(root).id);
      }
      const newest = ids[ids.length - 1] as string;
      // every other history drops all but the newest, as a session start usually does
      const drop = ids.slice(0, -1).filter(() => seed % 2 === 0 || rnd() < 0.6);
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
      // and no garbage is left loose: what is left is packed, and the whole gc takes exactly that
      const live = new Set<string>(extra);
      for (const r of listSnapshots(root))
        for (const e of readManifest(root, r).entries)
          if (e.type === "file" && e.oid !== undefined) live.add(e.oid);
      const left = store.list().filter((oid) => !live.has(oid));
      for (const oid of left)
        expect(existsSync(store.pathOf(oid)), `seed ${seed}: ${oid} left loose`).toBe(false);
      packedLeft += left.length;
      expect(collectGarbage(root, { roots: live }).removed_objects, `seed ${seed}`).toBe(
        left.length,
      );
      const after = createObjectStore(workspacePaths(root).objects).list();
      expect(
        after.filter((oid) => !live.has(oid)),
        `seed ${seed}`,
      ).toEqual([]);
    }
    // the histories do leave packed garbage (the first snapshot's objects), so the check bites
    expect(packedLeft).toBeGreaterThan(0);
  }, 240_000); // each history ends with a whole gc, which repacks (compresses) its objects
});
