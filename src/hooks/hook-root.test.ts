import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { resolveRoot } from "./hook-root.ts";

let base: string;
beforeEach(() => {
  base = mkdtempSync(join(tmpdir(), "tw-root-"));
});
afterEach(() => rmSync(base, { recursive: true, force: true }));

describe("resolveRoot", () => {
  it("takes the agent's project directory when the cwd lies in it, a child named `..x` too", () => {
    const project = join(base, "p");
    for (const d of ["sub/deep", "..x", "sub/.timewarp"])
      mkdirSync(join(project, d), { recursive: true });
    const env = { CLAUDE_PROJECT_DIR: `${project}/` };
    expect(resolveRoot(project, env)).toBe(project);
    expect(resolveRoot(join(project, "sub", "deep"), env)).toBe(project);
    expect(resolveRoot(join(project, "..x"), env)).toBe(project);
    // Gemini's variable serves the same; Claude's comes first
    expect(resolveRoot(join(project, "..x"), { GEMINI_PROJECT_DIR: project })).toBe(project);
  });

  it("outside the project directory: the nearest .timewarp/, then .git, then the cwd", () => {
    const project = join(base, "p");
    const other = join(base, "o");
    for (const d of ["p", "o/a/.git", "o/a/b/.timewarp", "o/a/b/c", "plain"])
      mkdirSync(join(base, d), { recursive: true });
    const env = { CLAUDE_PROJECT_DIR: project };
    expect(resolveRoot(join(other, "a", "b", "c"), env)).toBe(join(other, "a", "b"));
    expect(resolveRoot(join(other, "a"), env)).toBe(join(other, "a"));
    expect(resolveRoot(join(base, "plain"), {})).toBe(join(base, "plain"));
    // a sibling whose name starts like the project's is not inside it
    mkdirSync(join(base, "p2"));
    expect(resolveRoot(join(base, "p2"), env)).toBe(join(base, "p2"));
  });
});
