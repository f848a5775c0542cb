import { describe, expect, it } from "vitest";
import { parseGoal } from "./goal.ts";
import { actionFor, checkEdit, driftScore, runGuards, summarizeGuards } from "./guards.ts";
import type { Goal, GoalInput, MemoryEvent } from "./schemas.ts";

function goal(input: Partial<GoalInput> = {}): Goal {
  const r = parseGoal({ objective: "translate README.md to Chinese", ...input });
  if (!r.ok) throw new Error(r.issues.join("; "));
  return r.value.goal;
}

let step = 0;
const edit = (where: string, extra: Partial<MemoryEvent> = {}): MemoryEvent => ({
  run_id: "r",
  step: step++,
  phase: "modify",
  tool: "edit",
  where,
  ...extra,
});
const test = (
  cmd: string,
  passed: number,
  failed: number,
  phase: MemoryEvent["phase"] = "test",
): MemoryEvent => ({
  run_id: "r",
  step: step++,
  phase,
  tool: "shell",
  cmd,
  result: { framework: "pytest", passed, failed, skipped: 0, exit_code: null },
});
const plan = (why: string): MemoryEvent => ({
  run_id: "r",
  step: step++,
  phase: "modify",
  tool: "plan",
  why,
});

describe("drift score and actions", () => {
  it("makes rollback reachable: an out-of-scope edit under the default weights rolls back", () => {
    const g = goal({ whitelist: ["README.md", "docs/"], blacklist: ["requirements*.txt"] });
    const [r] = runGuards(
      g,
      [edit("requirements.txt", { evidence: "x", source: "chat", confidence: 0.9 })],
      { gitWorkTree: true },
    );
    expect(r).toMatchObject({
      scope_guard: 1,
      action: "rollback",
      auto_fixable: true,
      fix_cmd: "git checkout -- requirements.txt",
    });
    expect(r?.drift_score).toBeGreaterThanOrEqual(0.8);
  });

  it("whitelist_scope grades an edit outside the whitelist; the blacklist still rolls back", () => {
    const g = goal({ whitelist: ["src/"], blacklist: ["package.json"], whitelist_scope: 0.5 });
    const check = (path: string) => checkEdit(g, { paths: [path], tool: "Edit", content: "x" });
    expect(check("README.md")).toMatchObject({ drift_score: 0.5, action: "warn" });
    expect(check("README.md").reasons).toContain("scope: README.md is not in the whitelist [src/]");
    expect(check("package.json")).toMatchObject({ drift_score: 1, action: "rollback" });
    expect(check("src/a.ts")).toMatchObject({ drift_score: 0, action: "ok" });
    // the default keeps the whitelist as strict as the blacklist
    const strict = goal({ whitelist: ["src/"] });
    expect(checkEdit(strict, { paths: ["README.md"] }).action).toBe("rollback");
    expect(parseGoal({ objective: "o", whitelist_scope: 2 })).toMatchObject({ ok: false });
  });

  it("an in-scope edit without evidence is ok; unplanned and unshown is warn", () => {
    const g = goal({ whitelist: ["README.md", "docs/"] });
    const [a] = runGuards(g, [edit("docs/a/b/guide.md", { source: "chat", confidence: 0.7 })]);
    expect(a).toMatchObject({ scope_guard: 0, evidence_guard: 1, action: "ok", drift_score: 0.25 });
    const rs = runGuards(g, [
      plan("first translate README.md"),
      edit("docs/other.md", { source: "chat" }),
    ]);
    expect(rs[0]).toMatchObject({ tool: "plan", action: "ok", drift_score: 0 });
    expect(rs[1]).toMatchObject({
      plan_guard: 0.5,
      evidence_guard: 1,
      action: "warn",
      drift_score: 0.625,
    });
  });

  it("docs/ matches what is under it; the blacklist wins over the whitelist, and says so", () => {
    const g = goal({ whitelist: ["docs/", "src/"], blacklist: ["src/vendor/"] });
    const rs = runGuards(g, [
      edit("docs/deep/nested/x.md", { source: "patch" }),
      edit("src/vendor/lib.js", { source: "patch" }),
    ]);
    expect(rs[0]?.action).toBe("ok");
    expect(rs[1]?.action).toBe("rollback");
    expect(rs[1]?.reasons.join(" ")).toContain("the blacklist wins");
  });

  it("files modified before the run started are a baseline, not drift", () => {
    const g = goal({ whitelist: ["docs/"], baseline: ["./package.json"] });
    const [r] = runGuards(g, [edit("package.json", { source: "patch" })]);
    expect(r).toMatchObject({ scope_guard: 0, action: "ok" });
    expect(r?.reasons[0]).toContain("baseline");
  });

  it("fix_cmd: git checkout in a work tree, rm for an added file, timewarp revert otherwise, none without either", () => {
    const g = goal({ whitelist: ["docs/"] });
    const events = [
      edit("a.txt", { source: "patch" }),
      edit("new file.txt", { source: "patch", change: "added" }),
      edit("b.txt", { source: "ledger", op_id: "op_123" }),
    ];
    const git = runGuards(g, events, { gitWorkTree: true });
    expect(git.map((r) => r.fix_cmd)).toEqual([
      "git checkout -- a.txt",
      "rm -f -- 'new file.txt'",
      "git checkout -- b.txt",
    ]);
    const noGit = runGuards(g, events, { gitWorkTree: false });
    expect(noGit.map((r) => r.fix_cmd)).toEqual([undefined, undefined, "timewarp revert op_123"]);
    expect(noGit[0]?.auto_fixable).toBe(false);
  });

  it("weights and thresholds from goal.json override the defaults", () => {
    const g = goal({
      whitelist: ["docs/"],
      weights: { scope: 0.1, plan: 0.3, test: 0.2, evidence: 0.4 },
    });
    const [out, unshown] = runGuards(g, [
      edit("src/a.ts", { source: "patch" }),
      edit("docs/a.md", { source: "chat" }),
    ]);
    expect(out).toMatchObject({ drift_score: 0.25, action: "ok" });
    expect(unshown).toMatchObject({ drift_score: 1, action: "rollback" });
    const strict = goal({ thresholds: { warn: 0.2, rollback: 0.9 } });
    expect(runGuards(strict, [edit("x.md", { source: "chat" })])[0]?.action).toBe("warn");
    expect(actionFor(0.8, { warn: 0.5, rollback: 0.8 })).toBe("rollback");
    expect(
      driftScore(
        { scope: 0, plan: 0, test: 0, evidence: 0 },
        { scope: 0, plan: 0, test: 0, evidence: 0 },
        ["scope"],
      ),
    ).toBe(0);
  });
});

