import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createFixedClock, parseConfig } from "../core/index.ts";
import { distillCard } from "./card.ts";
import { parseGoal } from "./goal.ts";
import { runGuards, summarizeGuards } from "./guards.ts";
import { distillRun } from "./run-steps.ts";
import type { GoalInput, MemoryEvent } from "./schemas.ts";
import { runVerdict } from "./verdict.ts";
import { parseVerdictJson, readExternalVerdict } from "./verdict-file.ts";

const clock = createFixedClock(new Date("2026-01-01T00:00:00Z"));
type Draft = Omit<MemoryEvent, "run_id" | "step">;

function goalOf(input: GoalInput) {
  const parsed = parseGoal(input);
  if (!parsed.ok) throw new Error(parsed.issues.join("; "));
  return parsed.value.goal;
}

function judge(goalInput: GoalInput, drafts: Draft[], final_files?: string[]) {
  const goal = goalOf(goalInput);
  const events = drafts.map((e, step) => ({ run_id: "r", step, ...e }));
  const guards = runGuards(goal, events, { gitWorkTree: true });
  const verdict = runVerdict({
    goal,
    events,
    guards,
    ...(final_files !== undefined ? { final_files } : {}),
  });
  return { goal, events, guards, verdict };
}

const pytest = (passed: number, failed: number, exit_code: number | null = null) => ({
  framework: "pytest",
  passed,
  failed,
  skipped: 0,
  exit_code,
});

const DOC_GOAL: GoalInput = {
  objective: "Translate README.md to Chinese (documentation only)",
  whitelist: ["README.md", "docs/"],
  blacklist: ["requirements*.txt", "setup.py"],
};

/** The seed's high-value run: a docs task that also edits requirements.txt, the edit flagged and put back, tests passing. */
const caughtDrift = (revert: "command" | "edit" | "final patch"): Draft[] => [
  {
    phase: "modify",
    tool: "edit",
    where: "README.md",
    why: "translated the intro",
    source: "patch",
  },
  {
    phase: "modify",
    tool: "edit",
    where: "requirements.txt",
    why: "pinned markdown",
    source: "transcript",
  },
  ...(revert === "command"
    ? [
        {
          phase: "modify" as const,
          tool: "shell" as const,
          cmd: "git checkout -- requirements.txt",
        },
      ]
    : revert === "edit"
      ? [
          {
            phase: "modify" as const,
            tool: "edit" as const,
            where: "requirements.txt",
            why: "reverted requirements.txt: out of scope",
            source: "transcript" as const,
          },
        ]
      : []),
  { phase: "test", tool: "shell", cmd: "pytest tests/test_docs.py", result: pytest(3, 0, 0) },
];

