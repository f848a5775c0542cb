import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDirs } from "../../test/helpers/temp-dirs.ts";
import { DEFAULT_EXCLUDES, workspacePaths } from "../core/index.ts";
import { createSnapshot, scanWorkspace } from "./index.ts";
import { hashManifest } from "./manifest.ts";
import { nodeReadCounts, nodeWriteCounts } from "./manifest-nodes.ts";
import { loadStatCache, openParts, writeStatCache } from "./stat-cache.ts";
import { headParses } from "./stat-cache-parts.ts";

const EX = [...DEFAULT_EXCLUDES];
const OPTS = { excludes: EX, maxFileBytes: 1e9 };

/**
 * Issue 22, item 1: a delta snapshot's cost follows its change, not the tree. These tests hold
 * the shortcuts that make it so to the walk's answer.
 */
describe("a delta snapshot's shortcuts", () => {
  const tmp = tempDirs();
  const workspace = () => {
    const root = tmp();
    for (let d = 0; d < 6; d++) {
      mkdirSync(join(root, `d${d}`, "sub"), { recursive: true });
      for (let f = 0; f < 30; f++) writeFileSync(join(root, `d${d}`, "sub", `f${f}.txt`), `${f}\n`);
      writeFileSync(join(root, `d${d}`, "x"), "a file\n");
    }
    expect(createSnapshot(root, OPTS).scan).toBe("walk");
    expect(createSnapshot(root, { ...OPTS, changed: [] }).scan).toBe("index");
    return root;
  };
  const sameAsWalk = (root: string, changed: string[]) => {
    const made = createSnapshot(root, { ...OPTS, changed });
    expect(made.scan).toBe("delta");
    const walk = scanWorkspace(root, { excludes: EX });
    expect(made.record.manifest.hash).toBe(hashManifest(walk.manifest));
    expect(made.manifest).toEqual(walk.manifest);
    const cache = loadStatCache(workspacePaths(root).statCache)!;
    expect([...cache.entries.keys()]).toEqual([...walk.statCache.entries.keys()].sort());
    const byPath = (a: { path: string }, b: { path: string }) => (a.path < b.path ? -1 : 1);
    expect([...(cache.index?.others ?? [])].sort(byPath)).toEqual(
      [...(walk.statCache.index?.others ?? [])].sort(byPath),
    );
  };

  it("a file of the base that became a directory, and back, through base and overlay", () => {
    const root = workspace();
    // In the overlay: the file goes, a directory with a subtree comes, under the same name.
    rmSync(join(root, "d1", "x"));
    mkdirSync(join(root, "d1", "x", "deeper"), { recursive: true });
    writeFileSync(join(root, "d1", "x", "deeper", "y.txt"), "y\n");
    sameAsWalk(root, ["d1/x"]);
    // Folded into the base: the base now holds the directory; it turns back into a file.
    const cacheFile = workspacePaths(root).statCache;
    writeStatCache(cacheFile, loadStatCache(cacheFile)!);
    rmSync(join(root, "d1", "x"), { recursive: true });
    writeFileSync(join(root, "d1", "x"), "a file again\n");
    sameAsWalk(root, ["d1/x"]);
    // A base file becomes a directory while the overlay already holds entries around it.
    writeFileSync(join(root, "d2", "sub", "f3.txt"), "edited\n");
    sameAsWalk(root, ["d2/sub/f3.txt"]);
    rmSync(join(root, "d2", "x"));
    mkdirSync(join(root, "d2", "x"));
    writeFileSync(join(root, "d2", "x", "z.txt"), "z\n");
    sameAsWalk(root, ["d2/x"]);
    // A directory of the overlay's goes whole, reported by its name only.
    rmSync(join(root, "d2", "x"), { recursive: true });
    sameAsWalk(root, ["d2/x"]);
  });

  it("reads the stat cache's head once per base, and again once the base is rewritten", () => {
    const root = workspace();
    const cacheFile = workspacePaths(root).statCache;
    writeFileSync(join(root, "d0", "x"), "one\n");
    sameAsWalk(root, ["d0/x"]);
    const parsed = headParses.count;
    for (let i = 0; i < 3; i++) {
      writeFileSync(join(root, "d3", "sub", `f${i}.txt`), `edit ${i}\n`);
      sameAsWalk(root, [`d3/sub/f${i}.txt`]);
    }
    expect(headParses.count).toBe(parsed);
    // A new base (a fold) under the same name: its head is read, and what it says is used.
    const cache = loadStatCache(cacheFile)!;
    writeStatCache(cacheFile, cache);
    writeFileSync(join(root, "d4", "x"), "two\n");
    sameAsWalk(root, ["d4/x"]);
    expect(headParses.count).toBe(parsed + 1);
    // The same bytes written again (a new inode): read again, never taken on trust.
    writeStatCache(cacheFile, loadStatCache(cacheFile)!);
    openParts(cacheFile)?.close();
    expect(headParses.count).toBe(parsed + 2);
    // What a reader is handed cannot be changed behind the next reader's back.
    const parts = openParts(cacheFile)!;
    expect(() => parts.racy.push("x")).toThrow();
    parts.close();
  });

  it("splices names that JSON escapes (quote, backslash, tab) and ones it does not", () => {
    const root = workspace();
    const odd = ['d0/q"uote.txt', "d0/back\\slash.txt", "d0/t\tab.txt", "d0/\u00e9t\u00e9.txt"];
    for (const name of odd) writeFileSync(join(root, name), "new\n");
    sameAsWalk(root, odd);
    for (const name of odd) writeFileSync(join(root, name), "edited\n");
    sameAsWalk(root, odd);
    for (const name of odd.slice(0, 2)) rmSync(join(root, name));
    sameAsWalk(root, odd.slice(0, 2));
  });

  it("a snapshot of 3 edited files writes their leaves and groups only, in one pack", () => {
    const root = tmp();
    for (let d = 0; d < 40; d++) {
      mkdirSync(join(root, `pkg${d}`, "lib"), { recursive: true });
      for (let f = 0; f < 60; f++)
        writeFileSync(join(root, `pkg${d}`, "lib", `m${f}.js`), `${f}\n`);
    }
    const before = nodeWriteCounts();
    createSnapshot(root, OPTS);
    const whole = nodeWriteCounts().nodes - before.nodes;
    // ~2,500 lines: ~80 leaves in ~7 groups, so three edits leave most of the tree alone
    expect(whole).toBeGreaterThan(60);
    createSnapshot(root, { ...OPTS, changed: [] });
    const edited = ["pkg3/lib/m7.js", "pkg20/lib/m41.js", "pkg37/lib/m2.js"];
    for (const name of edited) writeFileSync(join(root, name), "edited\n");
    const w0 = nodeWriteCounts();
    const r0 = nodeReadCounts();
    sameAsWalk(root, edited);
    const w1 = nodeWriteCounts();
    // A content edit never moves a cut (cuts hash the path): one leaf and one group per edit.
    expect(w1.nodes - w0.nodes).toBeGreaterThan(0);
    expect(w1.nodes - w0.nodes).toBeLessThanOrEqual(6);
    expect(w1.packs - w0.packs).toBe(1);
    // The splice itself reads at most those (the walk above reads none: it decodes nothing)
    expect(nodeReadCounts().read - r0.read).toBeLessThanOrEqual(6);
  });
});