describe("tests and tampering", () => {
  it("catches edits to protected tests, skip markers and exit(0) in tests, and masked test commands", () => {
    const g = goal({ whitelist: ["src/", "tests/"], protected: ["tests/test_calc.py"] });
    const rs = runGuards(g, [
      edit("tests/test_calc.py", { source: "patch", evidence: "@@ -1 +1 @@\n+x = 1" }),
      edit("tests/test_other.py", {
        source: "patch",
        evidence: "@@ -1,1 +1,2 @@\n+@pytest.mark.skip\n def test_a():",
      }),
      edit("src/calc.test.ts", {
        source: "patch",
        evidence: "@@ -1 +1 @@\n+it.skip('adds', () => {})",
      }),
      edit("tests/conftest.py", { source: "patch", evidence: "@@ -1 +1 @@\n+sys.exit(0)" }),
      edit("src/main.py", { source: "patch", evidence: "@@ -1 +1 @@\n+sys.exit(0)" }),
      test("pytest tests || true", 3, 0),
      test("pytest --deselect tests/test_calc.py::test_add", 3, 0),
    ]);
    expect(rs.map((r) => r.action)).toEqual([
      "rollback",
      "rollback",
      "rollback",
      "rollback",
      "ok",
      "rollback",
      "rollback",
    ]);
    expect(rs[1]?.reasons.join(" ")).toContain("skip marker");
    expect(rs[3]?.reasons.join(" ")).toContain("exit(0)");
  });

  it("a failure while reproducing is expected; a retry that passes with no edit between is flaky (ok); a failure after the fix warns", () => {
    const g = goal();
    const rs = runGuards(g, [
      test("pytest -q", 0, 1, "reproduce"),
      edit("README.md", { source: "patch" }),
      test("pytest -q", 3, 1),
      test("pytest -q", 4, 0),
      edit("README.md", { source: "patch" }),
      test("pytest -q", 3, 1),
      edit("README.md", { source: "patch" }),
      test("pytest -q", 4, 0),
    ]);
    expect(rs.map((r) => r.test_guard)).toEqual([0, 0, 0.25, 0, 0, 0.6, 0, 0]);
    expect(rs.map((r) => r.action)).toEqual(["ok", "ok", "ok", "ok", "ok", "warn", "ok", "ok"]);
  });

  it("summarizes checkpoints, required tests and success", () => {
    const g = goal({ required_tests: ["pytest tests/test_a.py"] });
    const events = [
      test("pytest tests/test_a.py", 0, 1, "reproduce"),
      edit("README.md", { source: "patch" }),
      test("pytest tests/test_a.py -q", 2, 0),
    ];
    const s = summarizeGuards(g, events, runGuards(g, events));
    expect(s).toMatchObject({
      successful: true,
      rollback: 0,
      checkpoints_reached: ["reproduce", "modify", "test"],
      missing_checkpoints: ["regress"],
    });
    expect(s.required_tests).toEqual([{ test: "pytest tests/test_a.py", ran: true, passed: true }]);
    const none = summarizeGuards(
      g,
      [events[1] as MemoryEvent],
      runGuards(g, [events[1] as MemoryEvent]),
    );
    expect(none.successful).toBe(false);
  });
});

