import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { join, resolve } from "node:path";
import {
  appendEvent,
  type Clock,
  type Config,
  ErrorCode,
  readConfig,
  TimewarpError,
  workspacePaths,
  writeFileAtomic,
  writeJsonAtomic,
} from "../core/index.ts";
import { withRunBaseline } from "./baseline.ts";
import { distillCard } from "./card.ts";
import { type ExtractResult, type ExtractSource, extractRunEvents } from "./extract-events.ts";
import { compileGoal, type ParsedGoal, readGoal } from "./goal.ts";
import {
  checkEdit,
  type EditCheck,
  type GuardSummary,
  runGuards,
  summarizeGuards,
} from "./guards.ts";
import { findCard, loadLibrary, recordUse, type SaveResult, saveCard } from "./library.ts";
import { explainLibraries, openLibraryIndex, searchLibraries } from "./library-index.ts";
import { readProfile } from "./profile.ts";
import { formatReflection, runReflectCommand } from "./reflection.ts";
import type { Explanation, RetrievedCard } from "./retrieve.ts";
import { labRunPaths, memoryPaths, readJsonl, resolveRunDir, writeJsonl } from "./run-dir.ts";
import {
  type GuardRecord,
  GuardRecordSchema,
  type MemoryEvent,
  MemoryEventSchema,
  type PatternCard,
} from "./schemas.ts";
import { cardEligible, type RunVerdict } from "./verdict.ts";
import { readRunVerdict } from "./verdict-file.ts";
import { formatViewPreview, renderView, routeView, type ViewRoute } from "./views.ts";

/** What every on-disk step needs: the workspace, the clock, the config (read from the workspace when absent). */
export interface LabContext {
  root: string;
  clock: Clock;
  config?: Config;
}

function configOf(ctx: LabContext): Config {
  return ctx.config ?? readConfig(workspacePaths(ctx.root).config);
}

/** The pattern libraries: the project's, then the user-level one from config (`~` expanded). */
export function libraryDirs(ctx: LabContext): string[] {
  const dirs = [memoryPaths(ctx.root).patterns];
  const user = configOf(ctx).memory.user_patterns_dir;
  if (user !== undefined)
    dirs.push(user.startsWith("~/") ? join(homedir(), user.slice(2)) : resolve(ctx.root, user));
  return dirs;
}

function isGitWorkTree(dir: string): boolean {
  try {
    return (
      execFileSync("git", ["-C", dir, "rev-parse", "--is-inside-work-tree"], {
        encoding: "utf8",
        stdio: ["ignore", "pipe", "ignore"],
      }).trim() === "true"
    );
  } catch {
    return false;
  }
}

/** `memory events`: extract and write `<run>/events.jsonl`. */
export async function extractRun(
  ctx: LabContext,
  run: string,
  options: { from?: ExtractSource } = {},
): Promise<ExtractResult> {
  const dir = resolveRunDir(ctx.root, run);
  return extractRunEvents(dir, {
    root: ctx.root,
    ...(options.from !== undefined ? { from: options.from } : {}),
  });
}

export interface GuardsResult {
  run_id: string;
  records: GuardRecord[];
  summary: GuardSummary;
  warnings: string[];
  path: string;
}

/** Read a run's events.jsonl (bad lines are warnings) and its goal, its baseline filled from the run (baseline.ts). */
function readRunInputs(dir: string): {
  goal: ParsedGoal;
  events: MemoryEvent[];
  warnings: string[];
} {
  const paths = labRunPaths(dir);
  const read = readGoal(paths.goal);
  const goal = { ...read, goal: withRunBaseline(dir, read.goal).goal };
  if (!existsSync(paths.events)) {
    throw new TimewarpError(
      ErrorCode.RUN_INVALID,
      `${paths.events} does not exist: run \`timewarp memory events ${dir}\` first`,
      {
        data: { run: dir },
      },
    );
  }
  const { items, warnings } = readJsonl(paths.events, MemoryEventSchema);
  return { goal, events: items, warnings: [...goal.warnings, ...warnings] };
}

