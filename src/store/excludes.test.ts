import ignore from "ignore";
import { describe, expect, it } from "vitest";
import { DEFAULT_EXCLUDES } from "../core/index.ts";
import { createExcludeMatcher } from "./excludes.ts";

const PATHS: [string, boolean][] = [
  ["node_modules", true],
  ["a/node_modules", true],
  ["node_modules", false],
  ["app.log", false],
  ["logs/app.log", false],
  ["x.log", true],
  ["a/.git", true],
  [".git", false],
  [".DS_Store", false],
  ["deep/.DS_Store", false],
  ["src/index.ts", false],
  ["build", true],
  ["build", false],
  ["mybuild", true],
  [".timewarp", true],
  ["a/.timewarp", true],
  ["target", true],
  ["x.pid", false],
  ["x.pidx", false],
];

describe("createExcludeMatcher", () => {
  it("matches exactly like the ignore package for the default list (fast path)", () => {
    const fast = createExcludeMatcher(DEFAULT_EXCLUDES);
    const ig = ignore().add([...DEFAULT_EXCLUDES]);
    for (const [p, dir] of PATHS) {
      const name = p.slice(p.lastIndexOf("/") + 1);
      expect(fast(p, name, dir), p).toBe(ig.ignores(dir ? `${p}/` : p));
    }
  });

  it("handles simple globs with ? and dir-only wildcards like gitignore", () => {
    const globs = ["tmp?/", "*.o", "cache*/"];
    const fast = createExcludeMatcher(globs);
    const ig = ignore().add(globs);
    for (const [p, dir] of [
      ["tmp1", true],
      ["tmp1", false],
      ["tmp12", true],
      ["a/b.o", false],
      ["cachedir", true],
      ["cachefile", false],
    ] as [string, boolean][]) {
      expect(fast(p, p.slice(p.lastIndexOf("/") + 1), dir), p).toBe(ig.ignores(dir ? `${p}/` : p));
    }
  });

  it("falls back to full gitignore semantics for anchored, nested and negated patterns", () => {
    const m = createExcludeMatcher(["/only-top.txt", "docs/**/*.md", "*.log", "!keep.log"]);
    expect(m("only-top.txt", "only-top.txt", false)).toBe(true);
    expect(m("a/only-top.txt", "only-top.txt", false)).toBe(false);
    expect(m("docs/x/y.md", "y.md", false)).toBe(true);
    expect(m("readme.md", "readme.md", false)).toBe(false);
    expect(m("a.log", "a.log", false)).toBe(true);
    expect(m("keep.log", "keep.log", false)).toBe(false);
  });
});