describe("runVerdict", () => {
  it("a scratch script the run wrote is a reproduction, not a test: its passing after the fix proves nothing", () => {
    const script = { framework: "script", passed: 0, failed: 0, skipped: 0, exit_code: 0 };
    const drafts: Draft[] = [
      {
        phase: "reproduce",
        tool: "shell",
        cmd: "python reproduce.py",
        result: { ...script, exit_code: 1 },
        source: "trajectory",
      },
      { phase: "modify", tool: "edit", where: "README.md", source: "trajectory" },
      {
        phase: "reproduce",
        tool: "shell",
        cmd: "python reproduce.py",
        result: script,
        source: "trajectory",
      },
    ];
    const alone = judge(DOC_GOAL, drafts).verdict;
    expect(alone.outcome).toBe("unknown");
    expect(alone.reasons.join(" ")).toMatch(/no test ran after the last edit/);
    // the project's tests after the fix do decide
    const tested = judge(DOC_GOAL, [
      ...drafts,
      {
        phase: "test",
        tool: "shell",
        cmd: "pytest -q",
        result: pytest(3, 0, 0),
        source: "trajectory",
      },
    ]).verdict;
    expect(tested.outcome).toBe("success");
  });

  it("an unknown test result stays unknown: never a success, whatever else the run did", () => {
    for (const result of [undefined, pytest(0, 0, null)]) {
      const { verdict, goal, events, guards } = judge(DOC_GOAL, [
        { phase: "modify", tool: "edit", where: "README.md", source: "patch" },
        {
          phase: "test",
          tool: "shell",
          cmd: "pytest tests/test_docs.py",
          ...(result !== undefined ? { result } : {}),
        },
      ]);
      expect(verdict.outcome).toBe("unknown");
      expect(verdict.high_value).toBe(false);
      expect(verdict.reasons.join(" ")).toContain("has no known result");
      expect(summarizeGuards(goal, events, guards).successful).toBe(false);
    }
    const required = judge({ ...DOC_GOAL, required_tests: ["pytest tests/test_docs.py"] }, [
      { phase: "modify", tool: "edit", where: "README.md", source: "patch" },
      { phase: "test", tool: "shell", cmd: "pytest tests/test_docs.py" },
    ]);
    expect(required.verdict).toMatchObject({
      outcome: "unknown",
      required: [{ test: "pytest tests/test_docs.py", status: "unknown", step: 1 }],
    });
    const never = judge({ ...DOC_GOAL, required_tests: ["doc_lang_check"] }, [
      { phase: "modify", tool: "edit", where: "README.md", source: "patch" },
    ]);
    expect(never.verdict.outcome).toBe("unknown");
    expect(never.verdict.reasons).toContain("required test `doc_lang_check`: never ran");
  });

  it("success needs the last test after the last edit to pass; a test before a later edit proves nothing", () => {
    const pass = judge(DOC_GOAL, [
      { phase: "modify", tool: "edit", where: "README.md", source: "patch" },
      { phase: "test", tool: "shell", cmd: "pytest -q", result: pytest(0, 0, 0) },
    ]);
    expect(pass.verdict.outcome).toBe("success");
    const stale = judge(DOC_GOAL, [
      { phase: "test", tool: "shell", cmd: "pytest -q", result: pytest(4, 0, 0) },
      { phase: "modify", tool: "edit", where: "README.md", source: "patch" },
    ]);
    expect(stale.verdict.outcome).toBe("unknown");
    expect(stale.verdict.reasons[0]).toContain("no test ran after the last edit");
    const fail = judge(DOC_GOAL, [
      { phase: "modify", tool: "edit", where: "README.md", source: "patch" },
      { phase: "test", tool: "shell", cmd: "pytest -q", result: pytest(3, 1, 1) },
    ]);
    expect(fail.verdict.outcome).toBe("failure");
    const masked = judge(DOC_GOAL, [
      { phase: "modify", tool: "edit", where: "README.md", source: "patch" },
      { phase: "test", tool: "shell", cmd: "pytest -q || true", result: pytest(3, 0, 0) },
    ]);
    expect(masked.verdict.outcome).not.toBe("success");
  });

  it("caught drift that was put back, then tests passing, is a high-value success; left in place it is a failure", () => {
    for (const how of ["command", "edit", "final patch"] as const) {
      const { verdict } = judge(
        DOC_GOAL,
        caughtDrift(how),
        how === "final patch" ? ["README.md"] : undefined,
      );
      expect(verdict.outcome, how).toBe("success");
      expect(verdict.high_value, how).toBe(true);
      expect(verdict.drift).toEqual([
        expect.objectContaining({
          step: 1,
          file: "requirements.txt",
          action: "rollback",
          fixed_by: expect.objectContaining({
            how: how === "final patch" ? "final_patch" : "revert",
          }),
        }),
      ]);
    }
    // a whole-tree revert puts the file back too; an edit event made by a revert command says so
    const drafts = caughtDrift("final patch");
    for (const [i, d] of [
      [2, { phase: "modify", tool: "shell", cmd: "git stash" }],
      [2, { phase: "modify", tool: "shell", cmd: "git restore --staged --worktree ." }],
      [
        2,
        {
          phase: "modify",
          tool: "edit",
          where: "requirements.txt",
          why: "git checkout -- requirements.txt",
          source: "transcript",
        },
      ],
    ] as const) {
      const withRevert: Draft[] = [...drafts.slice(0, i), d, ...drafts.slice(i)];
      expect(judge(DOC_GOAL, withRevert).verdict.high_value, JSON.stringify(d)).toBe(true);
    }
    const notRevert: Draft[] = [
      ...drafts.slice(0, 2),
      { phase: "modify", tool: "shell", cmd: "git diff requirements.txt" },
      ...drafts.slice(2),
    ];
    expect(judge(DOC_GOAL, notRevert).verdict.outcome).toBe("failure");
    const kept = judge(DOC_GOAL, caughtDrift("final patch"), ["README.md", "requirements.txt"]);
    expect(kept.verdict.outcome).toBe("failure");
    expect(kept.verdict.reasons.at(-1)).toContain("drift left in place: requirements.txt");
  });

  it("an external verdict decides when present", () => {
    const { goal, events, guards } = judge(DOC_GOAL, [
      { phase: "modify", tool: "edit", where: "README.md", source: "patch" },
    ]);
    const resolved = runVerdict({
      goal,
      events,
      guards,
      external: { resolved: true, source: "raw/report.json" },
    });
    expect(resolved.outcome).toBe("success");
    expect(
      runVerdict({ goal, events, guards, external: { resolved: false, source: "x" } }).outcome,
    ).toBe("failure");
    expect(
      runVerdict({ goal, events, guards, external: { resolved: null, source: "x" } }).outcome,
    ).toBe("unknown");
  });
});