/**
 * `memory guards`: score `<run>/events.jsonl` against `<run>/goal.json` and write guards.jsonl.
 * Rollbacks name `git checkout -- <file>` when the goal's repo (or the workspace) is a git work tree.
 */
export function guardRun(ctx: LabContext, run: string): GuardsResult {
  const dir = resolveRunDir(ctx.root, run);
  const paths = labRunPaths(dir);
  const { goal, events, warnings } = readRunInputs(dir);
  const tree = goal.goal.repo !== undefined ? resolve(dir, goal.goal.repo) : ctx.root;
  const records = runGuards(compileGoal(goal.goal), events, { gitWorkTree: isGitWorkTree(tree) });
  writeJsonl(paths.guards, records);
  return {
    run_id: paths.run_id,
    records,
    summary: summarizeGuards(goal.goal, events, records),
    warnings,
    path: paths.guards,
  };
}

export interface CardResult {
  run_id: string;
  card: PatternCard | null;
  /** The run's verdict from evidence (verdict.ts): outcome, high-value, the reasons and the facts behind them. */
  verdict: RunVerdict;
  /** Why the card was made: `success`, `high-value`, `forced` (the verdict alone would have given none); null without a card. */
  made_because: "success" | "high-value" | "forced" | null;
  /** Why no card was made (a run neither successful nor high-value, without `force`). */
  skipped: string | null;
  saved: SaveResult[];
  artifact: string | null;
  reflection: string;
  warnings: string[];
}

/**
 * `memory card`: reflection + pattern card from a run whose guards have been computed (they are
 * scored again when guards.jsonl is missing or older than events.jsonl). Only a successful run yields a card unless `force`. The card is
 * written to `artifacts/pattern.<id>.json` and saved (merged when near-duplicate) in the project
 * library and the user-level one. `reflect` runs config.memory.reflect_command when configured.
 */
export function distillRun(
  ctx: LabContext,
  run: string,
  options: { force?: boolean; reflect?: boolean } = {},
): CardResult {
  const dir = resolveRunDir(ctx.root, run);
  const paths = labRunPaths(dir);
  const { goal, events, warnings } = readRunInputs(dir);
  let records: GuardRecord[];
  // guards.jsonl older than events.jsonl was scored on other events: score again
  if (
    existsSync(paths.guards) &&
    statSync(paths.guards).mtimeMs >= statSync(paths.events).mtimeMs
  ) {
    const r = readJsonl(paths.guards, GuardRecordSchema);
    records = r.items;
    warnings.push(...r.warnings);
  } else records = guardRun(ctx, dir).records;
  const summary = summarizeGuards(goal.goal, events, records);
  const judged = readRunVerdict({
    dir,
    runId: paths.run_id,
    goal: goal.goal,
    events,
    guards: records,
  });
  warnings.push(...judged.warnings);
  const verdict = judged.verdict;
  let reflection = formatReflection({
    run_id: paths.run_id,
    goal: goal.goal,
    events,
    guards: records,
    summary,
    verdict,
  });
  const config = configOf(ctx);
  let hints: ReturnType<typeof runReflectCommand>["hints"];
  if (options.reflect !== false && config.memory.reflect_command !== undefined) {
    const r = runReflectCommand(config.memory.reflect_command, reflection);
    if (r.warning !== undefined) warnings.push(r.warning);
    if (r.text !== "")
      reflection += `\n## reflect (${config.memory.reflect_command.join(" ")})\n${r.text}`;
    hints = r.hints;
  }
  mkdirSync(paths.artifacts, { recursive: true });
  const reflectionPath = join(paths.artifacts, "reflection.txt");
  writeFileAtomic(reflectionPath, reflection);
  const eligible = cardEligible(verdict);
  if (!eligible && options.force !== true) {
    const why = `run ${verdict.outcome === "unknown" ? "outcome unknown" : "failed"} (${verdict.reasons.join("; ")}): no card; --force to distill anyway`;
    return {
      run_id: paths.run_id,
      card: null,
      verdict,
      made_because: null,
      skipped: why,
      saved: [],
      artifact: null,
      reflection: reflectionPath,
      warnings,
    };
  }
  const card = distillCard({
    run_id: paths.run_id,
    goal: goal.goal,
    events,
    guards: records,
    clock: ctx.clock,
    verdict,
    ...(hints !== undefined ? { hints } : {}),
  });
  const artifact = join(paths.artifacts, `pattern.${card.pattern_id}.json`);
  writeJsonAtomic(artifact, card);
  const saved = libraryDirs(ctx).map((d) => saveCard(d, card, ctx.clock));
  appendEvent(
    workspacePaths(ctx.root).events,
    "card.created",
    { pattern_id: saved[0]?.card.pattern_id ?? card.pattern_id, run_id: paths.run_id },
    ctx.clock,
  );
  return {
    run_id: paths.run_id,
    card: saved[0]?.card ?? card,
    verdict,
    made_because: !eligible ? "forced" : verdict.high_value ? "high-value" : "success",
    skipped: null,
    saved,
    artifact,
    reflection: reflectionPath,
    warnings,
  };
}

