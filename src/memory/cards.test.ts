import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDirs } from "../../test/helpers/temp-dirs.ts";
import { createFixedClock } from "../core/index.ts";
import { distillCard } from "./card.ts";
import { parseGoal } from "./goal.ts";
import { runGuards } from "./guards.ts";
import { loadLibrary, recordUse, saveCard } from "./library.ts";
import { createCardIndex } from "./retrieve.ts";
import type { GoalInput, MemoryEvent, PatternCard } from "./schemas.ts";
import { tokenize } from "./tokenize.ts";
import { formatViewPreview, renderView, routeView } from "./views.ts";

const tempDir = tempDirs("tw-lib-");

const clock = createFixedClock(new Date("2026-01-01T00:00:00Z"));

function cardFor(
  runId: string,
  goalInput: GoalInput,
  events: Omit<MemoryEvent, "run_id" | "step">[],
): PatternCard {
  const parsed = parseGoal(goalInput);
  if (!parsed.ok) throw new Error(parsed.issues.join("; "));
  const evs = events.map((e, step) => ({ run_id: runId, step, ...e }));
  return distillCard({
    run_id: runId,
    goal: parsed.value.goal,
    events: evs,
    guards: runGuards(parsed.value.goal, evs),
    clock,
  });
}

const docRun = () =>
  cardFor(
    "r1",
    {
      objective: "Translate README.md to Chinese",
      whitelist: ["README.md", "docs/"],
      blacklist: ["requirements*.txt"],
    },
    [
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
        source: "patch",
      },
      {
        phase: "test",
        tool: "shell",
        cmd: "pytest tests/test_docs.py",
        result: { framework: "pytest", passed: 3, failed: 0, skipped: 0, exit_code: null },
      },
    ],
  );
const depRun = () =>
  cardFor(
    "r2",
    { objective: "Fix ImportError: pin urllib3 below 2", whitelist: ["requirements.txt"] },
    [
      {
        phase: "reproduce",
        tool: "shell",
        cmd: "pytest -q",
        result: { framework: "pytest", passed: 0, failed: 1, skipped: 0, exit_code: 1 },
      },
      { phase: "modify", tool: "edit", where: "requirements.txt", source: "transcript" },
      {
        phase: "test",
        tool: "shell",
        cmd: "pytest -q",
        result: { framework: "pytest", passed: 4, failed: 0, skipped: 0, exit_code: 0 },
      },
    ],
  );

describe("distillCard", () => {
  it("comes from what the run did: its edits, rollbacks, tests and goal — deterministically", () => {
    const a = docRun();
    expect(a).toEqual(docRun());
    expect(a.pattern_id).toBe("pc_translate_readme_chinese");
    expect(a.triggers).toEqual(
      expect.arrayContaining(["documentation-only", "translation", "README.md"]),
    );
    expect(a.steps).toContain("edit README.md — translated the intro");
    expect(a.steps).toContain("verify: `pytest tests/test_docs.py` (3 passed, 0 failed)");
    expect(a.anti_patterns).toContain(
      'edit requirements.txt without consent (blacklisted by "requirements*.txt")',
    );
    // the rolled-back file is named only as what to leave alone, never as a step to take
    expect(a.steps.filter((s) => s.includes("requirements.txt"))).toEqual([
      "leave requirements.txt alone",
    ]);
    expect(a.invariants).toContain("never edit requirements.txt without consent");
    const b = depRun();
    expect(b.triggers).toContain("dependency fix");
    expect(b.steps[0]).toBe(
      "reproduce: run `pytest -q` first and see it fail (0 passed, 1 failed)",
    );
    expect(b.steps).not.toEqual(a.steps);
    expect(b.views.terse).toContain("Invariants:");
    expect(b.views.guided).toContain("### Steps");
  });
});

