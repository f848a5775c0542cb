import { readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { tempDirs } from "../../test/helpers/temp-dirs.ts";
import { extractPatchEvents } from "./extract-patch.ts";
import { extractTermEvents } from "./extract-term.ts";
import { extractTranscriptEvents } from "./extract-transcript.ts";
import { loadShellParser, testFramework } from "./shell-command.ts";
import { parseTestOutput } from "./test-output.ts";

const tempDir = tempDirs("tw-tr-");

beforeAll(() => loadShellParser());

const line = (v: unknown) => `${JSON.stringify(v)}\n`;
const use = (id: string, name: string, input: unknown) =>
  line({
    type: "assistant",
    cwd: "/ws",
    message: { content: [{ type: "tool_use", id, name, input }] },
  });
const result = (id: string, content: string, isError = false) =>
  line({
    type: "user",
    cwd: "/ws",
    message: { content: [{ type: "tool_result", tool_use_id: id, content, is_error: isError }] },
  });

describe("transcript (Claude Code JSONL)", () => {
  it("takes exactly the tool calls: edits (failed ones dropped), tests with their results, todos as plans; a torn line is a warning", async () => {
    const dir = tempDir();
    const file = join(dir, "t.jsonl");
    writeFileSync(
      file,
      [
        line({
          type: "assistant",
          message: { content: [{ type: "text", text: "I updated everything and all tests pass" }] },
        }),
        use("a", "Bash", { command: "pytest -q" }),
        result("a", "Exit code 1\n1 failed, 2 passed in 0.1s", true),
        use("b", "TodoWrite", { todos: [{ content: "fix parser", status: "pending" }] }),
        use("c", "Edit", { file_path: "/ws/src/parser.py", old_string: "a", new_string: "b" }),
        result("c", "ok"),
        use("d", "Write", { file_path: "/ws/src/missing/x.py", content: "x" }),
        result("d", "Error: directory missing", true),
        '{"type":"assistant","message":{"content":[{"type":"tool_use"\n',
        use("e", "MultiEdit", {
          file_path: "/ws/tests/test_p.py",
          edits: [{ old_string: "x", new_string: "@pytest.mark.skip" }],
        }),
        use("f", "Bash", { command: "ls -la" }),
        use("g", "Bash", { command: "npx vitest run" }),
        result("g", " Tests  3 passed (3)\n"),
      ].join(""),
    );
    const r = await extractTranscriptEvents(file);
    expect(r.events.map((e) => [e.tool, e.where ?? e.cmd ?? e.why])).toEqual([
      ["shell", "pytest -q"],
      ["plan", "fix parser"],
      ["edit", "src/parser.py"],
      ["edit", "tests/test_p.py"],
      ["shell", "npx vitest run"],
    ]);
    expect(r.events[0]?.result).toMatchObject({ passed: 2, failed: 1, exit_code: 1 });
    expect(r.events[3]?.evidence).toContain("+@pytest.mark.skip");
    expect(r.events[4]?.result).toMatchObject({ framework: "vitest", passed: 3, failed: 0 });
    expect(r.warnings).toContain("line 9: not valid JSON (torn line?), skipped");
    expect(
      r.warnings.some((w) => w.includes("MultiEdit call on tests/test_p.py has no tool_result")),
    ).toBe(true);
  });
});

describe("term.log", () => {
  it("splits on prompts and parses counts for each framework", async () => {
    const log = [
      "dev@box:~/p$ pytest -q",
      "F..",
      "1 failed, 2 passed in 0.2s",
      "$ npm test",
      "Tests:       1 failed, 5 passed, 6 total",
      "$ npx vitest run",
      " Tests  2 failed | 10 passed (12)",
      "$ go test ./...",
      "--- PASS: TestA (0.00s)",
      "--- FAIL: TestB (0.00s)",
      "FAIL\tpkg\t0.01s",
      "$ mvn -q test",
      "Tests run: 10, Failures: 1, Errors: 1, Skipped: 2",
      "$ cargo test",
      "test result: ok. 5 passed; 0 failed; 1 ignored; 0 measured",
      "$ ls",
      "README.md",
      "$ make test",
      "exit code: 2",
    ].join("\n");
    const r = await extractTermEvents(log);
    expect(
      r.events.map((e) => [
        e.cmd,
        e.result?.framework,
        e.result?.passed,
        e.result?.failed,
        e.result?.skipped,
      ]),
    ).toEqual([
      ["pytest -q", "pytest", 2, 1, 0],
      ["npm test", "jest", 5, 1, 0],
      ["npx vitest run", "vitest", 10, 2, 0],
      ["go test ./...", "go", 1, 1, 0],
      ["mvn -q test", "maven", 6, 2, 2],
      ["cargo test", "cargo", 5, 0, 1],
      ["make test", "make", 0, 1, 0],
    ]);
    expect(r.events[6]?.result?.exit_code).toBe(2);
  });

  it("a log without prompts is one run of the framework its output shows; no test at all is a warning", async () => {
    expect((await extractTermEvents("=== 4 passed in 1.0s ===")).events).toMatchObject([
      { cmd: "pytest", result: { passed: 4 } },
    ]);
    expect((await extractTermEvents("$ ls\nfoo")).warnings).toEqual([
      "term.log: no test command found",
    ]);
    expect(testFramework("python -m pytest tests")).toBe("pytest");
    expect(testFramework("git status")).toBeUndefined();
    expect(parseTestOutput("  5 passing (1s)\n  1 failing")).toMatchObject({
      framework: "mocha",
      passed: 5,
      failed: 1,
    });
  });
});

describe("patch.diff", () => {
  it("one edit per file with the change kind, counts and first line", async () => {
    const patch = [
      "diff --git a/README.md b/README.md",
      "index 1111111..2222222 100644",
      "--- a/README.md",
      "+++ b/README.md",
      "@@ -2,2 +2,3 @@",
      " a",
      "-b",
      "+c",
      "+d",
      "diff --git a/new.txt b/new.txt",
      "new file mode 100644",
      "index 0000000..3333333",
      "--- /dev/null",
      "+++ b/new.txt",
      "@@ -0,0 +1 @@",
      "+hello",
      "diff --git a/old.txt b/old.txt",
      "deleted file mode 100644",
      "index 4444444..0000000",
      "--- a/old.txt",
      "+++ /dev/null",
      "@@ -1 +0,0 @@",
      "-bye",
      "",
    ].join("\n");
    const r = extractPatchEvents(patch);
    expect(r.events.map((e) => [e.where, e.change, e.stats])).toEqual([
      ["README.md:2", "modified", { added: 2, removed: 1 }],
      ["new.txt:1", "added", { added: 1, removed: 0 }],
      ["old.txt", "deleted", { added: 0, removed: 1 }],
    ]);
    expect(r.events.every((e) => e.source === "patch" && e.confidence === 1)).toBe(true);
  });

  it("a patch that does not parse is a warning naming the line, and no events", async () => {
    const r = extractPatchEvents("diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n-a\n");
    expect(r.events).toEqual([]);
    expect(r.warnings[0]).toMatch(/line|hunk/i);
  });
});

describe("node --test output (real runs of examples/demo-project)", () => {
  const fixture = (name: string) =>
    readFileSync(resolve(import.meta.dirname, "../../test/fixtures/memory", name), "utf8");

  it("TAP: counts and each named test; the later of two runs wins; a `# label` is not the command", async () => {
    const log = fixture("runs/r08-node-test-slugify/raw/term.log");
    const { events, warnings } = await extractTermEvents(log);
    expect(warnings).toEqual([]);
    expect(events.map((e) => [e.cmd, e.why])).toEqual([
      ["npm test", "after the agent's first attempt"],
      ["npm test", "fix re-applied in the present"],
    ]);
    expect(events[0]?.result).toMatchObject({ framework: "node", passed: 2, failed: 1 });
    expect(events[0]?.result?.tests).toEqual([
      { name: "ascii titles", status: "pass" },
      { name: "accented titles keep their letters", status: "fail" },
      { name: "paths", status: "pass" },
    ]);
    expect(events[1]?.result).toMatchObject({ passed: 3, failed: 0 });
    // both runs in one output: the last summary and its names
    expect(parseTestOutput(log)?.tests?.[1]).toEqual({
      name: "accented titles keep their letters",
      status: "pass",
    });
  });

  it("spec reporter: ✔/✖ lines and ℹ summary; the repeated failure list is not counted twice", async () => {
    const r = parseTestOutput(fixture("node-test/spec-fail.log"));
    expect(r).toMatchObject({ framework: "node", passed: 2, failed: 1, skipped: 0 });
    expect(r?.tests).toEqual([
      { name: "ascii titles", status: "pass" },
      { name: "accented titles keep their letters", status: "fail" },
      { name: "paths", status: "pass" },
    ]);
    expect(parseTestOutput(fixture("node-test/spec-pass.log"))).toMatchObject({
      passed: 3,
      failed: 0,
    });
    expect(testFramework("node --test")).toBe("node");
    expect(testFramework("node --test-reporter=spec --test test/")).toBe("node");
    expect(testFramework("node server.js")).toBeUndefined();
  });

  it("skips and todos count as skipped; no summary, no result", async () => {
    const r = parseTestOutput(
      "ok 1 - a\nok 2 - b # SKIP not on CI\nnot ok 3 - c # TODO later\n1..3\n# tests 3\n# pass 1\n# fail 0\n# skipped 1\n# todo 1\n",
    );
    expect(r).toMatchObject({ passed: 1, failed: 0, skipped: 2 });
    expect(r?.tests?.map((t) => t.status)).toEqual(["pass", "skip", "skip"]);
    expect(parseTestOutput("ok 1 - a\nok 2 - b\n", "node")).toBeUndefined();
  });
});