export interface RetrieveResult {
  objective: string;
  cards: RetrievedCard[];
  library_size: number;
  /** Each library's persisted search index: reused, or rebuilt because its cards changed. */
  index: { dir: string; rebuilt: boolean }[];
  warnings: string[];
  /** With `explain`: why each card matched, and why the nearest others did not. */
  explain?: Explanation;
}

/**
 * `memory retrieve`: BM25 over the libraries, thresholded; each card returned counts one use
 * (unless `record: false`). Each library's index is persisted beside it and rebuilt only when
 * its card files changed (library-index.ts); counting a use re-stamps it instead.
 */
export function retrieveForTask(
  ctx: LabContext,
  objective: string,
  options: { limit?: number; record?: boolean; explain?: boolean } = {},
): RetrieveResult {
  const libraries = libraryDirs(ctx).map((d) => openLibraryIndex(d));
  const { hits, size } = searchLibraries(libraries, objective, { limit: options.limit ?? 5 });
  const explain =
    options.explain === true
      ? explainLibraries(libraries, objective, { limit: options.limit ?? 5 })
      : undefined;
  if (options.record !== false) {
    const written: string[] = [];
    for (const h of hits) {
      if (h.stored === undefined) continue;
      h.card = recordUse(h.stored, ctx.clock);
      written.push(h.stored.file);
    }
    for (const lib of libraries) lib.touched(written);
  }
  return {
    objective,
    cards: hits.map(({ stored: _, ...h }) => h),
    library_size: size,
    index: libraries.map((l) => ({ dir: l.dir, rebuilt: l.rebuilt })),
    warnings: libraries.flatMap((l) => l.warnings),
    ...(explain === undefined ? {} : { explain }),
  };
}

export interface ViewResult {
  pattern_id: string;
  user: string;
  route: ViewRoute;
  profile_found: boolean;
  text: string;
}

/** `memory view`: render one card for a user, routed by the seed's rules. */
export function viewCard(
  ctx: LabContext,
  id: string,
  options: { user: string; difficulty?: "low" | "high" },
): ViewResult {
  const library = loadLibrary(libraryDirs(ctx));
  const stored = findCard(library, id);
  const { profile, found } = readProfile(ctx.root, options.user);
  const route = routeView({ profile, difficulty: options.difficulty });
  return {
    pattern_id: id,
    user: options.user,
    route,
    profile_found: found,
    text: renderView(stored.card, route.view),
  };
}

export interface E2EResult {
  run_id: string;
  events: number;
  sources: string[];
  fallback: boolean;
  guards: GuardSummary;
  /** The guard records that fired (warn or rollback). */
  fired: GuardRecord[];
  card: { pattern_id: string; merged_into: string | null } | null;
  card_skipped: string | null;
  /** The run's verdict (outcome, high-value, reasons): why a card was made or not. */
  verdict: Pick<RunVerdict, "outcome" | "high_value" | "reasons">;
  /** Cards retrieved for the objective from the library (when the run made none). */
  retrieved: string[];
  view: ViewRoute;
  artifacts: {
    events: string;
    guards: string;
    reflection: string;
    pattern: string | null;
    view_preview: string;
  };
  warnings: string[];
}

