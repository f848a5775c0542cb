import { describe, expect, it } from "vitest";
import { diffManifests, isEmptyDiff } from "./diff-manifests.ts";
import { hashManifest, type ManifestEntry } from "./manifest.ts";

const f = (path: string, oid: string, mode = 0o644): ManifestEntry => ({
  path,
  type: "file",
  mode,
  size: 1,
  mtime_ms: 0,
  oid: oid.repeat(40).slice(0, 40),
});
const m = (entries: ManifestEntry[]) => ({ schema_version: 1 as const, entries });

describe("diffManifests", () => {
  it("sorts every path into exactly one of added, removed, modified, mode_changed, type_changed", () => {
    const a = m([
      f("same", "a"),
      f("gone", "b"),
      f("edit", "c"),
      f("chmod", "d"),
      f("becomes-dir", "e"),
      { path: "link", type: "symlink", mode: 0o777, size: 1, mtime_ms: 0, target: "x" },
    ]);
    const b = m([
      f("same", "a"),
      f("edit", "9"),
      f("chmod", "d", 0o755),
      { path: "becomes-dir", type: "dir", mode: 0o755, size: 0, mtime_ms: 5 },
      { path: "link", type: "symlink", mode: 0o777, size: 1, mtime_ms: 0, target: "y" },
      f("new", "f"),
    ]);
    const d = diffManifests(a, b);
    expect(d.added.map((e) => e.path)).toEqual(["new"]);
    expect(d.removed.map((e) => e.path)).toEqual(["gone"]);
    expect(d.modified.map((c) => c.path)).toEqual(["edit", "link"]);
    expect(d.mode_changed.map((c) => c.path)).toEqual(["chmod"]);
    expect(d.type_changed.map((c) => [c.path, c.before.type, c.after.type])).toEqual([
      ["becomes-dir", "file", "dir"],
    ]);
    expect(isEmptyDiff(diffManifests(a, a))).toBe(true);
  });

  it("hashManifest changes with any field and not with object identity", () => {
    const a = m([f("x", "a")]);
    expect(hashManifest(a)).toBe(hashManifest(m([f("x", "a")])));
    expect(hashManifest(a)).not.toBe(hashManifest(m([f("x", "a", 0o755)])));
  });
});
