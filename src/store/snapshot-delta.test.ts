import { spawnSync } from "node:child_process";
import {
  existsSync,
  linkSync,
  mkdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { randomEditor } from "../../test/helpers/random-edits.ts";
import { tempDirs } from "../../test/helpers/temp-dirs.ts";
import { DEFAULT_EXCLUDES, workspacePaths } from "../core/index.ts";
import {
  createSnapshot,
  deleteSnapshot,
  type ManifestEntry,
  readManifest,
  scanWorkspace,
} from "./index.ts";
import { hashManifest } from "./manifest.ts";
import { type CachedStat, loadStatCache } from "./stat-cache.ts";

const EX = [...DEFAULT_EXCLUDES, "*.log"];
const OPTS = { excludes: EX, maxFileBytes: 1e9 };

/** A cache's files and index as a walk would have them (stat data aside: it differs per scan). */
function cacheView(entries: ReadonlyMap<string, CachedStat>, others: ManifestEntry[]) {
  return {
    files: [...entries].map(([k, c]) => [k, c.oid, c.size, c.mode]).sort(),
    others: [...others].sort((a, b) => (a.path < b.path ? -1 : 1)),
  };
}

describe("createSnapshot's delta path (only what changed, spliced into the last manifest)", () => {
  const tmp = tempDirs();

  it("gives exactly the walk's manifest, counts and stat cache over many rounds of random edits", () => {
    const root = tmp();
    const editor = randomEditor(root, 11);
    expect(createSnapshot(root, OPTS).scan).toBe("walk");
    // The first change list updates the index and records its manifest file; then deltas.
    expect(createSnapshot(root, { ...OPTS, changed: [] }).scan).toBe("index");
    const cacheFile = workspacePaths(root).statCache;
    for (let round = 0; round < 40; round++) {
      const changed = editor.round();
      const made = createSnapshot(root, { ...OPTS, changed });
      expect(made.scan).toBe("delta");
      const walk = scanWorkspace(root, { excludes: EX });
      expect(made.record.manifest.hash).toBe(hashManifest(walk.manifest));
      expect(made.record).toMatchObject({
        files: walk.files,
        dirs: walk.dirs,
        symlinks: walk.symlinks,
        bytes: walk.bytes,
        skipped: walk.skipped,
      });
      expect(made.record.manifest.entries).toBe(walk.manifest.entries.length);
      expect(made.manifest).toEqual(walk.manifest);
      expect(readManifest(root, made.id)).toEqual(walk.manifest);
      // Each round starts from the cache the delta wrote, so errors would compound.
      const cache = loadStatCache(cacheFile);
      expect(cache).not.toBeNull();
      expect(cacheView(cache!.entries, cache!.index!.others)).toEqual(
        cacheView(walk.statCache.entries, walk.statCache.index!.others),
      );
      expect([...cache!.entries.keys()]).toEqual([...cache!.entries.keys()].sort());
    }
  });

  it("agrees with the index path when a directory went and only a file below it was reported", () => {
    // Not what a watcher reports (it names the directory too), but a path the index update
    // handles: the files below a directory that is gone go with it.
    const root = tmp();
    randomEditor(root);
    createSnapshot(root, OPTS);
    createSnapshot(root, { ...OPTS, changed: [] });
    rmSync(join(root, "d3", "sub"), { recursive: true });
    writeFileSync(join(root, "d2", "f1.txt"), "edited too\n");
    const changed = ["d3/sub/f0.txt", "d2/f1.txt"];
    const cacheFile = workspacePaths(root).statCache;
    const indexed = scanWorkspace(root, {
      excludes: EX,
      statCache: loadStatCache(cacheFile)!,
      changed,
    });
    expect(indexed.incremental).toBe(true);
    const made = createSnapshot(root, { ...OPTS, changed });
    expect(made.scan).toBe("delta");
    expect(made.manifest).toEqual(indexed.manifest);
    expect(made.record.files).toBe(indexed.files);
    const cache = loadStatCache(cacheFile)!;
    expect([...cache.entries.keys()].filter((k) => k.startsWith("d3/sub/"))).toEqual([]);
  });

  it("leaves a new name that is not UTF-8 to the index path, which keeps its bytes", () => {
    const root = tmp();
    randomEditor(root);
    createSnapshot(root, OPTS);
    createSnapshot(root, { ...OPTS, changed: [] });
    mkdirSync(join(root, "raw"));
    writeFileSync(
      Buffer.concat([Buffer.from(`${root}/raw/`), Buffer.from([0x66, 0xff, 0x2e])]),
      "x",
    );
    const made = createSnapshot(root, { ...OPTS, changed: ["raw"] });
    expect(made.scan).toBe("index");
    const entry = made.manifest.entries.find((e) => e.path.startsWith("raw/"));
    expect(entry?.path_b64).toBe(
      Buffer.concat([Buffer.from("raw/"), Buffer.from([0x66, 0xff, 0x2e])]).toString("base64"),
    );
    expect(made.record.manifest.hash).toBe(
      hashManifest(scanWorkspace(root, { excludes: EX }).manifest),
    );
  });

  it("a writer killed between linking the last manifest and renaming it leaves nothing behind", () => {
    const root = tmp();
    randomEditor(root);
    createSnapshot(root, OPTS);
    createSnapshot(root, { ...OPTS, changed: [] });
    const paths = workspacePaths(root);
    // what a process killed at that instant leaves: a link under its pid, never renamed in
    const dead = spawnSync(process.execPath, ["-e", "0"]).pid as number;
    const left = join(paths.tmp, `last-${dead}-0badc0de`);
    linkSync(paths.lastManifest, left);
    const made = createSnapshot(root, { ...OPTS, changed: [] });
    expect(existsSync(left)).toBe(false);
    expect(made.record.manifest.hash).toBe(
      hashManifest(scanWorkspace(root, { excludes: EX }).manifest),
    );
  });

  it("links the last manifest and leaves the stat cache alone when nothing changed", () => {
    const root = tmp();
    randomEditor(root);
    createSnapshot(root, OPTS);
    const indexed = createSnapshot(root, { ...OPTS, changed: [] });
    const cacheFile = workspacePaths(root).statCache;
    const cacheBefore = readFileSync(cacheFile);
    const cacheIno = statSync(cacheFile).ino;
    const same = createSnapshot(root, { ...OPTS, changed: ["ghost/never"] });
    expect(same.scan).toBe("delta");
    expect(same.rehashed).toBe(0);
    expect(same.record.manifest.hash).toBe(indexed.record.manifest.hash);
    expect(statSync(join(same.dir, "manifest.json.br")).ino).toBe(
      statSync(join(indexed.dir, "manifest.json.br")).ino,
    );
    expect(statSync(cacheFile).ino).toBe(cacheIno);
    expect(readFileSync(cacheFile).equals(cacheBefore)).toBe(true);
    expect(same.manifest).toEqual(readManifest(root, indexed.id));
  });

  it("edits the last manifest after its record was deleted (a return deletes its backup)", () => {
    const root = tmp();
    randomEditor(root);
    createSnapshot(root, OPTS);
    const indexed = createSnapshot(root, { ...OPTS, changed: [] });
    deleteSnapshot(root, indexed.id);
    writeFileSync(join(root, "d0", "f1.txt"), "changed after the record went\n");
    const made = createSnapshot(root, { ...OPTS, changed: ["d0/f1.txt"] });
    expect(made.scan).toBe("delta");
    expect(made.record.manifest.hash).toBe(
      hashManifest(scanWorkspace(root, { excludes: EX }).manifest),
    );
  });

  it("falls back to the index when the manifest file it would edit is gone, and is right", () => {
    const root = tmp();
    randomEditor(root);
    createSnapshot(root, OPTS);
    createSnapshot(root, { ...OPTS, changed: [] });
    rmSync(workspacePaths(root).lastManifest);
    writeFileSync(join(root, "d0", "f1.txt"), "changed after the manifest went\n");
    const made = createSnapshot(root, { ...OPTS, changed: ["d0/f1.txt"] });
    expect(made.scan).toBe("index");
    const walk = scanWorkspace(root, { excludes: EX });
    expect(made.record.manifest.hash).toBe(hashManifest(walk.manifest));
    // and the next one goes by the delta path again, from the manifest file just written
    writeFileSync(join(root, "d1", "f3.txt"), "and again\n");
    const next = createSnapshot(root, { ...OPTS, changed: ["d1/f3.txt"] });
    expect(next.scan).toBe("delta");
    expect(next.record.manifest.hash).toBe(
      hashManifest(scanWorkspace(root, { excludes: EX }).manifest),
    );
  });
});
