import { execFileSync } from "node:child_process";
import { mkdirSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createFixedClock } from "../src/core/index.ts";
import {
  baselineFromGitStatus,
  extractRun,
  guardRun,
  type LabContext,
} from "../src/memory/index.ts";
import { makeTempDir } from "./helpers/cli.ts";

const git = (cwd: string, ...args: string[]) =>
  execFileSync("git", ["-C", cwd, ...args], { encoding: "utf8" });

describe("baseline: files dirty before the run are not drift", () => {
  const cleanups: (() => void)[] = [];
  afterEach(() => {
    for (const c of cleanups.splice(0)) c();
  });

  it("baselineFromGitStatus reads real `git status --porcelain`: modified, staged, renamed, deleted, untracked, quoted", () => {
    const tmp = makeTempDir("tw-base-");
    cleanups.push(tmp.cleanup);
    const repo = tmp.dir;
    git(repo, "init", "-q");
    git(repo, "config", "user.email", "t@example.com");
    git(repo, "config", "user.name", "t");
    for (const f of ["package.json", "old.md", "gone.txt", "staged.js", "clean.js"])
      writeFileSync(join(repo, f), `${f}\n`);
    git(repo, "add", ".");
    git(repo, "commit", "-q", "-m", "init");
    writeFileSync(join(repo, "package.json"), "{}\n");
    writeFileSync(join(repo, "staged.js"), "changed\n");
    git(repo, "add", "staged.js");
    git(repo, "mv", "old.md", "new.md");
    git(repo, "rm", "-q", "gone.txt");
    mkdirSync(join(repo, "scratch"));
    writeFileSync(join(repo, "scratch", "a.txt"), "x");
    writeFileSync(join(repo, "café.md"), "x");
    writeFileSync(join(repo, ".gitignore"), "ignored.log\n");
    writeFileSync(join(repo, "ignored.log"), "x");
    const status = git(repo, "status", "--porcelain", "--ignored");
    expect(baselineFromGitStatus(status).sort()).toEqual(
      [
        ".gitignore",
        "café.md",
        "gone.txt",
        "new.md",
        "package.json",
        "scratch/",
        "staged.js",
      ].sort(),
    );
    expect(baselineFromGitStatus("")).toEqual([]);
    expect(baselineFromGitStatus("garbage\n?? \n")).toEqual([]);
  });

  it("guards use raw/baseline.txt, else raw/git-status.txt, when goal.json lists no baseline", async () => {
    const tmp = makeTempDir("tw-base-");
    cleanups.push(tmp.cleanup);
    const ctx: LabContext = {
      root: tmp.dir,
      clock: createFixedClock(new Date("2026-01-01T00:00:00Z")),
    };
    const makeRun = (name: string, goal: object, raw: Record<string, string>) => {
      const dir = join(tmp.dir, "runs", name);
      mkdirSync(join(dir, "raw"), { recursive: true });
      writeFileSync(
        join(dir, "raw", "changed_files.txt"),
        "docs/guide.md\npackage.json\nscratch/notes.txt\n",
      );
      for (const [f, text] of Object.entries(raw)) writeFileSync(join(dir, "raw", f), text);
      writeFileSync(
        join(dir, "goal.json"),
        JSON.stringify({
          objective: "document the guide",
          whitelist: ["docs/"],
          blacklist: ["package.json"],
          ...goal,
        }),
      );
      return dir;
    };
    const actions = async (dir: string) => {
      await extractRun(ctx, dir);
      return guardRun(ctx, dir).records.map((r) => `${r.file}:${r.action}`);
    };
    const none = makeRun("none", {}, {});
    expect(await actions(none)).toEqual([
      "docs/guide.md:ok",
      "package.json:rollback",
      "scratch/notes.txt:rollback",
    ]);
    const status = makeRun("status", {}, { "git-status.txt": " M package.json\n?? scratch/\n" });
    expect(await actions(status)).toEqual([
      "docs/guide.md:ok",
      "package.json:ok",
      "scratch/notes.txt:ok",
    ]);
    const list = makeRun(
      "list",
      {},
      {
        "baseline.txt": "# dirty at start\n./package.json\n",
        "git-status.txt": "?? scratch/\n",
      },
    );
    expect(await actions(list)).toEqual([
      "docs/guide.md:ok",
      "package.json:ok",
      "scratch/notes.txt:rollback",
    ]);
    const goalWins = makeRun(
      "goal",
      { baseline: ["scratch/notes.txt"] },
      { "baseline.txt": "package.json\n" },
    );
    expect(await actions(goalWins)).toEqual([
      "docs/guide.md:ok",
      "package.json:rollback",
      "scratch/notes.txt:ok",
    ]);
    renameSync(join(status, "raw", "git-status.txt"), join(status, "raw", "status.old"));
    expect((await actions(status))[1]).toBe("package.json:rollback");
  });
});