describe("external verdict files", () => {
  it("reads SWE-bench's report.json, its run summary, a flat record and an annotated predictions file", () => {
    expect(
      parseVerdictJson(
        { "astropy__astropy-12907": { patch_exists: true, resolved: false } },
        "astropy__astropy-12907",
        "raw/report.json",
      ),
    ).toMatchObject({ resolved: false });
    expect(
      parseVerdictJson({ "other-1": { resolved: true }, "other-2": { resolved: true } }, "x", "f"),
    ).toBeNull();
    expect(parseVerdictJson({ resolved: true }, "x", "f")).toMatchObject({ resolved: true });
    expect(parseVerdictJson({ resolved: true, instance_id: "y" }, "x", "f")).toBeNull();
    const summary = { resolved_ids: ["a"], unresolved_ids: ["b"], error_ids: ["c"] };
    expect(parseVerdictJson(summary, "a", "f")?.resolved).toBe(true);
    expect(parseVerdictJson(summary, "b", "f")?.resolved).toBe(false);
    expect(parseVerdictJson(summary, "c", "f")?.resolved).toBeNull();
    expect(parseVerdictJson(summary, "d", "f")).toBeNull();
    expect(parseVerdictJson({ note: "no flag" }, "a", "f")).toBeNull();

    const dir = mkdtempSync(join(tmpdir(), "tw-verdict-"));
    try {
      mkdirSync(join(dir, "raw"));
      expect(readExternalVerdict(dir, "a")).toEqual({ verdict: null, warnings: [] });
      writeFileSync(
        join(dir, "raw/predictions.jsonl"),
        '{"instance_id":"b","resolved":false}\n{torn\n{"instance_id":"a","resolved":true}\n',
      );
      expect(readExternalVerdict(dir, "a")).toEqual({
        verdict: { resolved: true, source: "raw/predictions.jsonl", detail: "instance a" },
        warnings: ["raw/predictions.jsonl line 2: not valid JSON, skipped"],
      });
      writeFileSync(join(dir, "raw/report.json"), '{"a": {"resolved": false}}');
      expect(readExternalVerdict(dir, "a").verdict).toMatchObject({
        resolved: false,
        source: "raw/report.json",
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("cards from verdicts", () => {
  it("the caught-drift run's card carries the drift as an anti-pattern and the revert as a step", () => {
    const { goal, events, guards, verdict } = judge(DOC_GOAL, caughtDrift("command"));
    const card = distillCard({ run_id: "r", goal, events, guards, clock, verdict });
    expect(card.anti_patterns).toContain(
      'edit requirements.txt without consent (blacklisted by "requirements*.txt")',
    );
    expect(card.steps).toContain(
      "when requirements.txt is edited against the goal, put it back: `git checkout -- requirements.txt`",
    );
    expect(card.steps).toContain("verify: `pytest tests/test_docs.py` (3 passed, 0 failed)");
  });

  it("invariants and steps name only files the run changed and tests that ran and passed", () => {
    const { goal, events, guards, verdict } = judge(
      {
        objective: "Fix the timeout in src/http.py",
        whitelist: ["src/http.py", "src/retry.py", "docs/"],
        blacklist: ["setup.py", "requirements.txt"],
        protected: ["tests/test_http.py"],
        required_tests: ["pytest tests/test_http.py", "pytest tests/test_retry.py"],
      },
      [
        { phase: "modify", tool: "edit", where: "src/http.py", source: "patch" },
        {
          phase: "test",
          tool: "shell",
          cmd: "pytest tests/test_http.py",
          result: pytest(5, 0, 0),
        },
      ],
    );
    expect(verdict.outcome).toBe("unknown"); // test_retry never ran
    const card = distillCard({ run_id: "r", goal, events, guards, clock, verdict });
    const named = [...card.invariants, ...card.steps].join("\n");
    for (const never of ["src/retry.py", "docs/", "setup.py", "requirements.txt", "test_retry"])
      expect(named, never).not.toContain(never);
    expect(card.invariants).toContain("only whitelisted files change: src/http.py");
    expect(card.invariants).toContain("`pytest tests/test_http.py` passes");
    expect(card.invariants).toContain("tests stay untouched: no skip markers, no exit(0)");
  });
});

describe("distillRun on disk", () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  function run(goal: GoalInput, drafts: Draft[], files: Record<string, string> = {}) {
    const root = mkdtempSync(join(tmpdir(), "tw-verdict-ws-"));
    dirs.push(root);
    const dir = join(root, "run1");
    mkdirSync(join(dir, "raw"), { recursive: true });
    writeFileSync(join(dir, "goal.json"), JSON.stringify(goal));
    writeFileSync(
      join(dir, "events.jsonl"),
      drafts.map((e, step) => JSON.stringify({ run_id: "run1", step, ...e })).join("\n"),
    );
    for (const [f, text] of Object.entries(files)) writeFileSync(join(dir, f), text);
    return { ctx: { root, clock, config: parseConfig({}, "test") }, dir };
  }

  it("unknown gives no card and says why; --force makes one and says it was forced", () => {
    const { ctx, dir } = run(DOC_GOAL, [
      { phase: "modify", tool: "edit", where: "README.md", source: "patch" },
      { phase: "test", tool: "shell", cmd: "pytest tests/test_docs.py" },
    ]);
    const no = distillRun(ctx, dir);
    expect(no).toMatchObject({ card: null, made_because: null, verdict: { outcome: "unknown" } });
    expect(no.skipped).toMatch(/^run outcome unknown \(.*has no known result\): no card; --force/);
    const reflection = readFileSync(no.reflection, "utf8");
    expect(reflection).toContain("outcome: unknown — ");
    expect(reflection).toMatch(
      /\nverdict:\n- the last test after the last edit .* has no known result\n/,
    );
    const forced = distillRun(ctx, dir, { force: true });
    expect(forced.card).not.toBeNull();
    expect(forced.made_because).toBe("forced");
  });

  it("a SWE-bench report.json decides: unresolved gives no card even with passing tests", () => {
    const drafts: Draft[] = [
      { phase: "modify", tool: "edit", where: "README.md", source: "patch" },
      { phase: "test", tool: "shell", cmd: "pytest -q", result: pytest(2, 0, 0) },
    ];
    const report = (resolved: boolean) =>
      JSON.stringify({ "demo__x-1": { patch_exists: true, resolved } });
    const bad = run({ ...DOC_GOAL, instance_id: "demo__x-1" }, drafts, {
      "raw/report.json": report(false),
    });
    const no = distillRun(bad.ctx, bad.dir);
    expect(no.card).toBeNull();
    expect(no.skipped).toContain("external verdict (raw/report.json): unresolved");
    const good = run({ ...DOC_GOAL, instance_id: "demo__x-1" }, drafts, {
      "raw/report.json": report(true),
    });
    expect(distillRun(good.ctx, good.dir)).toMatchObject({
      made_because: "success",
      verdict: { outcome: "success" },
    });
  });

  it("the caught-drift run is distilled as high-value", () => {
    const { ctx, dir } = run(DOC_GOAL, caughtDrift("edit"));
    const r = distillRun(ctx, dir);
    expect(r).toMatchObject({
      made_because: "high-value",
      verdict: { outcome: "success", high_value: true },
    });
    expect(r.card?.anti_patterns).toContain(
      'edit requirements.txt without consent (blacklisted by "requirements*.txt")',
    );
    expect(r.card?.steps).toContain("when requirements.txt is edited against the goal, revert it");
  });
});
