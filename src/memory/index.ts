/**
 * memory: the agent memory lab (seed `agent-memory-lab.zh.md`). Extractors turn chats,
 * transcripts, patches, terminal logs, the ledger and the bus into `events.jsonl`; guards score
 * each event against `goal.json` (Scope/Plan/Test/Evidence → drift_score → ok/warn/rollback);
 * successful runs are distilled into pattern cards, retrieved by BM25 for new tasks and rendered
 * terse or guided per user profile. Pure logic (parse, score, distill, route, render) is separate
 * from the on-disk steps in run-steps.ts.
 */

/** Files dirty before the run are a baseline, not drift: read off `git status --porcelain`. */
export { baselineFromGitStatus } from "./baseline.ts";
/** Distill a pattern card from a run (pure, deterministic). */
export { distillCard } from "./card.ts";
export type { GuardVerdict } from "./edit-guard.ts";
/** Score a proposed edit against `.timewarp/memory/goal.json` (hooks and MCP edit tools). */
export { guardEdit } from "./edit-guard.ts";
export type { RunLabels } from "./eval.ts";
/**
 * `memory eval`: the seed's metric set (Q1 detection, false positives, recovery; Q2 reuse,
 * first-try success, turns, time; Q3 view match) with bootstrap intervals, drift
 * precision/recall/ROC-AUC, SWE-bench predictions.
 */
export { evaluateRuns, formatEvalReport, RunLabelsSchema } from "./eval.ts";
export type { Estimate, EvalMetrics } from "./eval-metrics.ts";
/** The sources `memory events --from` names (one event source each). */
export { EXTRACT_SOURCES } from "./extract-events.ts";
/** Stream `raw/trajectory.jsonl` (imported steps) into edit/test/plan events from facts. */
export { extractTrajectoryEvents } from "./extract-trajectory.ts";
/** Stream a Claude Code JSONL transcript into exact edit/test/plan events. */
export { extractTranscriptEvents } from "./extract-transcript.ts";
/** goal.json: validate (GOAL_INVALID naming the field), compile the glob lists once. */
export { compileGoal, parseGoal } from "./goal.ts";
/**
 * The guards, pure: `checkEdit(goal, proposedEdit)` for PreToolUse; `runGuards(goal, events)`
 * for a run (README.md documents the formula and thresholds).
 */
export { checkEdit, runGuards } from "./guards.ts";
export type { ImportedRunSummary, ImportOptions, ImportResult } from "./import-formats.ts";
/**
 * `memory import`: an agent's own record of a run (Claude Code, Codex, Gemini CLI, OpenCode,
 * Cursor, the original lab) → run directories with `raw/trajectory.jsonl` (README "Importing runs").
 */
export { importTrajectory, parseImportFormat } from "./import-formats.ts";
/** SWE-agent `.traj` and mini-swe-agent `.traj.json` → trajectory steps, with the SWE-bench task's goal and verdict. */
export { miniSweAgentImporter, SWE_TASK_BLACKLIST, sweAgentImporter } from "./import-swe-agent.ts";
export type { LabRunView, RunCard } from "./lab-run-view.ts";
/** The dashboard's reads of `.timewarp/memory/runs/`: the runs, one line each, one run whole. */
export { labRunOverview, listLabRuns, readLabRun } from "./lab-run-view.ts";
export { loadLibrary, saveCard } from "./library.ts";
/**
 * A library's BM25 index persisted beside its cards (`.index.json` + `.index-stamp.json`),
 * rebuilt only when the card files' names/sizes/mtimes change; search over several libraries.
 */
export { INDEX_FILE, openLibraryIndex, STAMP_FILE } from "./library-index.ts";
export { readProfile } from "./profile.ts";
/** BM25 (MiniSearch) over cards with a coverage threshold; the linear scan is the benchmark's baseline. */
export { createCardIndex, formatExplanation, linearScanSearch } from "./retrieve.ts";
export { memoryPaths } from "./run-dir.ts";
/** labels.json from facts: the final patch against the goal's blacklist, the outcome from a verdict file. */
export { labelsFromFacts, outcomeOf } from "./run-labels.ts";
export type { LabContext } from "./run-steps.ts";
/** The on-disk steps behind the CLI and MCP: each step alone, and the whole e2e chain. */
export {
  checkProposedEdit,
  distillRun,
  extractRun,
  guardRun,
  retrieveForTask,
  runE2E,
  viewCard,
} from "./run-steps.ts";
export type { GuardRecord, MemoryEvent, PatternCard } from "./schemas.ts";
/**
 * The goal line and the cards offered to an agent when a session starts or a prompt arrives
 * (≤ OFFER_BUDGET_BYTES, each card once per session; indexes kept open between calls).
 */
export { OFFER_BUDGET_BYTES, offerMemory } from "./session-offer.ts";
/** What a shell command line writes, reads and which test runner it runs (tree-sitter-bash). */
export type { ShellReading } from "./shell-command.ts";
export { readShell } from "./shell-command.ts";
/** Pass/fail/skip counts from a test runner's output; the exit code when there is no summary. */
export { parseTestOutput, testResultOf } from "./test-output.ts";
/** A run's verdict from evidence: success, failure or unknown, high-value when caught drift was fixed. */
export type { CaughtDrift, ExternalVerdict, RunVerdict } from "./verdict.ts";
export { runVerdict } from "./verdict.ts";
export { patchFiles, readExternalVerdict } from "./verdict-file.ts";
export { renderView, routeView } from "./views.ts";
