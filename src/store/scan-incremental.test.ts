import { linkSync, mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { backdate } from "../../test/helpers/backdate.ts";
import { randomEditor } from "../../test/helpers/random-edits.ts";
import { tempDirs } from "../../test/helpers/temp-dirs.ts";
import { DEFAULT_EXCLUDES } from "../core/index.ts";
import { type ScanResult, scanWorkspace } from "./scan-workspace.ts";
import {
  encodeStatCache,
  loadStatCache,
  openParts,
  pruneStatCache,
  writeStatCache,
} from "./stat-cache.ts";

const EX = [...DEFAULT_EXCLUDES, "*.log"];

/** What a scan says about the workspace, without the cache (which differs in stat data only). */
function view(r: ScanResult) {
  return {
    entries: r.manifest.entries,
    skipped: [...r.skipped].sort((a, b) => (a.path < b.path ? -1 : 1)),
    files: r.files,
    dirs: r.dirs,
    symlinks: r.symlinks,
    bytes: r.bytes,
  };
}

describe("scanWorkspace with a change list (incremental)", () => {
  const tmp = tempDirs();

  it("gives exactly the walk's result over many rounds of random edits, visiting only what changed", () => {
    const root = tmp();
    const cacheDir = tmp();
    const editor = randomEditor(root);
    let cache = scanWorkspace(root, { excludes: EX }).statCache;
    for (let round = 0; round < 40; round++) {
      const changed = editor.round();
      const walk = scanWorkspace(root, { excludes: EX, statCache: cache });
      const inc = scanWorkspace(root, { excludes: EX, statCache: cache, changed });
      expect(inc.incremental).toBe(true);
      expect(walk.incremental).toBe(false);
      expect(view(inc)).toEqual(view(walk));
      // Each round starts from the incremental result's cache, so errors would compound.
      const file = join(cacheDir, `cache-${round}.bin`);
      writeStatCache(file, inc.statCache);
      cache = loadStatCache(file)!;
      expect(cache.index?.others.length).toBe(inc.dirs + inc.symlinks);
    }
  });

  it("reads only the reported files: an unreported edit stays unseen (the watcher is the source of truth)", () => {
    const root = tmp();
    writeFileSync(join(root, "a.txt"), "a\n");
    writeFileSync(join(root, "b.txt"), "b\n");
    backdate(root, ["a.txt", "b.txt"]);
    const first = scanWorkspace(root, { excludes: EX });
    writeFileSync(join(root, "a.txt"), "a2\n");
    writeFileSync(join(root, "b.txt"), "b2\n");
    const inc = scanWorkspace(root, {
      excludes: EX,
      statCache: first.statCache,
      changed: ["a.txt"],
    });
    expect(inc.rehashed).toBe(1);
    const byPath = new Map(inc.manifest.entries.map((e) => [e.path, e.oid]));
    const walk = scanWorkspace(root, { excludes: EX });
    const truth = new Map(walk.manifest.entries.map((e) => [e.path, e.oid]));
    expect(byPath.get("a.txt")).toBe(truth.get("a.txt"));
    expect(byPath.get("b.txt")).not.toBe(truth.get("b.txt"));
  });

  it("walks the tree when the index cannot vouch: no index, another scope, the root changed, a pruned cache", () => {
    const root = tmp();
    writeFileSync(join(root, "a.txt"), "a\n");
    backdate(root, ["a.txt"]);
    const first = scanWorkspace(root, { excludes: EX });
    expect(first.statCache.index?.scope).toBeDefined();
    const noIndex = { scanStartMs: first.statCache.scanStartMs, entries: first.statCache.entries };
    expect(scanWorkspace(root, { excludes: EX, statCache: noIndex, changed: [] }).incremental).toBe(
      false,
    );
    expect(
      scanWorkspace(root, { excludes: [...EX, "*.tmp"], statCache: first.statCache, changed: [] })
        .incremental,
    ).toBe(false);
    expect(
      scanWorkspace(root, { excludes: EX, statCache: first.statCache, changed: [""] }).incremental,
    ).toBe(false);
    expect(
      scanWorkspace(root, { excludes: EX, statCache: first.statCache, changed: [] }).incremental,
    ).toBe(true);
    const file = join(tmp(), "cache.bin");
    writeStatCache(file, first.statCache);
    const oid = first.manifest.entries.find((e) => e.path === "a.txt")?.oid as string;
    // an id the cache does not hold: nothing is rewritten (the index stays usable)
    expect(pruneStatCache(file, new Set(["0".repeat(40)]))).toBe(0);
    expect(loadStatCache(file)?.index).toBeDefined();
    expect(pruneStatCache(file, new Set([oid]))).toBe(1);
    const pruned = loadStatCache(file)!;
    expect(pruned.index).toBeUndefined();
    const after = scanWorkspace(root, { excludes: EX, statCache: pruned, changed: [] });
    expect(after.incremental).toBe(false);
    expect(after.manifest.entries.map((e) => e.path)).toContain("a.txt");
  });

  it("revisits files with other hard links (a write through a link elsewhere is not reported for this name)", () => {
    const root = tmp();
    const outside = tmp();
    writeFileSync(join(root, "shared.txt"), "one\n");
    linkSync(join(root, "shared.txt"), join(outside, "alias.txt"));
    writeFileSync(join(root, "plain.txt"), "plain\n");
    backdate(root, ["shared.txt", "plain.txt"]);
    const first = scanWorkspace(root, { excludes: EX });
    expect(first.statCache.index?.linked).toEqual(["shared.txt"]);
    writeFileSync(join(outside, "alias.txt"), "two, written through the other link\n");
    const inc = scanWorkspace(root, { excludes: EX, statCache: first.statCache, changed: [] });
    expect(inc.incremental).toBe(true);
    expect(view(inc)).toEqual(view(scanWorkspace(root, { excludes: EX })));
    expect(inc.unchanged).toBe(false);
  });

  it("walks when the index holds a name with U+FFFD (its directory is not watched)", () => {
    const root = tmp();
    mkdirSync(join(root, "odd\uFFFDdir"));
    writeFileSync(join(root, "odd\uFFFDdir", "x.txt"), "x");
    const first = scanWorkspace(root, { excludes: EX });
    const again = scanWorkspace(root, { excludes: EX, statCache: first.statCache, changed: [] });
    expect(again.incremental).toBe(false);
  });

  it("keeps the index and watch token through the cache file, and rejects a torn trailer", () => {
    const root = tmp();
    mkdirSync(join(root, "d"));
    symlinkSync("d", join(root, "l"));
    const scan = scanWorkspace(root, { excludes: EX });
    scan.statCache.watchToken = "w1:42";
    const bytes = encodeStatCache(scan.statCache);
    const file = join(tmp(), "cache.bin");
    writeFileSync(file, bytes);
    const back = loadStatCache(file)!;
    expect(back.watchToken).toBe("w1:42");
    expect(back.index).toEqual(scan.statCache.index);
    const parts = openParts(file)!;
    const { others, ...rest } = scan.statCache.index!;
    expect(parts.index).toEqual(rest);
    expect(parts.othersAt("d")).toEqual(others.filter((e) => e.path === "d"));
    expect(parts.files).toBe(scan.statCache.entries.size);
    parts.close();
    writeFileSync(file, bytes.subarray(0, bytes.length - 3));
    expect(loadStatCache(file)).toBeNull();
    writeFileSync(file, bytes);
    const at = bytes.length - 20; // a segment's byte: the partial reader finds it by its sum
    bytes.writeUInt8(bytes.readUInt8(at) ^ 1, at);
    writeFileSync(file, bytes);
    expect(() => openParts(file)!.othersAt("l")).toThrow();
  });
});
