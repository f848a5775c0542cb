import { linkSync, mkdirSync, rmSync, statSync, writeFileSync } from "node:fs";
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

/** Issue 16, class 7: hard links come back as hard links, not as separate files. */

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.splice(0).reverse()) c();
});

function dir(): string {
  const t = makeTempDir("tw-links-");
  cleanups.push(t.cleanup);
  return t.dir;
}

const ino = (p: string) => statSync(p).ino;

describe("hard links", () => {
  it("are recorded as link groups, restored as links, relinked when the leader changes, and verified", () => {
    const root = dir();
    mkdirSync(join(root, "d"));
    writeFileSync(join(root, "a.txt"), "shared\n");
    linkSync(join(root, "a.txt"), join(root, "d", "b.txt"));
    linkSync(join(root, "a.txt"), join(root, "z.txt"));
    writeFileSync(join(root, "c.txt"), "shared\n"); // same bytes, its own inode
    const first = createSnapshot(root, { excludes: [] });
    const links = Object.fromEntries(
      first.manifest.entries.filter((e) => e.type === "file").map((e) => [e.path, e.link ?? null]),
    );
    expect(links).toEqual({ "a.txt": null, "c.txt": null, "d/b.txt": "a.txt", "z.txt": "a.txt" });

    const store = createObjectStore(workspacePaths(root).objects);
    const out = dir();
    restoreManifest(out, first.manifest, { store, excludes: [] });
    expect(ino(join(out, "d", "b.txt"))).toBe(ino(join(out, "a.txt")));
    expect(ino(join(out, "z.txt"))).toBe(ino(join(out, "a.txt")));
    expect(ino(join(out, "c.txt"))).not.toBe(ino(join(out, "a.txt")));
    expect(verifyWorkspace(out, first.manifest, { excludes: [] }).ok).toBe(true);

    // Broken apart on disk: verify says so, a restore links them again.
    writeFileSync(join(out, "z.txt"), "shared\n", { flag: "w" }); // same inode: still linked
    const separate = join(out, "d", "b.txt");
    rmSync(separate);
    writeFileSync(separate, "shared\n");
    expect(verifyWorkspace(out, first.manifest, { excludes: [] }).differences).toEqual([
      { path: "d/b.txt", kind: "content" },
    ]);
    restoreManifest(out, first.manifest, { store, excludes: [] });
    expect(ino(separate)).toBe(ino(join(out, "a.txt")));

    // The group's content changes in a later snapshot: restoring the old one rewrites the
    // leader and links the others to it again.
    writeFileSync(join(root, "a.txt"), "changed\n");
    const second = createSnapshot(root, { excludes: [] });
    restoreManifest(out, second.manifest, { store, excludes: [] });
    expect(verifyWorkspace(out, second.manifest, { excludes: [] }).ok).toBe(true);
    restoreManifest(out, readManifest(root, first.id), { store, excludes: [] });
    expect(ino(join(out, "z.txt"))).toBe(ino(join(out, "a.txt")));
    expect(ino(join(out, "d", "b.txt"))).toBe(ino(join(out, "a.txt")));
    expect(verifyWorkspace(out, first.manifest, { excludes: [] }).ok).toBe(true);
  });

  it("stay a group from the stat cache when a name is not UTF-8", () => {
    const root = dir();
    const byteName = Buffer.concat([Buffer.from(`${root}/`), Buffer.from([0x6e, 0xff, 0x2e])]);
    writeFileSync(byteName, "shared\n");
    linkSync(byteName, join(root, "a.txt"));
    const linksOf = (s: ReturnType<typeof createSnapshot>) =>
      s.manifest.entries.map((e) => [e.path_b64 ?? e.path, e.link ?? null]);
    const first = createSnapshot(root, { excludes: [] });
    // The second scan takes both from the stat cache: the group must not fall apart there.
    const second = createSnapshot(root, { excludes: [] });
    expect(second.rehashed).toBe(0);
    expect(linksOf(second)).toEqual(linksOf(first));
    expect(linksOf(second)).toContainEqual([
      Buffer.from([0x6e, 0xff, 0x2e]).toString("base64"),
      "a.txt",
    ]);
  });
});
