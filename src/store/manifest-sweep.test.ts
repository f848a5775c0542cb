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
  readManifest,
  scanWorkspace,
} from "./index.ts";
import { forgetNodeTexts } from "./manifest-nodes.ts";

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
    bytes.fill(0x41, bytes.length - 64);
    rmSync(pack);
    writeFileSync(pack, bytes);
    const result = fsck(root);
    expect(result.ok).toBe(false);
    expect(result.problems.some((p) => p.kind === "bad_record" && p.path === pack)).toBe(true);
  });
});
