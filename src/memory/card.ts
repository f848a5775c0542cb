import { createHash } from "node:crypto";
import type { Clock } from "../core/index.ts";
import { compileGoal } from "./goal.ts";
import { isTestPath, pathOfWhere } from "./guards.ts";
import type { Goal, GuardRecord, MemoryEvent, PatternCard } from "./schemas.ts";
import { tokenize } from "./tokenize.ts";
import { type RunVerdict, runVerdict, testStatus } from "./verdict.ts";
import { renderGuided, renderTerse } from "./views.ts";

export const CARD_VERSION = "1.0";

/** Facts the reflect step may add to a card (from `reflect_command`'s JSON output). */
export interface CardHints {
  triggers?: string[];
  steps?: string[];
  invariants?: string[];
  anti_patterns?: string[];
}

export interface DistillInput {
  run_id: string;
  goal: Goal;
  events: readonly MemoryEvent[];
  guards: readonly GuardRecord[];
  clock: Clock;
  hints?: CardHints;
  created_by?: string;
  /** The run's verdict (verdict.ts); computed from the events when absent (no external verdict then). */
  verdict?: RunVerdict;
}

const DEP_FILE =
  /(^|\/)(requirements[^/]*\.txt|package(-lock)?\.json|pnpm-lock\.yaml|yarn\.lock|go\.(mod|sum)|Cargo\.(toml|lock)|pom\.xml|build\.gradle(\.kts)?|pyproject\.toml|setup\.(py|cfg)|Pipfile(\.lock)?|poetry\.lock|Gemfile(\.lock)?)$/;
const DOC_FILE =
  /(^|\/)(docs?\/.*|[^/]*\.(md|markdown|rst|adoc)|README[^/]*|CHANGELOG[^/]*|LICENSE[^/]*)$/i;

const clip = (s: string, n: number) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);
const uniq = (xs: string[]) => [...new Set(xs.filter((x) => x.trim() !== ""))];

/** What kind of task the run was, from what it actually touched and ran. */
export function classifyRun(
  goal: Goal,
  events: readonly MemoryEvent[],
  guards: readonly GuardRecord[],
): string[] {
  const kept = keptEdits(events, guards);
  const labels: string[] = [];
  if (kept.length > 0 && kept.every((f) => DOC_FILE.test(f) && !DEP_FILE.test(f)))
    labels.push("documentation-only");
  if (kept.some((f) => DEP_FILE.test(f))) labels.push("dependency fix");
  if (/translat|翻译|译/.test(goal.objective.toLowerCase())) labels.push("translation");
  if (guards.some((g) => g.reasons.some((r) => r.includes("(flaky)"))))
    labels.push("flaky test retry");
  if (guards.some((g) => g.reasons.some((r) => r.includes("tampering"))))
    labels.push("test tampering risk");
  if (kept.some((f) => isTestPath(f))) labels.push("tests updated");
  return labels;
}

/** Files the run edited and kept (not rolled back), in order, unique. */
function keptEdits(events: readonly MemoryEvent[], guards: readonly GuardRecord[]): string[] {
  const rolled = new Set(
    guards.filter((g) => g.tool === "edit" && g.action === "rollback").map((g) => g.step),
  );
  return uniq(
    events
      .filter((e) => e.tool === "edit" && !rolled.has(e.step))
      .map((e) => pathOfWhere(e.where) ?? ""),
  );
}

/** `pc_<first four latin words of the objective>`, or `pc_<hash>` for an objective with none. */
export function cardIdFor(goal: Goal, labels: string[]): string {
  const words = tokenize(goal.objective)
    .filter((t) => /^[a-z0-9]+$/.test(t))
    .slice(0, 4);
  if (words.length >= 2) return `pc_${words.join("_")}`;
  const label = labels[0]?.replace(/[^a-z0-9]+/g, "_");
  const hash = createHash("sha1").update(goal.objective).digest("hex").slice(0, 8);
  return `pc_${[...words, label, hash].filter((x) => x !== undefined && x !== "").join("_")}`;
}

/**
 * Distill a pattern card from what a run actually did (pure, deterministic): its goal, the
 * edits it kept, the edits the guards rolled back or warned about, the tests it ran and their
 * results. Same input, same card.
 */
