import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDirs } from "../../test/helpers/temp-dirs.ts";
import { compileGoal, normalizePath, parseGoal, readGoal } from "./goal.ts";

const tempDir = tempDirs("tw-goal-");

describe("goal.json", () => {
  it("fills the seed's defaults: weights 0.4/0.3/0.2/0.1, thresholds 0.5/0.8, the four checkpoints", () => {
    const r = parseGoal({ objective: "x" });
    expect(r.ok && r.value.goal).toMatchObject({
      weights: { scope: 0.4, plan: 0.3, test: 0.2, evidence: 0.1 },
      thresholds: { warn: 0.5, rollback: 0.8 },
      checkpoints: ["reproduce", "modify", "test", "regress"],
      whitelist: [],
    });
  });

  it("names the field in every issue", () => {
    const cases: [unknown, string][] = [
      [{}, "objective"],
      [{ objective: "x", weights: { scope: -1 } }, "weights.scope"],
      [{ objective: "x", thresholds: { warn: 0.9, rollback: 0.5 } }, "thresholds.warn"],
      [{ objective: "x", checkpoints: ["test", "reproduce"] }, "checkpoints"],
      [{ objective: "x", whitelist: "docs/" }, "whitelist"],
      [{ objective: "x", colour: "blue" }, "(root)"],
    ];
    for (const [value, field] of cases) {
      const r = parseGoal(value);
      expect(r.ok).toBe(false);
      if (!r.ok) expect(r.issues.join("; ")).toContain(field);
    }
  });

  it("warns about a path in both lists and says the blacklist wins", () => {
    const r = parseGoal({
      objective: "x",
      whitelist: ["docs/", "setup.py"],
      blacklist: ["setup.py"],
    });
    expect(r.ok && r.value.warnings).toEqual([
      'goal: "setup.py" is in both whitelist and blacklist; the blacklist wins',
    ]);
    if (r.ok)
      expect(compileGoal(r.value.goal).classify("setup.py")).toMatchObject({
        whitelisted: "setup.py",
        blacklisted: "setup.py",
      });
  });

  it("readGoal: GOAL_INVALID for a missing file, broken JSON and a bad field", () => {
    const dir = tempDir();
    expect(() => readGoal(join(dir, "goal.json"))).toThrow(
      expect.objectContaining({ code: "GOAL_INVALID" }),
    );
    writeFileSync(join(dir, "goal.json"), '{"objective": "x",');
    expect(() => readGoal(join(dir, "goal.json"))).toThrow(/not valid JSON/);
    writeFileSync(join(dir, "goal.json"), '{"objective": "x", "weights": {"plan": "high"}}');
    expect(() => readGoal(join(dir, "goal.json"))).toThrow(/weights\.plan/);
  });

  it("reads the original lab's goal names: allowed_paths/forbidden_paths as aliases, both names of one field GOAL_INVALID naming both", () => {
    const dir = tempDir();
    const file = join(dir, "goal.json");
    writeFileSync(
      file,
      JSON.stringify({
        objective: "translate the README",
        allowed_paths: ["README.md", "docs/**"],
        forbidden_paths: ["requirements.txt"],
        required_tests: [],
        run_id: "s_2026-01-05-09-12-40_cursor_q01",
        checkpoints: ["reproduce", "modify", "test", "regress"],
      }),
    );
    expect(readGoal(file).goal).toMatchObject({
      whitelist: ["README.md", "docs/**"],
      blacklist: ["requirements.txt"],
      run_id: "s_2026-01-05-09-12-40_cursor_q01",
    });
    writeFileSync(
      file,
      JSON.stringify({ objective: "x", forbidden_paths: ["a"], blacklist: ["b"] }),
    );
    expect(() => readGoal(file)).toThrow(
      expect.objectContaining({
        code: "GOAL_INVALID",
        message: expect.stringMatching(
          /forbidden_paths: forbidden_paths and blacklist are one field/,
        ),
      }),
    );
  });

  it("normalizes paths and refuses ones outside the workspace", () => {
    expect(normalizePath("./docs//a/../b.md")).toEqual({ path: "docs/b.md", outside: false });
    expect(normalizePath("../x")).toMatchObject({ outside: true });
    expect(normalizePath("/etc/passwd")).toMatchObject({ outside: true });
    expect(normalizePath("/ws/src/a.ts", "/ws")).toEqual({ path: "src/a.ts", outside: false });
  });
});
