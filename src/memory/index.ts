/**
 * memory: the agent memory lab (seed `agent-memory-lab.zh.md`). Extractors turn chats,
 * transcripts, patches, terminal logs, the ledger and the bus into `events.jsonl`; guards score
 * each event against `goal.json` (Scope/Plan/Test/Evidence → drift_score → ok/warn/rollback);
 * successful runs are distilled into pattern cards, retrieved by BM25 for new tasks and rendered
 * terse or guided per user profile. Pure logic (parse, score, distill, route, render) is separate
 * from the on-disk steps in run-steps.ts.
 */

export type { BaselineSource } from "./baseline.ts";
/**
 * Files dirty before the run are a baseline, not drift: `baselineFromGitStatus(porcelain)` (pure)
 * and `withRunBaseline(runDir, goal)` (raw/baseline.txt, else raw/git-status.txt).
 */
export { baselineFromGitStatus, withRunBaseline } from "./baseline.ts";
export type { CardHints, DistillInput } from "./card.ts";
/** Distill a pattern card from a run (pure, deterministic); near-duplicate test and merge. */
export { cardSimilarity, classifyRun, distillCard, mergeCards, NEAR_DUPLICATE } from "./card.ts";
export type { GuardedEdit, GuardVerdict } from "./edit-guard.ts";
/** Score a proposed edit against `.timewarp/memory/goal.json` (hooks and MCP edit tools). */
export { guardEdit } from "./edit-guard.ts";
export type { EvalReport, RunLabels } from "./eval.ts";
/** `memory eval`: drift precision/recall/ROC-AUC, card reuse rate, SWE-bench predictions. */
export { evaluateRuns, RunLabelsSchema, rocAuc } from "./eval.ts";
export type { ChatExtraction, ChatTurn, ParsedChat } from "./extract-chat.ts";
export { extractChatEvents, findPaths, parseChat } from "./extract-chat.ts";
export type { ExtractOptions, ExtractResult, ExtractSource } from "./extract-events.ts";
/** Extract `<run>/events.jsonl` by the seed's fallback chain (or one `from` source). */
export { CHAT_CONFIDENCE_FLOOR, EXTRACT_SOURCES, extractRunEvents } from "./extract-events.ts";
export { extractTermEvents } from "./extract-term.ts";
export type { TranscriptExtraction } from "./extract-transcript.ts";
/** Stream a Claude Code JSONL transcript into exact edit/test/plan events. */
export { extractTranscriptEvents } from "./extract-transcript.ts";
export type { CompiledGoal, GoalResult, ParsedGoal, PathClass } from "./goal.ts";
/** goal.json: validate (GOAL_INVALID naming the field), compile the glob lists once. */
export { compileGoal, normalizePath, parseGoal, readGoal } from "./goal.ts";
export type {
  CheckEditOptions,
  EditCheck,
  GuardOptions,
  GuardScores,
  GuardSummary,
  ProposedEdit,
} from "./guards.ts";
/**
 * The guards, pure: `checkEdit(goal, proposedEdit)` for PreToolUse; `runGuards(goal, events)`
 * for a run; `driftScore`/`actionFor` the formula and thresholds (README.md documents them).
 */
export {
  actionFor,
  checkEdit,
  driftScore,
  findTamperMarkers,
  isTestPath,
  runGuards,
  summarizeGuards,
} from "./guards.ts";
export type { Library, SaveResult, StoredCard } from "./library.ts";
export { findCard, loadLibrary, recordUse, saveCard } from "./library.ts";
export type { LibraryIndex } from "./library-index.ts";
/**
 * A library's BM25 index persisted beside its cards (`.index.json` + `.index-stamp.json`),
 * rebuilt only when the card files' names/sizes/mtimes change; search over several libraries.
 */
export {
  INDEX_FILE,
  openLibraryIndex,
  STAMP_FILE,
  searchLibraries,
} from "./library-index.ts";
export type { DraftEvent } from "./phases.ts";
export { assignPhases } from "./phases.ts";
export { profilePath, readProfile } from "./profile.ts";
export { formatReflection, runReflectCommand } from "./reflection.ts";
export type { CardIndex, RetrievedCard, SearchOptions, SerializedCardIndex } from "./retrieve.ts";
/**
 * BM25 (MiniSearch) over cards with a coverage threshold, serializable (`toJSON` /
 * `loadCardIndex`); the linear scan is the benchmark's baseline.
 */
export { createCardIndex, linearScanSearch, loadCardIndex } from "./retrieve.ts";
export type { RunPaths } from "./run-dir.ts";
export { memoryPaths, readJsonl, resolveRunDir, runPaths } from "./run-dir.ts";
export type {
  CardResult,
  E2EResult,
  GuardsResult,
  LabContext,
  RetrieveResult,
  ViewResult,
} from "./run-steps.ts";
/** The on-disk steps behind the CLI and MCP: each step alone, and the whole e2e chain. */
export {
  checkProposedEdit,
  distillRun,
  extractRun,
  guardRun,
  libraryDirs,
  retrieveForTask,
  runE2E,
  viewCard,
} from "./run-steps.ts";
export type {
  Checkpoint,
  Goal,
  GoalInput,
  GuardAction,
  GuardRecord,
  MemoryEvent,
  PatternCard,
  Profile,
  TestResult,
} from "./schemas.ts";
export {
  CHECKPOINTS,
  GoalSchema,
  GuardRecordSchema,
  MemoryEventSchema,
  PatternCardSchema,
  ProfileSchema,
} from "./schemas.ts";
export { parseTestOutput, testFramework } from "./test-output.ts";
export { tokenize } from "./tokenize.ts";
export type { ViewName, ViewRoute } from "./views.ts";
export { formatViewPreview, renderGuided, renderTerse, renderView, routeView } from "./views.ts";
