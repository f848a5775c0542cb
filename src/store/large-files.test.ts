import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { statSync, truncateSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { makeTempDir } from "../../test/helpers/cli.ts";
import { workspacePaths } from "../core/index.ts";
import {
  createObjectStore,
  createSnapshot,
  readManifest,
  restoreManifest,
  verifyWorkspace,
} from "./index.ts";

/**
 * Issue 16, class 1, "better still": files over the old whole-read limit are captured by
 * streamed hashing instead of skipped, and a sparse file stays sparse in the store and on
 * restore.
 */

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.splice(0).reverse()) c();
});

function dir(): string {
  const t = makeTempDir("tw-large-");
  cleanups.push(t.cleanup);
  return t.dir;
}

const gitHash = (path: string) =>
  spawnSync("git", ["hash-object", path], { encoding: "utf8" }).stdout.trim();

describe("large files", () => {
  it("a 120 MiB sparse file and a 20 MiB file are captured, stored sparse, restored byte-exact and sparse", () => {
    const root = dir();
    writeFileSync(join(root, "big.sparse"), "head");
    truncateSync(join(root, "big.sparse"), 120 * 1024 * 1024);
    const real = Buffer.concat([randomBytes(9 * 1024 * 1024), Buffer.alloc(2 * 1024 * 1024)]);
    writeFileSync(join(root, "big.bin"), Buffer.concat([real, real]).subarray(0, 20 * 1024 * 1024));
    writeFileSync(join(root, "small.txt"), "small\n");

    const snap = createSnapshot(root, { excludes: [] });
    expect(snap.record.skipped).toEqual([]);
    expect(snap.record.partial).toBe(false);
    const byPath = new Map(snap.manifest.entries.map((e) => [e.path, e]));
    expect(byPath.get("big.sparse")?.oid).toBe(gitHash(join(root, "big.sparse")));
    expect(byPath.get("big.bin")?.oid).toBe(gitHash(join(root, "big.bin")));

    const store = createObjectStore(workspacePaths(root).objects);
    const object = statSync(store.pathOf(byPath.get("big.sparse")?.oid ?? ""));
    expect(object.size).toBe(120 * 1024 * 1024);
    expect(object.blocks * 512).toBeLessThan(2 * 1024 * 1024); // holes stay holes

    const out = dir();
    const restored = restoreManifest(out, readManifest(root, snap.id), { store, excludes: [] });
    expect(restored.blocked).toEqual([]);
    expect(gitHash(join(out, "big.sparse"))).toBe(byPath.get("big.sparse")?.oid);
    expect(gitHash(join(out, "big.bin"))).toBe(byPath.get("big.bin")?.oid);
    expect(statSync(join(out, "big.sparse")).blocks * 512).toBeLessThan(2 * 1024 * 1024);
    expect(verifyWorkspace(out, readManifest(root, snap.id), { excludes: [] }).ok).toBe(true);

    // A corrupt large object is refused after hashing, and the file in place is left as it was.
    writeFileSync(join(out, "big.bin"), "mine\n");
    const oid = byPath.get("big.bin")?.oid ?? "";
    const path = store.pathOf(oid);
    spawnSync("chmod", ["u+w", path]);
    const fd = spawnSync("sh", ["-c", `printf X | dd of=${path} bs=1 seek=100 conv=notrunc`]);
    expect(fd.status).toBe(0);
    expect(() =>
      restoreManifest(out, readManifest(root, snap.id), { store, excludes: [] }),
    ).toThrow(/corrupt/);
    expect(spawnSync("cat", [join(out, "big.bin")], { encoding: "utf8" }).stdout).toBe("mine\n");
  }, 180_000);

  it("a large file changing under the scan is read again, never stored torn", () => {
    const root = dir();
    writeFileSync(join(root, "grow.bin"), Buffer.alloc(10 * 1024 * 1024, 1));
    let n = 0;
    const snap = createSnapshot(root, {
      excludes: [],
      beforeRead: (rel) => {
        if (rel === "grow.bin" && n++ === 0)
          writeFileSync(join(root, "grow.bin"), Buffer.alloc(10 * 1024 * 1024 + 5, 2));
      },
    });
    const e = snap.manifest.entries.find((x) => x.path === "grow.bin");
    expect(e?.oid).toBe(gitHash(join(root, "grow.bin")));
    expect(e?.size).toBe(10 * 1024 * 1024 + 5);
  });
});
