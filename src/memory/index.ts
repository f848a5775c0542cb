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
/** `memory eval`: drift precision/recall/ROC-AUC, card reuse rate, SWE-bench predictions. */
export { evaluateRuns } from "./eval.ts";
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
export { loadLibrary, saveCard } from "./library.ts";
/**
 * A library's BM25 index persisted beside its cards (`.index.json` + `.index-stamp.json`),
 * rebuilt only when the card files' names/sizes/mtimes change; search over several libraries.
 */
export { INDEX_FILE, openLibraryIndex, STAMP_FILE } from "./library-index.ts";
export { readProfile } from "./profile.ts";
/** BM25 (MiniSearch) over cards with a coverage threshold; the linear scan is the benchmark's baseline. */
export { createCardIndex, linearScanSearch } from "./retrieve.ts";
export { memoryPaths } from "./run-dir.ts";
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
/** What a shell command line writes, reads and which test runner it runs (tree-sitter-bash). */
export type { ShellReading } from "./shell-command.ts";
export { readShell } from "./shell-command.ts";
/** Pass/fail/skip counts from a test runner's output; the exit code when there is no summary. */
export { parseTestOutput, testResultOf } from "./test-output.ts";
export { renderView, routeView } from "./views.ts";