describe("library", () => {
  it("merges a near-duplicate instead of piling up, counts uses, and skips a hand-mangled card with a warning", () => {
    const dir = tempDir();
    const first = saveCard(dir, docRun(), clock);
    expect(first.merged_into).toBeNull();
    const again = cardFor(
      "r9",
      { objective: "Translate README.md to Chinese", whitelist: ["README.md", "docs/"] },
      [{ phase: "modify", tool: "edit", where: "docs/guide.md", source: "patch" }],
    );
    const second = saveCard(dir, again, clock);
    expect(second.merged_into).toBe("pc_translate_readme_chinese");
    expect(second.card.provenance.source_runs).toEqual(["r1", "r9"]);
    saveCard(dir, depRun(), clock);
    writeFileSync(join(dir, "pc_broken.json"), '{\n  "version": "1.0",\n  "pattern_id": \n}');
    writeFileSync(join(dir, "pc_wrong.json"), '{"version": 1, "title": "x"}');
    const lib = loadLibrary([dir]);
    expect(lib.cards.map((c) => c.card.pattern_id).sort()).toEqual([
      "pc_fix_import_error_pin",
      "pc_translate_readme_chinese",
    ]);
    expect(lib.warnings).toHaveLength(2);
    expect(lib.warnings[0]).toMatch(/pc_broken\.json line 4: not valid JSON/);
    expect(lib.warnings[1]).toMatch(/pc_wrong\.json: not a pattern card \(version: /);
    const stored = lib.cards.find((c) => c.card.pattern_id === "pc_translate_readme_chinese");
    if (stored === undefined) throw new Error("missing");
    recordUse(stored, clock);
    expect(JSON.parse(readFileSync(stored.file, "utf8")).uses).toBe(1);
  });
});

describe("retrieval", () => {
  it("tokenizes paths, camelCase, snake_case and CJK (bigrams)", () => {
    expect(tokenize("src/parsePatch.ts HTTPServer snake_case_name")).toEqual([
      "src",
      "parse",
      "patch",
      "http",
      "server",
      "snake",
      "case",
      "name",
    ]);
    expect(tokenize("把README翻译成中文")).toEqual(["readme", "翻译", "译成", "成中", "中文"]);
  });

  it("finds the related card, in English or mixed with Chinese, and returns none rather than an unrelated one", () => {
    const index = createCardIndex([docRun(), depRun()]);
    expect(index.search("translate the README into Chinese")[0]?.card.pattern_id).toBe(
      "pc_translate_readme_chinese",
    );
    expect(index.search("把 README 翻译成中文 translate README")[0]?.card.pattern_id).toBe(
      "pc_translate_readme_chinese",
    );
    expect(index.search("urllib3 ImportError")[0]?.card.pattern_id).toBe("pc_fix_import_error_pin");
    expect(index.search("optimize the SQL query planner")).toEqual([]);
    expect(index.search("fix rounding in tests")).toEqual([]);
    expect(index.search("")).toEqual([]);
  });
});

describe("views", () => {
  it("routes exactly as the seed: pref wins; novice, high difficulty or low first-try success → guided; else terse", () => {
    expect(
      routeView({
        profile: { user_id: "a", pref: "terse", self_report: "novice" },
        difficulty: "high",
      }).view,
    ).toBe("terse");
    expect(routeView({ profile: { user_id: "a", self_report: "novice" } }).view).toBe("guided");
    expect(routeView({ profile: { user_id: "a" }, difficulty: "high" }).view).toBe("guided");
    expect(routeView({ profile: { user_id: "a", hist_first_try_success: 0.4 } }).view).toBe(
      "guided",
    );
    expect(
      routeView({ profile: { user_id: "a", hist_first_try_success: 0.5, self_report: "expert" } })
        .view,
    ).toBe("terse");
    expect(routeView({}).view).toBe("terse");
  });

  it("renders terse short and guided with steps, pitfalls and tests; the preview says when no card fits", () => {
    const card = docRun();
    const terse = renderView(card, "terse");
    const guided = renderView(card, "guided");
    expect(terse.split("\n").length).toBeLessThan(8);
    expect(guided).toContain("### Pitfalls");
    expect(guided).toContain("`pytest tests/test_docs.py`");
    expect(
      formatViewPreview({
        objective: "x",
        user: "u",
        route: { view: "terse", reason: "r" },
        cards: [],
      }),
    ).toContain("No pattern card fits");
  });
});