export function distillCard(input: DistillInput): PatternCard {
  const { goal, events, guards, run_id } = input;
  const byStep = new Map(guards.map((g) => [g.step, g]));
  const labels = classifyRun(goal, events, guards);
  const kept = keptEdits(events, guards);
  const steps: string[] = [];
  const invariants: string[] = [];
  const anti: string[] = [];
  const examples: string[] = [];
  const testLabel = (e: MemoryEvent) =>
    e.result ? ` (${e.result.passed} passed, ${e.result.failed} failed)` : "";
  const compiled = compileGoal(goal);
  const verdict = input.verdict ?? runVerdict({ goal, events, guards });
  const fixSteps = new Set(
    verdict.drift.flatMap((d) => (d.fixed_by?.step !== undefined ? [d.fixed_by.step] : [])),
  );
  const reproduce = events.find((e) => e.tool === "shell" && e.phase === "reproduce");
  if (reproduce?.cmd)
    steps.push(`reproduce: run \`${reproduce.cmd}\` first and see it fail${testLabel(reproduce)}`);
  // Files the run touched that the goal forbids: the evidence names them, so the card may.
  const forbidden = uniq(
    events
      .filter((e) => e.tool === "edit")
      .map((e) => pathOfWhere(e.where) ?? "")
      .filter((f) => f !== "" && compiled.classify(f).blacklisted !== null),
  );
  const seenEdit = new Set<string>();
  for (const e of events) {
    const g = byStep.get(e.step);
    if (e.tool === "edit") {
      const file = pathOfWhere(e.where);
      if (file === undefined || fixSteps.has(e.step)) continue;
      if (g?.action === "rollback") {
        const why = (
          g.reasons.find((r) => r.startsWith("scope:") && !r.endsWith("in scope")) ??
          g.reasons[0] ??
          "drift"
        )
          .replace(/^scope: /, "")
          .replace(`${file} is `, "");
        anti.push(`edit ${file} without consent (${why})`);
        continue;
      }
      if (g?.action === "warn")
        anti.push(
          `unplanned edit of ${file} (${g.reasons.find((r) => r.startsWith("plan:"))?.replace(/^plan: /, "") ?? "warned"})`,
        );
      if (!seenEdit.has(file)) {
        seenEdit.add(file);
        steps.push(
          `edit ${file}${e.why && !/^(Edit|Write|MultiEdit|NotebookEdit) \(/.test(e.why) ? ` — ${clip(e.why, 90)}` : ""}`,
        );
      }
    } else if (e.tool === "shell" && e.cmd !== undefined && e.phase !== "reproduce") {
      const flaky = g?.reasons.some((r) => r.includes("(flaky)")) === true;
      if (g !== undefined && g.test_guard >= 1) {
        anti.push(`mask test failures: \`${e.cmd}\``);
        continue;
      }
      if (flaky)
        steps.push(
          `if \`${e.cmd}\` fails with no edit in between, retry it once before touching code (flaky)`,
        );
      else if (testStatus(e) === "pass") {
        steps.push(`${e.phase === "regress" ? "regress" : "verify"}: \`${e.cmd}\`${testLabel(e)}`);
        examples.push(e.cmd);
      }
    }
  }
  // the fix of each caught drift is a step: what the run did to put things right
  for (const d of verdict.drift) {
    const fix = d.fixed_by;
    if (fix === null) continue;
    if (fix.how === "unmasked")
      steps.push(`run the tests unmasked: \`${fix.cmd ?? d.cmd ?? "the suite"}\``);
    else if (fix.cmd !== undefined)
      steps.push(
        `when ${d.file ?? "a file"} is edited against the goal, put it back: \`${fix.cmd}\``,
      );
    else if (fix.how === "final_patch")
      steps.push(`leave ${d.file ?? "the flagged file"} out of the final change (it was put back)`);
    else steps.push(`when ${d.file ?? "a file"} is edited against the goal, revert it`);
  }
  for (const f of forbidden) steps.push(`leave ${f} alone`);
  const inScope = kept.filter((f) => !forbidden.includes(f));
  if (goal.whitelist.length > 0 && inScope.length > 0)
    invariants.push(`only whitelisted files change: ${inScope.slice(0, 5).join(", ")}`);
  else if (inScope.length > 0)
    invariants.push(`the change stays within ${inScope.slice(0, 5).join(", ")}`);
  for (const f of forbidden) invariants.push(`never edit ${f} without consent`);
  if (goal.protected.length > 0 || labels.includes("test tampering risk")) {
    const touched = uniq(
      events
        .filter((e) => e.tool === "edit")
        .map((e) => pathOfWhere(e.where) ?? "")
        .filter((f) => f !== "" && compiled.classify(f).protectedBy !== null),
    );
    invariants.push(
      `tests stay untouched${touched.length > 0 ? ` (${touched.join(", ")})` : ""}: no skip markers, no exit(0)`,
    );
  }
  // a required test is an invariant only when the evidence shows it ran and passed
  for (const t of goal.required_tests) {
    if (!verdict.required.some((r) => r.test === t && r.status === "pass")) continue;
    invariants.push(`\`${t}\` passes`);
    examples.push(t);
  }
  if (labels.includes("translation"))
    invariants.push(
      "the translated text keeps the original structure (headings, code blocks, links)",
    );
  for (const f of forbidden) anti.push(`edit ${f} without consent`);
  const hints = input.hints ?? {};
  const triggers = uniq([
    ...labels,
    clip(goal.objective.toLowerCase(), 80),
    ...kept.slice(0, 6).map((f) => f.split("/").pop() ?? f),
    ...(hints.triggers ?? []),
  ]);
  const body = {
    version: CARD_VERSION,
    pattern_id: cardIdFor(goal, labels),
    title: clip(goal.objective, 100),
    triggers,
    steps: uniq([...steps, ...(hints.steps ?? [])]),
    invariants: uniq([...invariants, ...(hints.invariants ?? [])]),
    anti_patterns: uniq([...anti, ...(hints.anti_patterns ?? [])]),
    eval_examples: uniq(examples),
    provenance: {
      source_runs: [run_id],
      created_by: input.created_by ?? "timewarp memory card (deterministic)",
      created_at: input.clock.now().toISOString(),
      ...(input.hints !== undefined ? { reflected: true } : {}),
    },
  };
  return { ...body, views: { terse: renderTerse(body), guided: renderGuided(body) }, uses: 0 };
}