describe("checkEdit (PreToolUse)", () => {
  const g = goal({
    whitelist: ["README.md", "docs/"],
    blacklist: ["requirements*.txt"],
    protected: ["tests/"],
  });

  it("rolls back a blacklisted path with its fix, accepts an in-scope one, relativizes absolute paths", () => {
    const bad = checkEdit(
      g,
      { paths: ["/ws/requirements.txt"], tool: "Edit" },
      { root: "/ws", gitWorkTree: true },
    );
    expect(bad).toMatchObject({
      action: "rollback",
      auto_fixable: true,
      fix_cmd: "git checkout -- requirements.txt",
    });
    expect(bad.reasons).toContain("tool: Edit");
    const good = checkEdit(
      g,
      { paths: ["/ws/docs/guide.md"], tool: "Write", content: "# 指南" },
      { root: "/ws" },
    );
    expect(good).toMatchObject({
      action: "ok",
      drift_score: 0,
      scores: { scope: 0, plan: 0, test: 0, evidence: 0 },
    });
  });

  it("the worst file decides; plans make an unmentioned file warn; tamper markers in new content roll back", () => {
    const multi = checkEdit(g, { paths: ["docs/a.md", "src/x.py"] });
    expect(multi.action).toBe("rollback");
    expect(multi.files.map((f) => f.action)).toEqual(["ok", "rollback"]);
    expect(
      checkEdit(g, { paths: ["docs/a.md"], plans: ["translate README.md first"] }).action,
    ).toBe("ok");
    const g2 = goal({ whitelist: ["tests/"] });
    expect(
      checkEdit(g2, {
        paths: ["tests/test_x.py"],
        content: "@pytest.mark.skip\ndef test_x(): pass",
      }).action,
    ).toBe("rollback");
    expect(
      checkEdit(g2, { paths: ["tests/test_x.py"], content: "def test_x(): assert add(1, 2) == 3" })
        .action,
    ).toBe("ok");
  });

  // Its cost per call (a hook's budget is 100 ms) is measured by `npm run bench:memory`.
  it("lets every in-scope edit through, call after call (no state kept between calls)", () => {
    const actions = new Set<string>();
    for (let i = 0; i < 200; i++)
      actions.add(
        checkEdit(g, { paths: [`docs/p${i}.md`, "README.md"], diff: "@@ -1 +1 @@\n+x" }).action,
      );
    expect([...actions]).toEqual(["ok"]);
  });
});

describe("required tests by name (node --test)", () => {
  const named = (
    cmd: string,
    status: "pass" | "fail",
    phase: MemoryEvent["phase"] = "test",
  ): MemoryEvent => ({
    ...test(cmd, 0, 0, phase),
    source: "term",
    result: {
      framework: "node",
      passed: status === "pass" ? 2 : 1,
      failed: status === "pass" ? 0 : 1,
      skipped: 0,
      exit_code: null,
      tests: [
        { name: "ascii titles", status: "pass" },
        { name: "accented titles keep their letters", status },
      ],
    },
  });

  it("a required test name counts as run and passed when the last run that listed it passed it", () => {
    const g = goal({ required_tests: ["accented titles keep their letters"] });
    const pass = [
      named("npm test", "fail", "reproduce"),
      edit("src/a.js"),
      named("npm test", "pass"),
    ];
    expect(summarizeGuards(g, pass, runGuards(g, pass)).required_tests).toEqual([
      { test: "accented titles keep their letters", ran: true, passed: true },
    ]);
    const stillFailing = [...pass, named("npm test", "fail")];
    const s = summarizeGuards(g, stillFailing, runGuards(g, stillFailing));
    expect(s.required_tests[0]).toMatchObject({ ran: true, passed: false });
    expect(s.successful).toBe(false);
    const other = goal({ required_tests: ["no such test"] });
    expect(summarizeGuards(other, pass, runGuards(other, pass)).required_tests[0]).toMatchObject({
      ran: false,
      passed: false,
    });
  });

  it("term runs beside a transcript: a fail then pass is not called flaky (an edit between them is unseen)", () => {
    const g = goal({});
    const tr = edit("src/a.js", { source: "transcript" });
    const rs = runGuards(g, [tr, named("npm test", "fail"), named("npm test", "pass", "regress")]);
    expect(rs[1]?.reasons).toEqual(["test: 1 failed in test"]);
    const termOnly = runGuards(g, [
      edit("src/a.js"),
      named("npm test", "fail"),
      named("npm test", "pass", "regress"),
    ]);
    expect(termOnly[1]?.reasons[0]).toContain("(flaky)");
  });
});
