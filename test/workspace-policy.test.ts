import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { makeTempDir, runCli } from "./helpers/cli.ts";

/**
 * Issue 16, class 9 (defaults that destroy the user's work): which workspace a command works
 * on, and the store kept out of git. Real CLI, real git.
 */

let tmp: ReturnType<typeof makeTempDir>;
let proj: string;
beforeEach(() => {
  tmp = makeTempDir("tw-policy-");
  proj = join(tmp.dir, "proj");
  mkdirSync(join(proj, "lib"), { recursive: true });
});
afterEach(() => tmp.cleanup());

const tw = (cwd: string, args: string[], input?: string) =>
  runCli([...args, "--json"], { cwd, ...(input === undefined ? {} : { input }) });

function git(cwd: string, ...args: string[]): string {
  return execFileSync("git", args, {
    cwd,
    encoding: "utf8",
    env: {
      ...process.env,
      GIT_AUTHOR_NAME: "t",
      GIT_AUTHOR_EMAIL: "t@example.com",
      GIT_COMMITTER_NAME: "t",
      GIT_COMMITTER_EMAIL: "t@example.com",
    },
  });
}

function gitRepo(dir: string): void {
  git(dir, "init", "-q");
  writeFileSync(join(dir, "README.md"), "hello\n");
  git(dir, "add", "README.md");
  git(dir, "commit", "-q", "-m", "init");
}

describe("the workspace is found as the hooks find it", () => {
  it("from a subdirectory of an initialized workspace: status, edits and history use it", () => {
    expect(tw(proj, ["init"]).status).toBe(0);
    const lib = join(proj, "lib");
    const status = tw(lib, ["status"]).json() as { workspace_root: string; initialized: boolean };
    expect(status.workspace_root).toBe(proj);
    expect(status.initialized).toBe(true);

    const edit = tw(lib, ["edit", "whole", "a.txt", "--content-file", "-"], "from lib\n");
    expect(edit.status).toBe(0);
    expect(readFileSync(join(lib, "a.txt"), "utf8")).toBe("from lib\n");
    expect(existsSync(join(lib, ".timewarp"))).toBe(false);
    const history = tw(proj, ["history"]).json() as { history: { affectedFiles: string[] }[] };
    expect(history.history[0]?.affectedFiles).toEqual(["lib/a.txt"]);
  }, 150_000);

  it("without .timewarp/, the nearest .git decides; no nested store is made", () => {
    gitRepo(proj);
    const lib = join(proj, "lib");
    writeFileSync(join(lib, "x.txt"), "x\n");
    const made = tw(lib, ["snapshot", "create"]);
    expect(made.status).toBe(0);
    expect(existsSync(join(proj, ".timewarp", "snapshots"))).toBe(true);
    expect(existsSync(join(lib, ".timewarp"))).toBe(false);
    const del = tw(lib, ["edit", "delete", "x.txt"]);
    expect(del.status).toBe(0);
    expect(existsSync(join(lib, "x.txt"))).toBe(false);
    expect(existsSync(join(lib, ".timewarp"))).toBe(false);
  }, 150_000);

  it("init in a subdirectory of a workspace refuses (NESTED_WORKSPACE) unless --here", () => {
    expect(tw(proj, ["init"]).status).toBe(0);
    const lib = join(proj, "lib");
    const nested = tw(lib, ["init"]);
    expect(nested.status).not.toBe(0);
    expect((nested.json() as { error: { code: string } }).error.code).toBe("NESTED_WORKSPACE");
    expect(existsSync(join(lib, ".timewarp"))).toBe(false);
    const here = tw(lib, ["init", "--here"]);
    expect(here.status).toBe(0);
    expect((here.json() as { workspace_root: string }).workspace_root).toBe(lib);
  }, 150_000);

  it("init in a subdirectory of a git repository initializes the repository's root", () => {
    gitRepo(proj);
    const r = tw(join(proj, "lib"), ["init"]).json() as { workspace_root: string };
    expect(r.workspace_root).toBe(proj);
    expect(existsSync(join(proj, ".timewarp", "config.json"))).toBe(true);
  }, 150_000);
});

describe(".timewarp/ stays out of git", () => {
  it("a store made by snapshot create, edits and a session start leaves git status clean", () => {
    gitRepo(proj);
    expect(tw(proj, ["snapshot", "create"]).status).toBe(0);
    expect(readFileSync(join(proj, ".timewarp", ".gitignore"), "utf8")).toBe("*\n");
    expect(git(proj, "status", "--porcelain", "--untracked-files=all")).toBe("");
    expect(tw(proj, ["session", "start"]).status).toBe(0);
    expect(git(proj, "status", "--porcelain", "--untracked-files=all")).toBe("");
  }, 150_000);

  it("an existing store without .gitignore gets one on the next command, even a read-only one", () => {
    gitRepo(proj);
    expect(tw(proj, ["init"]).status).toBe(0);
    rmSync(join(proj, ".timewarp", ".gitignore"));
    expect(git(proj, "status", "--porcelain")).not.toBe("");
    expect(tw(join(proj, "lib"), ["status"]).status).toBe(0);
    expect(git(proj, "status", "--porcelain", "--untracked-files=all")).toBe("");
  }, 150_000);
});