/** Token-set Jaccard similarity of two cards' title, triggers and invariants (near-duplicate test). */
export function cardSimilarity(a: PatternCard, b: PatternCard): number {
  const set = (c: PatternCard) =>
    new Set(tokenize([c.title, ...c.triggers, ...c.invariants].join(" ")));
  const sa = set(a);
  const sb = set(b);
  let inter = 0;
  for (const t of sa) if (sb.has(t)) inter++;
  const union = sa.size + sb.size - inter;
  return union === 0 ? 0 : inter / union;
}

/** Cards at least this similar are merged rather than stored side by side. */
export const NEAR_DUPLICATE = 0.6;

/** Merge `incoming` into `existing`: lists unioned (existing order first), runs unioned, uses kept. Pure. */
export function mergeCards(existing: PatternCard, incoming: PatternCard, now: Date): PatternCard {
  const body = {
    version: existing.version,
    pattern_id: existing.pattern_id,
    title: existing.title,
    triggers: uniq([...existing.triggers, ...incoming.triggers]),
    steps: uniq([...existing.steps, ...incoming.steps]),
    invariants: uniq([...existing.invariants, ...incoming.invariants]),
    anti_patterns: uniq([...existing.anti_patterns, ...incoming.anti_patterns]),
    eval_examples: uniq([...existing.eval_examples, ...incoming.eval_examples]),
    provenance: {
      ...existing.provenance,
      source_runs: uniq([...existing.provenance.source_runs, ...incoming.provenance.source_runs]),
      updated_at: now.toISOString(),
    },
  };
  return {
    ...body,
    views: { terse: renderTerse(body), guided: renderGuided(body) },
    uses: existing.uses,
    ...(existing.last_used_at !== undefined ? { last_used_at: existing.last_used_at } : {}),
  };
}
