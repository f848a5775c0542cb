import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { makeTempDir } from "../../test/helpers/cli.ts";
import { DEFAULT_EXCLUDES, workspacePaths } from "../core/index.ts";
import {
  collectGarbage,
  collectReferencedOids,
  createSnapshot,
  deleteSnapshot,
  fsck,
  listSnapshots,
  readManifest,
  scanWorkspace,
} from "./index.ts";
import { forgetNodeTexts, nodeReadCounts, nodeStoreOf } from "./manifest-nodes.ts";
import { readStoredManifest, recordManifestFile, walkNewNodes } from "./manifest-walk.ts";

const EX = [...DEFAULT_EXCLUDES];
const packs = (root: string) =>
  readdirSync(join(workspacePaths(root).data, "manifests")).filter((n) => n.endsWith(".twn"));

describe("manifest trees in the store: gc keeps what records reach, fsck checks every node", () => {
  const cleanups: (() => void)[] = [];
  afterEach(() => {
    for (const c of cleanups.splice(0)) c();
  });

  it("a delta snapshot adds one small pack; gc folds the live nodes into one; a damaged node is found", () => {
    const { dir: root, cleanup } = makeTempDir();
    cleanups.push(cleanup);
    for (let d = 0; d < 20; d++) {
      mkdirSync(join(root, `d${d}`));
      for (let f = 0; f < 60; f++) writeFileSync(join(root, `d${d}`, `f${f}.txt`), `${d}/${f}\n`);
    }
    const first = createSnapshot(root, { excludes: EX });
    createSnapshot(root, { excludes: EX, changed: [] }); // the cache records the manifest file
    expect(packs(root)).toHaveLength(1);
    const changed = ["d3/f7.txt", "d11/f50.txt", "d19/new.txt"];
    for (const p of changed) writeFileSync(join(root, p), "changed\n");
    const second = createSnapshot(root, { excludes: EX, changed });
    expect(second.scan).toBe("delta");
    expect(packs(root)).toHaveLength(2);
    const walk = scanWorkspace(root, { excludes: EX }).manifest;
    expect(readManifest(root, second.record)).toEqual(walk);

    deleteSnapshot(root, first.id);
    collectGarbage(root, { roots: collectReferencedOids(root) });
    expect(packs(root)).toHaveLength(1);
    forgetNodeTexts();
    expect(readManifest(root, second.record)).toEqual(walk);
    expect(fsck(root).ok).toBe(true);

    const pack = join(workspacePaths(root).data, "manifests", packs(root)[0] as string);
    const bytes = readFileSync(pack);
    bytes.fill(0x41, 16, 80); // gc's pack (TWN3): the first block follows its 16-byte head
    rmSync(pack);
    writeFileSync(pack, bytes);
    const result = fsck(root);
    expect(result.ok).toBe(false);
    expect(result.problems.some((p) => p.kind === "bad_record" && p.path === pack)).toBe(true);
  });

  it("gc's mark and fsck read each distinct node once and no whole manifest, however many records", () => {
    const { dir: root, cleanup } = makeTempDir();
    cleanups.push(cleanup);
    for (let d = 0; d < 20; d++) {
      mkdirSync(join(root, `d${d}`));
      for (let f = 0; f < 30; f++) writeFileSync(join(root, `d${d}`, `f${f}.txt`), `${d}/${f}\n`);
    }
    createSnapshot(root, { excludes: EX });
    for (let round = 0; round < 12; round++) {
      const changed = [`d${round}/f${round}.txt`, `d${19 - round}/f${29 - round}.txt`];
      for (const p of changed) writeFileSync(join(root, p), `round ${round}\n`);
      createSnapshot(root, { excludes: EX, changed });
    }
    const paths = workspacePaths(root);
    const records = listSnapshots(root);
    const distinct = nodeStoreOf(paths.data).listAll().ids.length;
    const oneTree = new Set<string>();
    const last = records[records.length - 1] as (typeof records)[number];
    const stored = readStoredManifest(recordManifestFile(paths, last), last.manifest.hash);
    walkNewNodes(
      stored.root as Buffer,
      nodeStoreOf(paths.data),
      "test",
      (id) => !oneTree.has(id) && oneTree.add(id) !== undefined,
      () => {},
    );
    const expected = new Set<string>();
    for (const r of records) {
      for (const e of readManifest(root, r).entries) if (e.oid !== undefined) expected.add(e.oid);
    }

    forgetNodeTexts();
    expect(collectReferencedOids(root)).toEqual(expected);
    const mark = nodeReadCounts();
    expect(mark.readMany).toBe(0);
    expect(mark.read).toBeLessThanOrEqual(distinct);
    // 13 records of one tree's size each: read whole, they would cost 13 trees of reads
    expect(mark.read).toBeLessThan((records.length * oneTree.size) / 3);

    expect(fsck(root).ok).toBe(true); // fsck starts with forgetNodeTexts
    const check = nodeReadCounts();
    expect(check.readMany).toBe(0);
    expect(check.read).toBeLessThanOrEqual(distinct);
  });
});
