import { chmodSync, linkSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { makeTempDir } from "../../test/helpers/cli.ts";
import { workspacePaths } from "../core/index.ts";
import {
  CHANGED_SINCE_SCAN,
  createObjectStore,
  createSnapshot,
  restoreManifest,
  scanWorkspace,
} from "./index.ts";

/**
 * A restore compares each path's lstat with the scan it was planned from just before it touches
 * it: a path written since is left alone and blocked, never overwritten (the time machine's
 * CHANGED_SINCE_SCAN); what the restore itself changed on a shared inode does not count.
 */

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.splice(0).reverse()) c();
});

function dir(): string {
  const t = makeTempDir("tw-guard-store-");
  cleanups.push(t.cleanup);
  return t.dir;
}

describe("a restore planned from a scan", () => {
  it("leaves a mode-only change alone when the file's content changed since the scan", () => {
    const root = dir();
    writeFileSync(join(root, "run.sh"), "#!/bin/sh\necho 1\n", { mode: 0o755 });
    const target = createSnapshot(root, { excludes: [] });
    chmodSync(join(root, "run.sh"), 0o644); // the restore plans a chmod back to 755
    const current = scanWorkspace(root, { excludes: [] });
    writeFileSync(join(root, "run.sh"), "#!/bin/sh\necho late, longer\n"); // after the scan
    const store = createObjectStore(workspacePaths(root).objects);
    const r = restoreManifest(root, target.manifest, { store, excludes: [], current });
    expect(r.blocked).toEqual([{ path: "run.sh", reason: CHANGED_SINCE_SCAN }]);
    expect(r.mode_changed).toBe(0);
    expect(statSync(join(root, "run.sh")).mode & 0o777).toBe(0o644);
    expect(readFileSync(join(root, "run.sh"), "utf8")).toBe("#!/bin/sh\necho late, longer\n");
  });

  it("chmods both hard links of one file without calling the second one changed", () => {
    const root = dir();
    writeFileSync(join(root, "a.sh"), "shared\n", { mode: 0o755 });
    linkSync(join(root, "a.sh"), join(root, "b.sh"));
    const target = createSnapshot(root, { excludes: [] });
    chmodSync(join(root, "a.sh"), 0o644); // both names: one inode
    const current = scanWorkspace(root, { excludes: [] });
    const store = createObjectStore(workspacePaths(root).objects);
    const r = restoreManifest(root, target.manifest, { store, excludes: [], current });
    expect(r.blocked).toEqual([]);
    expect(statSync(join(root, "b.sh")).mode & 0o777).toBe(0o755);
  });

  it("restores what did not change since the scan as before", () => {
    const root = dir();
    writeFileSync(join(root, "a.txt"), "old\n");
    const target = createSnapshot(root, { excludes: [] });
    writeFileSync(join(root, "a.txt"), "new and longer\n");
    writeFileSync(join(root, "gone.txt"), "to delete\n");
    const current = scanWorkspace(root, { excludes: [] });
    const store = createObjectStore(workspacePaths(root).objects);
    const r = restoreManifest(root, target.manifest, { store, excludes: [], current });
    expect(r.blocked).toEqual([]);
    expect(r.written).toBe(1);
    expect(r.deleted).toBe(1);
    expect(readFileSync(join(root, "a.txt"), "utf8")).toBe("old\n");
  });
});
