import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { bundledSource } from "../../test/helpers/bundle.ts";
import { makeTempDir, REPO_ROOT } from "../../test/helpers/cli.ts";
import { workspacePaths } from "../core/index.ts";
import { createSnapshot, scanWorkspace } from "./index.ts";
import { hashManifest } from "./manifest.ts";
import { loadStatCache } from "./stat-cache.ts";
import { overlayPathOf } from "./stat-cache-parts.ts";

const EX = [".timewarp"];
const OPTS = { excludes: EX, maxFileBytes: 1e9 };
const FILES = 400;
const pathOf = (i: number) => `d${i % 8}/f${i}.ts`;

/** A child that takes one delta snapshot of `root` with the change list in argv. */
function snapshotChild(): string {
  // (bundled once: a start through tsx's loader took seconds on a loaded machine)
  return bundledSource(
    `import { createSnapshot } from ${JSON.stringify(join(REPO_ROOT, "src/store/index.ts"))};
const [root, changed] = process.argv.slice(2);
createSnapshot(root, { excludes: ${JSON.stringify(EX)}, maxFileBytes: 1e9, changed: JSON.parse(changed) });
console.log("done");
`,
  );
}

describe("the stat cache's base and overlay under kill -9", () => {
  const cleanups: (() => void)[] = [];
  afterEach(() => {
    for (const c of cleanups.splice(0).reverse()) c();
  });

  it("a snapshot killed while writing the overlay or folding it is followed by an exact one", () => {
    const t = makeTempDir();
    cleanups.push(t.cleanup);
    const root = join(t.dir, "w");
    for (let d = 0; d < 8; d++) mkdirSync(join(root, `d${d}`), { recursive: true });
    for (let i = 0; i < FILES; i++)
      writeFileSync(join(root, pathOf(i)), `export const v = ${i};\n`);
    createSnapshot(root, OPTS);
    createSnapshot(root, { ...OPTS, changed: [] });
    const child = snapshotChild();
    const cacheFile = workspacePaths(root).statCache;
    // Each case: where the child dies, and how many files change (all of them: past a tenth
    // of the base, so the overlay is folded into a new base).
    const cases: [string, number][] = [
      ["stat-cache:overlay:1", 5],
      ["stat-cache:base-written:1", FILES],
      ["*:3", 7],
      ["*:6", FILES],
      ["*:9", 11],
      ["*:12", 3],
    ];
    for (const [round, [crashAt, count]] of cases.entries()) {
      const changed: string[] = [];
      for (let k = 0; k < count; k++) {
        const i = (round * 37 + k * 13) % FILES;
        writeFileSync(join(root, pathOf(i)), `export const v = ${i};\n// round ${round}\n`);
        changed.push(pathOf(i));
      }
      if (round === 2) {
        mkdirSync(join(root, "d9", "new"), { recursive: true });
        writeFileSync(join(root, "d9", "new", "n.ts"), "new\n");
        changed.push("d9");
      }
      const run = spawnSync(process.execPath, [child, root, JSON.stringify(changed)], {
        cwd: REPO_ROOT,
        encoding: "utf8",
        env: { ...process.env, TIMEWARP_CRASH_AT: crashAt },
      });
      // A named point must be reached; a step count past the snapshot's last step lets it end.
      if (crashAt.startsWith("*")) expect(run.signal ?? run.stdout.trim()).toMatch(/SIGKILL|done/);
      else expect(run.signal, `${crashAt}: ${run.stderr}`).toBe("SIGKILL");
      // The next snapshot is told the same changes (a watcher's token lags with the cache).
      const made = createSnapshot(root, { ...OPTS, changed });
      const walk = scanWorkspace(root, { excludes: EX });
      expect(made.record.manifest.hash, crashAt).toBe(hashManifest(walk.manifest));
      expect(made.record.files).toBe(walk.files);
      const cache = loadStatCache(cacheFile);
      expect(cache, crashAt).not.toBeNull();
      const oids = (m: ReadonlyMap<string, { oid: string }>) =>
        [...m].map(([k, c]) => `${k} ${c.oid}`).sort();
      expect(oids(cache!.entries)).toEqual(oids(walk.statCache.entries));
      expect(cache!.index!.others.map((e) => e.path).sort()).toEqual(
        walk.statCache.index!.others.map((e) => e.path).sort(),
      );
    }
    // The last rounds changed a few files: the cache is a base and an overlay again.
    expect(existsSync(overlayPathOf(cacheFile))).toBe(true);
  }, 180_000); // six child processes: slow on a loaded machine
});