/**
 * The whole chain (the seed's `e2e_chat_only`): events.jsonl → guards.jsonl →
 * artifacts/reflection.txt → artifacts/pattern.pc_*.json (successful runs) → artifacts/view_preview.md,
 * routed by the user's profile and the goal's difficulty. A run that yields no card previews
 * the cards retrieved for its objective instead.
 */
export async function runE2E(
  ctx: LabContext,
  run: string,
  options: { user?: string; difficulty?: "low" | "high" } = {},
): Promise<E2EResult> {
  const dir = resolveRunDir(ctx.root, run);
  const paths = labRunPaths(dir);
  const goal = readGoal(paths.goal);
  const extracted = await extractRunEvents(dir, { root: ctx.root });
  const guards = guardRun(ctx, dir);
  const card = distillRun(ctx, dir);
  const user = options.user ?? "default";
  const { profile } = readProfile(ctx.root, user);
  const route = routeView({ profile, difficulty: options.difficulty ?? goal.goal.difficulty });
  let cards: PatternCard[] = card.card !== null ? [card.card] : [];
  let retrieved: string[] = [];
  if (cards.length === 0) {
    const r = retrieveForTask(ctx, goal.goal.objective, { limit: 3 });
    cards = r.cards.map((c) => c.card);
    retrieved = cards.map((c) => c.pattern_id);
  }
  const preview = join(paths.artifacts, "view_preview.md");
  mkdirSync(paths.artifacts, { recursive: true });
  writeFileAtomic(
    preview,
    formatViewPreview({ objective: goal.goal.objective, user, route, cards }),
  );
  return {
    run_id: paths.run_id,
    events: extracted.events.length,
    sources: extracted.sources,
    fallback: extracted.fallback,
    guards: guards.summary,
    fired: guards.records.filter((r) => r.action !== "ok"),
    card:
      card.card !== null
        ? { pattern_id: card.card.pattern_id, merged_into: card.saved[0]?.merged_into ?? null }
        : null,
    card_skipped: card.skipped,
    verdict: {
      outcome: card.verdict.outcome,
      high_value: card.verdict.high_value,
      reasons: card.verdict.reasons,
    },
    retrieved,
    view: route,
    artifacts: {
      events: extracted.path,
      guards: guards.path,
      reflection: card.reflection,
      pattern: card.artifact,
      view_preview: preview,
    },
    warnings: [
      ...extracted.warnings,
      ...guards.warnings,
      ...card.warnings.filter((w) => !guards.warnings.includes(w)),
    ],
  };
}

/**
 * `guard_check` / PreToolUse: score a proposed edit against the active goal — the run's
 * goal.json when `run` is given, else `.timewarp/memory/goal.json` — and record `guard.checked`
 * on the bus. GOAL_INVALID when there is no goal.
 */
export function checkProposedEdit(
  ctx: LabContext,
  edit: { paths: string[]; tool?: string; diff?: string; content?: string; plans?: string[] },
  options: { run?: string } = {},
): EditCheck & { goal_file: string } {
  const goalFile =
    options.run !== undefined
      ? labRunPaths(resolveRunDir(ctx.root, options.run)).goal
      : memoryPaths(ctx.root).goal;
  const goal = readGoal(goalFile);
  const check = checkEdit(goal.goal, edit, {
    root: ctx.root,
    gitWorkTree: isGitWorkTree(ctx.root),
  });
  if (existsSync(workspacePaths(ctx.root).data)) {
    appendEvent(
      workspacePaths(ctx.root).events,
      "guard.checked",
      { action: check.action, score: check.drift_score, files: edit.paths },
      ctx.clock,
    );
  }
  return { ...check, reasons: [...goal.warnings, ...check.reasons], goal_file: goalFile };
}
