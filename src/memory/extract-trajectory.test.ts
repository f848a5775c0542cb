import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDirs } from "../../test/helpers/temp-dirs.ts";
import { extractRunEvents } from "./extract-events.ts";
import { extractTrajectoryEvents } from "./extract-trajectory.ts";
import type { TrajectoryStep } from "./trajectory.ts";

const tempDir = tempDirs("tw-traj-");

const FILE = "/testbed/astropy/modeling/separable.py";
const REL = "astropy/modeling/separable.py";

/** A bash-and-editor agent on a SWE-bench task, as an importer writes it (SWE-agent / mini-swe-agent shape). */
function sweRun(): Omit<TrajectoryStep, "i">[] {
  const sh = (command: string, output: string, exit_code: number | null = 0) => ({
    kind: "tool" as const,
    tool: "bash",
    call: "shell" as const,
    command,
    output,
    exit_code,
  });
  const editor = (input: Record<string, unknown>, extra: Partial<TrajectoryStep> = {}) => ({
    kind: "tool" as const,
    tool: "str_replace_editor",
    call: "edit" as const,
    input,
    paths: [String(input.path)],
    ...extra,
  });
  return [
    {
      kind: "user",
      text: "separability_matrix does not compute separability correctly for nested CompoundModels",
    },
    { kind: "assistant", text: "Let me look at the repository. I updated nothing yet." },
    sh("cd /testbed && ls", "astropy\nsetup.cfg\nsetup.py\n"),
    sh(`cat ${FILE}`, "def _cstack(left, right):\n    ...\n"),
    sh("grep -n '_cstack' astropy/modeling/separable.py", "219:def _cstack(left, right):"),
    sh("sed -n '230,250p' astropy/modeling/separable.py", "    cright = ..."),
    sh(
      "cat > /testbed/reproduce.py <<'EOF'\nimport pytest\nfrom astropy.modeling import models as m\nfrom astropy.modeling.separable import separability_matrix\ncm = m.Linear1D(10) & m.Linear1D(5)\nprint(separability_matrix(m.Pix2Sky_TAN() & cm))\nEOF",
      "",
    ),
    sh(
      "cd /testbed && python reproduce.py",
      "[[ True  True False False]\n [ True  True False False]\n [False False  True  True]\n [False False  True  True]]",
      1,
    ),
    editor({ command: "view", path: FILE, view_range: [230, 250] }, { output: "   230\t..." }),
    editor(
      {
        command: "str_replace",
        path: FILE,
        old_str: "cright[-right.shape[0]:, -right.shape[1]:] = 1",
        new_str: "cright[-right.shape[0]:, -right.shape[1]:] = right",
      },
      {
        diff: "-        cright[-right.shape[0]:, -right.shape[1]:] = 1\n+        cright[-right.shape[0]:, -right.shape[1]:] = right",
        output: "The file has been edited.",
      },
    ),
    editor(
      {
        command: "str_replace",
        path: "/testbed/astropy/modeling/core.py",
        old_str: "x",
        new_str: "y",
      },
      {
        is_error: true,
        output: "No replacement was performed, old_str `x` did not appear verbatim",
      },
    ),
    editor(
      {
        command: "str_replace",
        path: "/testbed/astropy/modeling/mappings.py",
        old_str: "a",
        new_str: "b",
      },
      {
        output:
          "No replacement was performed, old_str `a` did not appear verbatim in /testbed/astropy/modeling/mappings.py.",
      },
    ),
    sh(
      "cd /testbed && python reproduce.py",
      "[[ True False False]\n [False  True False]\n [False False  True]]",
    ),
    sh(
      "cd /testbed && python -m pytest astropy/modeling/tests/test_separable.py -q 2>&1 | tail -5",
      "..F............\nFAILED astropy/modeling/tests/test_separable.py::test_custom_model_separable\n1 failed, 14 passed in 0.52s",
      0,
    ),
    sh(
      "python - <<'EOF'\np = 'setup.cfg'\ns = open(p).read().replace('filterwarnings =', 'filterwarnings =\\n    ignore::DeprecationWarning')\nopen(p, 'w').write(s)\nEOF",
      "",
    ),
    sh(
      "sed -i 's/^    error$/    ignore/' astropy/modeling/tests/test_separable.py && echo done",
      "done",
    ),
    sh(
      "python -m pytest astropy/modeling/tests/test_separable.py -q",
      "...............\n15 passed in 0.50s",
      0,
    ),
    sh("python -m pytest astropy/modeling/tests/ -q -x", "", null),
    sh("rm /testbed/reproduce.py && git status --short", " M astropy/modeling/separable.py"),
    {
      kind: "tool",
      tool: "TodoWrite",
      call: "plan",
      input: { todos: [{ content: "run the whole modeling suite", status: "pending" }] },
    },
    sh("git diff", "diff --git a/astropy/modeling/separable.py ..."),
  ];
}

