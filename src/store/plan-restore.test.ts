import { describe, expect, it } from "vitest";
import { createExcludeMatcher } from "./excludes.ts";
import { type ManifestEntry, sortEntries } from "./manifest.ts";
import { assertSafeManifest, filterExcluded, planRestore } from "./plan-restore.ts";

const file = (path: string, oid = "a", mode = 0o644): ManifestEntry => ({
  path,
  type: "file",
  mode,
  size: 1,
  mtime_ms: 0,
  oid: oid.repeat(40).slice(0, 40),
});
const dir = (path: string, mode = 0o755): ManifestEntry => ({
  path,
  type: "dir",
  mode,
  size: 0,
  mtime_ms: 0,
});

describe("planRestore", () => {
  it("plans the same by the sorted merge as by lookup, over random pairs of trees", () => {
    let seed = 11;
    const rnd = () => {
      seed = (seed * 48271) % 2147483647;
      return seed / 2147483647;
    };
    const tree = (): ManifestEntry[] => {
      const out: ManifestEntry[] = [];
      for (const d of ["a", "b", "c"]) {
        if (rnd() < 0.8) out.push(dir(d, rnd() < 0.2 ? 0o700 : 0o755));
        for (const f of ["x", "y", "z"]) {
          if (rnd() < 0.6)
            out.push(file(`${d}/${f}`, rnd() < 0.5 ? "a" : "b", rnd() < 0.2 ? 0o755 : 0o644));
        }
        if (rnd() < 0.3) out.push(file(`${d}y`, "c"));
      }
      return out.sort((p, q) => (p.path < q.path ? -1 : 1));
    };
    const norm = (plan: ReturnType<typeof planRestore>) =>
      Object.fromEntries(
        Object.entries(plan).map(([k, v]) => [
          k,
          Array.isArray(v) ? v.map((e: ManifestEntry) => `${e.type}:${e.path}`).sort() : v,
        ]),
      );
    for (let round = 0; round < 200; round++) {
      const current = tree();
      const target = tree();
      const merged = planRestore(current, target);
      // reversed input is not ascending, so this takes the lookup path
      const looked = planRestore([...current].reverse(), [...target].reverse());
      expect(norm(merged)).toEqual(norm(looked));
    }
  });

  it("writes only what differs, deletes what the target lacks, deepest directories first", () => {
    const current = [dir("a"), dir("a/b"), file("a/b/old"), file("keep"), file("chmod"), file("x")];
    const target = [
      dir("a"),
      file("keep"),
      file("chmod", "a", 0o755),
      file("x", "b"),
      dir("new"),
      file("new/f"),
    ];
    const plan = planRestore(current, target);
    expect(plan.deleteFiles.map((e) => e.path)).toEqual(["a/b/old"]);
    expect(plan.deleteDirs.map((e) => e.path)).toEqual(["a/b"]);
    expect(plan.writes.map((e) => e.path)).toEqual(["x", "new/f"]);
    expect(plan.chmods.map((e) => e.path)).toEqual(["chmod"]);
    expect(plan.makeDirs.map((e) => e.path)).toEqual(["new"]);
    expect(plan.unchanged).toBe(2);
  });

  it("creates parents first when a directory's name is not UTF-8 (it sorts by its base64)", () => {
    const raw = (path: Buffer): ManifestEntry => ({
      ...dir(path.toString("utf8")),
      path_b64: path.toString("base64"),
    });
    const target = sortEntries([
      dir("src"),
      raw(Buffer.from([0x73, 0x72, 0x63, 0x2f, 0x64, 0xff])), // src/d\xff
      raw(Buffer.from([0x73, 0x72, 0x63, 0x2f, 0x64, 0xff, 0x2f, 0x69, 0x6e])), // src/d\xff/in
    ]);
    expect(target[0]?.path).not.toBe("src"); // the manifest's own order is not parents first
    const plan = planRestore([], target);
    expect(plan.makeDirs.map((e) => e.path)).toEqual(["src", "src/d\uFFFD", "src/d\uFFFD/in"]);
  });

  it("replaces a directory by a file: the directory is removed before the write", () => {
    const plan = planRestore([dir("p"), file("p/child")], [file("p")]);
    expect(plan.deleteFiles.map((e) => e.path)).toEqual(["p/child"]);
    expect(plan.deleteDirs.map((e) => e.path)).toEqual(["p"]);
    expect(plan.writes.map((e) => e.path)).toEqual(["p"]);
  });
});

describe("assertSafeManifest", () => {
  const m = (entries: ManifestEntry[]) => ({ schema_version: 1 as const, entries });
  it("refuses absolute paths, .. and anything below a symlink of the same manifest", () => {
    expect(() => assertSafeManifest(m([file("/etc/passwd")]))).toThrow(/absolute/);
    expect(() => assertSafeManifest(m([file("a/../../x")]))).toThrow(/'\.\.'/);
    const link: ManifestEntry = {
      path: "out",
      type: "symlink",
      mode: 0o777,
      size: 4,
      mtime_ms: 0,
      target: "/etc",
    };
    expect(() => assertSafeManifest(m([link, file("out/passwd")]))).toThrow(/below the symlink/);
    expect(() => assertSafeManifest(m([link, file("outside")]))).not.toThrow();
  });
});

describe("filterExcluded", () => {
  it("drops excluded entries and everything below an excluded directory", () => {
    const manifest = {
      schema_version: 1 as const,
      entries: [
        dir("node_modules"),
        file("node_modules/x.js"),
        file("a.log"),
        file("src/a.ts"),
        dir("src"),
      ],
    };
    const { kept, dropped } = filterExcluded(
      manifest,
      createExcludeMatcher(["node_modules/", "*.log"]),
    );
    expect(kept.map((e) => e.path)).toEqual(["src/a.ts", "src"]);
    expect(dropped).toBe(3);
  });
});
