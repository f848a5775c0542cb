import { describe, expect, it } from "vitest";
import { DEFAULT_EXCLUDES } from "../core/index.ts";
import type { ManifestEntry, SkippedPath } from "../store/index.ts";
import { changedPaths, planRewind, type TreeState } from "./plan-rewind.ts";

const EX = [...DEFAULT_EXCLUDES];
const oid = (c: string) => c.repeat(40);
const f = (path: string, o: string, mode = 0o644): ManifestEntry => ({
  path,
  type: "file",
  mode,
  size: 1,
  mtime_ms: 0,
  oid: oid(o),
});
const d = (path: string, mode = 0o755): ManifestEntry => ({
  path,
  type: "dir",
  mode,
  size: 0,
  mtime_ms: 0,
});
const l = (path: string, target: string): ManifestEntry => ({
  path,
  type: "symlink",
  mode: 0o777,
  size: target.length,
  mtime_ms: 0,
  target,
});
const tree = (entries: ManifestEntry[], skipped: SkippedPath[] = []): TreeState => ({
  manifest: { schema_version: 1, entries: entries.sort((a, b) => (a.path < b.path ? -1 : 1)) },
  skipped,
});

describe("planRewind", () => {
  it("writes what differs, deletes what came after, creates and removes directories in order", () => {
    const present = tree([
      d("src"),
      f("src/a.ts", "b"),
      f("src/new.ts", "c"),
      d("gen"),
      d("gen/x"),
      f("gen/x/y", "d"),
    ]);
    const target = tree([
      d("src"),
      f("src/a.ts", "a"),
      d("docs"),
      d("docs/deep"),
      f("docs/deep/r.md", "e"),
    ]);
    const plan = planRewind(present, target, EX);
    expect(plan.files).toEqual([
      { path: "docs/deep/r.md", image: { oid: oid("e"), mode: "100644" } },
      { path: "gen/x/y", image: null },
      { path: "src/new.ts", image: null },
      { path: "src/a.ts", image: { oid: oid("a"), mode: "100644" } },
    ]);
    expect(plan.makeDirs).toEqual(["docs", "docs/deep"]);
    expect(plan.removeDirs).toEqual(["gen/x", "gen"]);
    expect(plan.changes.map((c) => `${c.change} ${c.path}`)).toEqual([
      "added docs",
      "added docs/deep",
      "added docs/deep/r.md",
      "deleted gen",
      "deleted gen/x",
      "deleted gen/x/y",
      "modified src/a.ts",
      "deleted src/new.ts",
    ]);
  });

  it("the exec bit goes through the ledger, other permission bits through a chmod; symlinks keep their target", () => {
    const present = tree([
      f("run.sh", "a", 0o644),
      f("key", "b", 0o644),
      l("link", "old"),
      d("dir", 0o755),
    ]);
    const target = tree([
      f("run.sh", "a", 0o755),
      f("key", "b", 0o600),
      l("link", "new"),
      d("dir", 0o700),
    ]);
    const plan = planRewind(present, target, EX);
    expect(plan.files).toEqual([
      { path: "link", image: { target: Buffer.from("new"), mode: "120000" } },
      { path: "run.sh", image: { oid: oid("a"), mode: "100755" } },
    ]);
    expect(plan.modes.sort((a, b) => (a.path < b.path ? -1 : 1))).toEqual([
      { path: "dir", mode: 0o700 },
      { path: "key", mode: 0o600 },
      { path: "run.sh", mode: 0o755 },
    ]);
  });

  it("a directory that became a file and a file that became a directory", () => {
    const present = tree([d("a"), f("a/in", "x"), f("b", "y")]);
    const target = tree([f("a", "z"), d("b"), f("b/in", "w")]);
    const plan = planRewind(present, target, EX);
    expect(plan.removeDirs).toEqual(["a"]);
    expect(plan.makeDirs).toEqual(["b"]);
    expect(plan.files).toEqual(
      expect.arrayContaining([
        { path: "a/in", image: null },
        { path: "a", image: { oid: oid("z"), mode: "100644" } },
        { path: "b", image: null },
        { path: "b/in", image: { oid: oid("w"), mode: "100644" } },
      ]),
    );
  });

  it("never plans at or below a skipped path, an excluded one (either side) or a version-control folder", () => {
    const skipped: SkippedPath[] = [{ path: "big", reason: "too_large", detail: "" }];
    const present = tree([
      f("big", "b"),
      f("x.log", "l"),
      f("a", "1"),
      d("vendor"),
      d("vendor/.hg"),
      f("vendor/.hg/store", "s"),
    ]);
    const target = tree([f("a", "2"), f("keep.log", "k")], skipped);
    const plan = planRewind(present, target, EX);
    expect(plan.files).toEqual([{ path: "a", image: { oid: oid("2"), mode: "100644" } }]);
    expect(plan.removeDirs).toEqual(["vendor"]);
    expect(plan.leftAlone).toEqual([
      { path: "vendor/.hg", reason: "version-control folder" },
      { path: "vendor/.hg/store", reason: "version-control folder" },
    ]);
  });

  it("ignores which names share an inode (a rewind restores contents)", () => {
    const present = tree([f("a", "x"), { ...f("b", "x"), link: "a" }]);
    const target = tree([f("a", "x"), f("b", "x")]);
    expect(planRewind(present, target, EX).changes).toEqual([]);
  });
});

describe("changedPaths", () => {
  it("lists files, not the directories they sit in, and nothing either side did not capture", () => {
    const from = tree([f("a", "1"), f("gone", "g"), f("big", "b")]);
    const to = tree(
      [f("a", "2"), d("new"), f("new/n", "n")],
      [{ path: "big", reason: "too_large", detail: "" }],
    );
    expect(changedPaths(from, to, EX)).toEqual([
      { path: "a", change: "modified" },
      { path: "gone", change: "deleted" },
      { path: "new/n", change: "added" },
    ]);
  });
});
