import { spawnSync } from "node:child_process";
import { mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { workspacePaths } from "../src/core/index.ts";
import {
  collectGarbage,
  collectReferencedOids,
  createObjectStore,
  createSnapshot,
  deleteSnapshot,
  fsck,
  listSnapshots,
  readManifest,
} from "../src/store/index.ts";
import { bundledSource } from "./helpers/bundle.ts";
import { makeTempDir, REPO_ROOT } from "./helpers/cli.ts";

/**
 * A child that runs the whole gc (as `timewarp gc` does) in one process: node itself, the script
 * bundled once (a start through tsx's loader took seconds on a loaded machine).
 */
function gcChild(): string {
  return bundledSource(
    `import { collectGarbage, collectReferencedOids } from ${JSON.stringify(join(REPO_ROOT, "src/store/index.ts"))};
const root = process.argv[2] as string;
const names = new Map<string, string>();
const roots = collectReferencedOids(root, { names });
collectGarbage(root, { roots, names });
process.stdout.write("done\\n");
`,
  );
}

/** A workspace with a first snapshot (a version-1 pack), edits since (loose), one dropped record. */
function workspace(root: string): void {
  for (let d = 0; d < 10; d++) {
    mkdirSync(join(root, `d${d}`), { recursive: true });
    for (let f = 0; f < 20; f++) {
      const lines = Array.from({ length: 60 }, (_, i) => `const v${d}_${f}_${i} = ${i * f};`);
      writeFileSync(join(root, `d${d}`, `f${f}.ts`), lines.join("\n"));
    }
  }
  for (let round = 0; round < 4; round++) {
    createSnapshot(root, {});
    for (let d = 0; d < 10; d++) {
      writeFileSync(join(root, `d${d}`, `f${round}.ts`), `// round ${round}\nexport {};\n`);
    }
  }
  createSnapshot(root, {});
  const oldest = listSnapshots(root)[0]?.snapshot_id;
  if (oldest === undefined) throw new Error("no snapshot to drop");
  deleteSnapshot(root, oldest);
}

/** Every record's every object reads, hashed; fsck finds nothing but temp files. */
function assertNothingLost(root: string): void {
  const store = createObjectStore(workspacePaths(root).objects);
  for (const record of listSnapshots(root)) {
    for (const e of readManifest(root, record).entries) {
      if (e.type === "file" && e.oid !== undefined) store.read(e.oid, { verify: true });
    }
  }
  expect(fsck(root).problems.filter((p) => p.kind !== "temp_file")).toEqual([]);
}

describe("kill -9 during gc's repack", () => {
  const cleanups: (() => void)[] = [];
  afterEach(() => {
    for (const c of cleanups.splice(0)) c();
  });

  it.each([
    ["while writing the new pack", "gc:packing:40"],
    ["after the new pack is renamed in", "gc:repacked:1"],
    ["between removing old packs", "gc:pack-removed:1"],
    ["while writing the manifest nodes' pack", "gc:nodes-packing:1"],
    ["after the manifest nodes' pack is renamed in", "gc:nodes-repacked:1"],
  ])(
    "%s: duplicates at most, never a loss; the next gc finishes",
    (_what, crashAt) => {
      const t = makeTempDir();
      cleanups.push(t.cleanup);
      const root = join(t.dir, "w");
      workspace(root);
      assertNothingLost(root);
      const child = spawnSync(process.execPath, [gcChild(), root], {
        cwd: REPO_ROOT,
        encoding: "utf8",
        env: { ...process.env, TIMEWARP_CRASH_AT: crashAt },
      });
      expect(child.signal, child.stderr).toBe("SIGKILL");
      expect(child.stdout).not.toContain("done");
      assertNothingLost(root);

      const names = new Map<string, string>();
      collectGarbage(root, { roots: collectReferencedOids(root, { names }), names });
      assertNothingLost(root);
      const objects = workspacePaths(root).objects;
      // No object is left both loose and packed (a pack renamed in before the kill is kept, and
      // the loose copies it holds go, even when this gc has nothing to repack).
      const loose = readdirSync(objects).filter((d) => /^[0-9a-f]{2}$/.test(d));
      expect(loose.flatMap((d) => readdirSync(join(objects, d)))).toEqual([]);
      expect(readdirSync(join(objects, "pack")).filter((n) => n.endsWith(".twpack"))).toHaveLength(
        1,
      );
      const manifests = join(workspacePaths(root).data, "manifests");
      expect(readdirSync(manifests)).toEqual([expect.stringMatching(/^pack-[0-9a-f]{40}\.twn$/)]);
      expect(fsck(root).problems).toEqual([]); // the killed writer's temp file went too
    },
    120_000,
  );
});
