import { spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "vitest";

/**
 * Apply `patch` (to a file named `f`) with real `git apply` in a fresh repository under
 * `scratch`, asserting that git takes it silently; returns the file's bytes after.
 */
export function gitApply(scratch: string, before: Buffer, patch: string): Buffer {
  const repo = join(scratch, "repo");
  spawnSync("rm", ["-rf", repo]);
  spawnSync("git", ["init", "-q", repo]);
  writeFileSync(join(repo, "f"), before);
  writeFileSync(join(repo, "p.diff"), patch);
  const r = spawnSync("git", ["apply", "--whitespace=nowarn", "p.diff"], {
    cwd: repo,
    encoding: "utf8",
  });
  expect(r.stderr).toBe("");
  expect(r.status).toBe(0);
  return readFileSync(join(repo, "f"));
}