function writeRun(files: Record<string, string>): string {
  const dir = tempDir();
  mkdirSync(join(dir, "raw"));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, "raw", name), text);
  return dir;
}

const jsonl = (steps: Omit<TrajectoryStep, "i">[]) =>
  steps.map((s, i) => `${JSON.stringify({ i, ...s })}\n`).join("");

describe("extractTrajectoryEvents", () => {
  it("edits, tests and reproductions from facts; reads, prose, failed edits and scratch files give nothing", async () => {
    const dir = writeRun({
      "trajectory.jsonl": `${jsonl(sweRun())}{"i":99,"kind":"tool"\n{"i":-1}\n`,
    });
    const r = await extractTrajectoryEvents(join(dir, "raw", "trajectory.jsonl"));
    expect(r.root).toBe("/testbed");
    expect(
      r.events.map((e) => [e.tool, e.where ?? e.cmd ?? e.why, e.phase ?? "", e.confidence]),
    ).toEqual([
      ["shell", "cd /testbed && python reproduce.py", "reproduce", 0.9],
      ["edit", REL, "", 1],
      ["shell", "cd /testbed && python reproduce.py", "reproduce", 0.9],
      [
        "shell",
        "cd /testbed && python -m pytest astropy/modeling/tests/test_separable.py -q 2>&1 | tail -5",
        "",
        1,
      ],
      ["edit", "astropy/modeling/tests/test_separable.py", "", 0.9],
      ["shell", "python -m pytest astropy/modeling/tests/test_separable.py -q", "", 1],
      ["shell", "python -m pytest astropy/modeling/tests/ -q -x", "", 1],
      ["plan", "run the whole modeling suite", "", 1],
    ]);
    // the reproduction's exit code is its result; the piped pytest's summary beats `| tail`'s exit 0
    expect(r.events[0]?.result).toMatchObject({ framework: "script", failed: 1, exit_code: 1 });
    expect(r.events[2]?.result).toMatchObject({ framework: "script", passed: 1, exit_code: 0 });
    expect(r.events[3]?.result).toMatchObject({
      framework: "pytest",
      passed: 14,
      failed: 1,
      exit_code: 0,
    });
    expect(r.events[5]?.result).toMatchObject({ passed: 15, failed: 0 });
    // no output and no exit code: unknown, never a pass
    expect(r.events[6]?.result).toBeUndefined();
    expect(r.events[1]?.evidence).toContain(
      "+        cright[-right.shape[0]:, -right.shape[1]:] = right",
    );
    expect(r.events[4]?.why).toMatch(/^sed -i in `sed -i/);
    expect(r.warnings).toEqual([
      expect.stringMatching(/^line 22: not valid JSON/),
      expect.stringMatching(/^line 23: i: /),
    ]);
  });

  it("the issue's bad cases: a cat-ed file is no edit, code lines that mention pytest are no test", async () => {
    const steps: Omit<TrajectoryStep, "i">[] = [
      {
        kind: "tool",
        tool: "bash",
        call: "shell",
        command: "cat tests/test_io.py",
        output:
          'import pytest\npd = pytest.importorskip("pandas")\nwith pytest.raises(ValueError):\n    pass',
        exit_code: 0,
      },
      {
        kind: "tool",
        tool: "bash",
        call: "shell",
        command: "import pytest",
        output: "bash: import: command not found",
        exit_code: 127,
      },
      {
        kind: "tool",
        tool: "bash",
        call: "shell",
        command: 'pd = pytest.importorskip("pandas")',
        output: "bash: syntax error",
        exit_code: 2,
      },
      {
        kind: "tool",
        tool: "bash",
        call: "shell",
        command: "head -n 40 src/io.py | nl && git diff && git log -3",
        output: "",
        exit_code: 0,
      },
    ];
    const dir = writeRun({ "trajectory.jsonl": jsonl(steps) });
    const r = await extractTrajectoryEvents(join(dir, "raw", "trajectory.jsonl"));
    expect(r.events).toEqual([]);
  });
});

describe("SWE-agent's own commands, run in its shell", () => {
  it("open + edit N:M edits the open file (not when it was refused); create + run + rm is a reproduction, no edit", async () => {
    const sh = (command: string, output = "") => ({
      kind: "tool" as const,
      tool: "bash",
      call: "shell" as const,
      command,
      output,
    });
    const steps: Omit<TrajectoryStep, "i">[] = [
      sh('find_file "separable.py"', "Found 1 matches"),
      sh("create reproduce.py", "[File: /testbed/reproduce.py (1 lines total)]"),
      sh(
        "edit 1:1\nfrom astropy.modeling import models as m\nprint(m)\nend_of_edit",
        "File updated.",
      ),
      sh("python reproduce.py", "[[ True  True]]"),
      sh(
        "open astropy/modeling/separable.py 242",
        "[File: /testbed/astropy/modeling/separable.py (317 lines total)]",
      ),
      sh('search_file "_cstack"', "Found 2 matches"),
      {
        ...sh(
          "edit 245:245\n        cright[-right.shape[0]:, -right.shape[1]:] = right\nend_of_edit",
          "File updated.",
        ),
        ts: "2026-01-01T00:00:05Z",
      },
      sh(
        "edit 250:250\n  bad indent\nend_of_edit",
        "Your proposed edit has introduced new syntax error(s).",
      ),
      sh(
        "str_replace_editor str_replace /testbed/astropy/modeling/core.py --old_str a --new_str b",
        "The file has been edited.",
      ),
      sh("str_replace_editor view /testbed/astropy/modeling/mappings.py", "     1\t..."),
      sh("rm reproduce.py"),
      sh("submit"),
    ];
    const dir = writeRun({ "trajectory.jsonl": jsonl(steps) });
    const r = await extractTrajectoryEvents(join(dir, "raw", "trajectory.jsonl"));
    expect(r.events.map((e) => [e.tool, e.where ?? e.cmd, e.phase ?? ""])).toEqual([
      ["shell", "python reproduce.py", "reproduce"],
      ["edit", "astropy/modeling/separable.py", ""],
      ["edit", "astropy/modeling/core.py", ""],
    ]);
    expect(r.events[1]?.ts).toBe("2026-01-01T00:00:05Z");
  });
});

const PATCH = [
  "diff --git a/astropy/modeling/separable.py b/astropy/modeling/separable.py",
  "--- a/astropy/modeling/separable.py",
  "+++ b/astropy/modeling/separable.py",
  "@@ -242,3 +242,3 @@ def _cstack(left, right):",
  "         cright = np.zeros((noutp, right.shape[1]))",
  "-        cright[-right.shape[0]:, -right.shape[1]:] = 1",
  "+        cright[-right.shape[0]:, -right.shape[1]:] = right",
  " ",
  "diff --git a/setup.cfg b/setup.cfg",
  "--- a/setup.cfg",
  "+++ b/setup.cfg",
  "@@ -10,2 +10,3 @@",
  " filterwarnings =",
  "+    ignore::DeprecationWarning",
  "     error",
  "",
].join("\n");

const CHAT = [
  "# Fix separability",
  "_Exported on 11/20/2026 at 10:00:00 GMT from Cursor (1.7.53)_",
  "",
  "---",
  "",
  "**User**",
  "",
  "Fix separability_matrix for nested models.",
  "",
  "---",
  "",
  "**Cursor**",
  "",
  "I updated astropy/modeling/separable.py and also changed astropy/modeling/core.py to match.",
  "",
  "I ran `python -m pytest astropy/modeling/tests/test_separable.py -q` and all tests passed.",
  "",
].join("\n");

/** A terminal log made of the same runs (as converted SWE-bench runs have): it adds provenance, and the result a step lacked. */
const TERM = [
  "$ python -m pytest astropy/modeling/tests/test_separable.py -q",
  "...............",
  "15 passed in 0.50s",
  "$ python -m pytest astropy/modeling/tests/ -q -x   # the modeling suite",
  "1 failed, 300 passed in 12.01s",
  "",
].join("\n");

describe("extractRunEvents combines the sources with provenance", () => {
  it("steps + patch + chat + term: one event per edit with every source that saw it; prose claims stay claims", async () => {
    const dir = writeRun({
      "trajectory.jsonl": jsonl(sweRun()),
      "patch.diff": PATCH,
      "cursor.md": CHAT,
      "term.log": TERM,
    });
    const r = await extractRunEvents(dir);
    expect(r.sources).toEqual(["trajectory", "chat", "patch", "term"]);
    const edits = r.events.filter((e) => e.tool === "edit");
    expect(
      edits.map((e) => [e.where, e.source, e.also ?? [], e.claim ?? false, e.confidence]),
    ).toEqual([
      [REL, "trajectory", ["patch", "chat"], false, 1],
      ["astropy/modeling/tests/test_separable.py", "trajectory", [], false, 0.9],
      // written by `python - <<EOF`, which names no file: the patch shows it, after the last edit seen
      ["setup.cfg:10", "patch", [], false, 1],
      // the chat claims it; no step, no patch shows it
      ["astropy/modeling/core.py", "chat", [], true, 0.3],
    ]);
    expect(edits[0]?.stats).toEqual({ added: 1, removed: 1 });
    const tests = r.events.filter((e) => e.tool === "shell");
    expect(tests.map((e) => [e.cmd, e.phase, e.source, e.also ?? [], e.result?.failed])).toEqual([
      ["cd /testbed && python reproduce.py", "reproduce", "trajectory", [], 1],
      ["cd /testbed && python reproduce.py", "reproduce", "trajectory", [], 0],
      [
        "cd /testbed && python -m pytest astropy/modeling/tests/test_separable.py -q 2>&1 | tail -5",
        "test",
        "trajectory",
        [],
        1,
      ],
      [
        "python -m pytest astropy/modeling/tests/test_separable.py -q",
        "test",
        "trajectory",
        ["term"],
        0,
      ],
      // the step's output was lost: the log's run gives the result
      ["python -m pytest astropy/modeling/tests/ -q -x", "regress", "term", ["trajectory"], 1],
    ]);
    // one source alone still works
    const only = await extractRunEvents(dir, { from: "trajectory", write: false });
    expect(only.sources).toEqual(["trajectory"]);
    expect(only.events.filter((e) => e.tool === "edit")).toHaveLength(2);
  });

  it("a Claude Code run that edits through Bash: the transcript's Bash gives the tests and the edit, patch.diff confirms it, term.log adds the later runs", async () => {
    const line = (v: unknown) => `${JSON.stringify(v)}\n`;
    const use = (id: string, command: string) =>
      line({
        type: "assistant",
        cwd: "/ws",
        message: { content: [{ type: "tool_use", id, name: "Bash", input: { command } }] },
      });
    const result = (id: string, content: string, isError = false) =>
      line({
        type: "user",
        cwd: "/ws",
        message: {
          content: [{ type: "tool_result", tool_use_id: id, content, is_error: isError }],
        },
      });
    const dir = writeRun({
      "transcript.jsonl": [
        use("a", "cat src/slug.py"),
        result("a", "def slug(s): ..."),
        use("b", 'python -c "import pytest" && pytest -q tests/test_slug.py'),
        result("b", "Exit code 1\n1 failed, 3 passed in 0.10s", true),
        use("c", "sed -i 's/lower()/casefold()/' src/slug.py"),
        result("c", ""),
        use("d", "pytest -q tests/test_slug.py"),
        result("d", "4 passed in 0.09s"),
      ].join(""),
      "patch.diff":
        "--- a/src/slug.py\n+++ b/src/slug.py\n@@ -1 +1 @@\n-def slug(s): return s.lower()\n+def slug(s): return s.casefold()\n",
      "term.log": "$ pytest -q\n12 passed in 0.30s\n",
    });
    const r = await extractRunEvents(dir);
    expect(r.sources).toEqual(["transcript", "patch", "term"]);
    expect(r.events.map((e) => [e.tool, e.where ?? e.cmd, e.phase, e.source])).toEqual([
      [
        "shell",
        'python -c "import pytest" && pytest -q tests/test_slug.py',
        "reproduce",
        "transcript",
      ],
      // the sed -i in Bash is the edit; the patch confirms it
      ["edit", "src/slug.py", "modify", "transcript"],
      ["shell", "pytest -q tests/test_slug.py", "test", "transcript"],
      ["shell", "pytest -q", "regress", "term"],
    ]);
    expect(r.events[1]).toMatchObject({
      also: ["patch"],
      confidence: 1,
      stats: { added: 1, removed: 1 },
    });
  });

  it("a conversation imported as messages only (Cursor, the lab) is read as a chat", async () => {
    const steps: Omit<TrajectoryStep, "i">[] = [
      { kind: "user", text: "Translate README.md into Chinese; do not touch the code." },
      {
        kind: "assistant",
        text: "I have updated README.md:\n\n```markdown:README.md\n# 快速开始\n```\n\nI ran `pytest -q tests/test_docs.py` and 3 passed.",
      },
    ];
    const dir = writeRun({ "trajectory.jsonl": jsonl(steps) });
    const r = await extractRunEvents(dir, { write: false });
    expect(r.sources).toEqual(["trajectory", "chat"]);
    expect(r.events.map((e) => [e.tool, e.where ?? e.cmd, e.source, e.confidence])).toEqual([
      ["edit", "README.md", "chat", 0.9],
      ["shell", "pytest -q tests/test_docs.py", "chat", 0.6],
    ]);
  });

  it("a chat-only run: a cat-ed file is no edit, term.log's results are kept although the chat names the command", async () => {
    const chat = [
      "**User**",
      "",
      "Why does parse fail?",
      "",
      "---",
      "",
      "**Cursor**",
      "",
      "Let me look at src/parse.py first.",
      "",
      "```bash",
      "cat src/parse.py",
      "```",
      "",
      "```",
      "import pytest",
      "def parse(s): ...",
      "```",
      "",
      "I updated src/parse.py and src/parse.py is fixed now.",
      "",
      "```bash",
      "$ sed -i 's/old/new/' docs/parse.md",
      "$ pytest -q tests/test_parse.py",
      "```",
      "",
      "```python",
      "import pytest",
      'pd = pytest.importorskip("pandas")',
      "with pytest.raises(ValueError):",
      "    parse('')",
      "```",
      "",
      "I ran `pytest -q tests/test_parse.py` and it passed.",
      "",
    ].join("\n");
    const dir = writeRun({
      "cursor.md": chat,
      "term.log": "$ pytest -q tests/test_parse.py\n.F\n1 failed, 1 passed in 0.05s\n",
    });
    const r = await extractRunEvents(dir);
    const edits = r.events.filter((e) => e.tool === "edit");
    // src/parse.py was only cat-ed: the prose cue does not make it an edit; docs/parse.md was written by sed -i
    expect(edits.map((e) => [e.where, e.source, e.claim ?? false])).toEqual([
      ["docs/parse.md", "chat", false],
    ]);
    const tests = r.events.filter((e) => e.tool === "shell");
    expect(tests.map((e) => [e.cmd, e.source, e.result?.failed])).toEqual([
      ["pytest -q tests/test_parse.py", "term", 1],
      // prose says "it passed": no count, no exit code — unknown, not a pass
      ["pytest -q tests/test_parse.py", "chat", undefined],
    ]);
    expect(tests[0]?.also).toEqual(["chat"]);
  });
});
