import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createFixedClock } from "../../src/core/index.ts";
import { distillCard, parseGoal, runGuards } from "../../src/memory/index.ts";

/**
 * The memory a retrieval test needs, in `root/.timewarp/memory/`: a goal (translate README.md,
 * requirements*.txt blacklisted, tests/ protected), one pattern card distilled from a run that
 * modified README.md, and the profile of nina, a novice.
 */
export function writeTranslationMemory(root: string): void {
  const mem = join(root, ".timewarp", "memory");
  mkdirSync(join(mem, "patterns"), { recursive: true });
  mkdirSync(join(mem, "profiles"), { recursive: true });
  const goalInput = {
    objective: "Translate README.md to Chinese",
    whitelist: ["README.md", "docs/"],
    blacklist: ["requirements*.txt"],
    protected: ["tests/"],
  };
  writeFileSync(join(mem, "goal.json"), JSON.stringify(goalInput));
  const parsed = parseGoal(goalInput);
  if (!parsed.ok) throw new Error(parsed.issues.join("; "));
  const events = [
    {
      run_id: "r1",
      step: 0,
      phase: "modify" as const,
      tool: "edit" as const,
      where: "README.md",
      source: "patch" as const,
    },
  ];
  const card = distillCard({
    run_id: "r1",
    goal: parsed.value.goal,
    events,
    guards: runGuards(parsed.value.goal, events),
    clock: createFixedClock(new Date(0)),
  });
  writeFileSync(join(mem, "patterns", `${card.pattern_id}.json`), JSON.stringify(card));
  writeFileSync(
    join(mem, "profiles", "nina.json"),
    JSON.stringify({ user_id: "nina", self_report: "novice" }),
  );
}
