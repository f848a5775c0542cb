import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { makeTempDir, runCli } from "./helpers/cli.ts";

/**
 * `memory events` on an imported run reads its shell commands with web-tree-sitter and the
 * tree-sitter-bash grammar: two .wasm files the bin must find from the bundle (run this file with
 * TIMEWARP_TEST_CLI=bin after `npm run build`, as `npm test` does).
 */
describe("timewarp memory events on raw/trajectory.jsonl (CLI)", () => {
  const cleanups: (() => void)[] = [];
  afterEach(() => {
    for (const c of cleanups.splice(0)) c();
  });

  it("reads the shell steps: writes are edits, reads are not, tests carry their counts; --from trajectory", () => {
    const tmp = makeTempDir("tw-traj-cli-");
    cleanups.push(tmp.cleanup);
    const run = join(tmp.dir, "run-1");
    mkdirSync(join(run, "raw"), { recursive: true });
    const steps = [
      { kind: "user", text: "make slugify keep accented letters" },
      {
        kind: "tool",
        tool: "bash",
        call: "shell",
        command: "cat src/slug.py && grep -rn slug tests/",
        output: "def slug(s): ...",
        exit_code: 0,
      },
      {
        kind: "tool",
        tool: "bash",
        call: "shell",
        command: "cd /testbed && python -m pytest tests/test_slug.py -q 2>&1 | tail -3",
        output: "F..\n1 failed, 2 passed in 0.05s",
        exit_code: 0,
      },
      {
        kind: "tool",
        tool: "bash",
        call: "shell",
        command: "sed -i 's/ascii/casefold/' src/slug.py",
        output: "",
        exit_code: 0,
      },
      {
        kind: "tool",
        tool: "bash",
        call: "shell",
        command: "python -c 'import pytest' && pytest -q tests/test_slug.py",
        output: "...\n3 passed in 0.04s",
        exit_code: 0,
      },
    ].map((s, i) => `${JSON.stringify({ i, ...s })}\n`);
    writeFileSync(join(run, "raw", "trajectory.jsonl"), steps.join(""));
    const r = runCli(["memory", "events", run, "--json"], { cwd: tmp.dir });
    expect(r.stderr).toBe("");
    expect(r.status).toBe(0);
    const body = r.json() as {
      sources: string[];
      events: {
        tool: string;
        where?: string;
        cmd?: string;
        phase: string;
        source: string;
        result?: { passed: number; failed: number };
      }[];
    };
    expect(body.sources).toEqual(["trajectory"]);
    expect(body.events.map((e) => [e.tool, e.where ?? e.cmd, e.phase, e.result?.failed])).toEqual([
      [
        "shell",
        "cd /testbed && python -m pytest tests/test_slug.py -q 2>&1 | tail -3",
        "reproduce",
        1,
      ],
      ["edit", "src/slug.py", "modify", undefined],
      ["shell", "python -c 'import pytest' && pytest -q tests/test_slug.py", "test", 0],
    ]);
    const only = runCli(["memory", "events", run, "--from", "trajectory", "--json"], {
      cwd: tmp.dir,
    });
    expect(only.status).toBe(0);
    expect((only.json() as { events: unknown[] }).events).toHaveLength(3);
  }, 120_000); // two CLI runs that load the grammar: 38 s at a load of 10, past the 30 s default
});
