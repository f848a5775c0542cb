import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { ErrorCode, errnoCode, fromSystemError, TimewarpError } from "../core/index.ts";
import { withRunBaseline } from "./baseline.ts";
import { readGoal } from "./goal.ts";
import { type GuardSummary, summarizeGuards } from "./guards.ts";
import { loadLibrary } from "./library.ts";
import { readProfile } from "./profile.ts";
import { labRunPaths, memoryPaths, readJsonl } from "./run-dir.ts";
import { type LabContext, libraryDirs } from "./run-steps.ts";
import {
  type Goal,
  type GuardRecord,
  GuardRecordSchema,
  type MemoryEvent,
  MemoryEventSchema,
  type PatternCard,
  ThresholdsSchema,
} from "./schemas.ts";
import { renderView, routeView, type ViewRoute } from "./views.ts";

const RUN_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/;

/** A run of `.timewarp/memory/runs/` by its id; NOT_FOUND for an id that is not one of them. */
function labRunDir(root: string, runId: string): string {
  const runs = memoryPaths(root).runs;
  const dir = join(runs, runId);
  let isDir = false;
  try {
    isDir = RUN_ID.test(runId) && statSync(dir).isDirectory();
  } catch {
    isDir = false;
  }
  if (!isDir)
    throw new TimewarpError(
      ErrorCode.NOT_FOUND,
      `no memory run ${JSON.stringify(runId)} in ${runs}`,
      {
        data: { run: runId },
      },
    );
  return dir;
}

/** The runs of `.timewarp/memory/runs/`, most recently changed first. */
export function listLabRuns(root: string): { run_id: string; modified_at: string }[] {
  const runs = memoryPaths(root).runs;
  let names: string[];
  try {
    names = readdirSync(runs).filter((n) => RUN_ID.test(n));
  } catch (error) {
    if (errnoCode(error) === "ENOENT") return [];
    throw fromSystemError(error, `listing ${runs}`);
  }
  return names
    .flatMap((run_id) => {
      try {
        const st = statSync(join(runs, run_id));
        return st.isDirectory()
          ? [{ run_id, modified_at: st.mtime.toISOString(), ms: st.mtimeMs }]
          : [];
      } catch {
        return [];
      }
    })
    .sort((a, b) => b.ms - a.ms || a.run_id.localeCompare(b.run_id))
    .map(({ run_id, modified_at }) => ({ run_id, modified_at }));
}

function countLines(path: string): number | null {
  try {
    return readFileSync(path, "utf8")
      .split("\n")
      .filter((l) => l.trim() !== "").length;
  } catch {
    return null;
  }
}

function tryGoal(dir: string): { goal: Goal | null; warning: string | null } {
  try {
    const read = readGoal(labRunPaths(dir).goal);
    return { goal: withRunBaseline(dir, read.goal).goal, warning: null };
  } catch (error) {
    return { goal: null, warning: error instanceof Error ? error.message : String(error) };
  }
}

/** One line of the runs listing: the objective and how far the run has been taken. */
export function labRunOverview(root: string, runId: string) {
  const dir = labRunDir(root, runId);
  const paths = labRunPaths(dir);
  const guards = readRecords(paths.guards, GuardRecordSchema).items;
  return {
    run_id: runId,
    objective: tryGoal(dir).goal?.objective ?? null,
    events: countLines(paths.events),
    guards: countLines(paths.guards),
    warn: guards.filter((g) => g.action === "warn").length,
    rollback: guards.filter((g) => g.action === "rollback").length,
    max_drift: guards.reduce((m, g) => Math.max(m, g.drift_score), 0),
  };
}

function readRecords<T>(path: string, schema: Parameters<typeof readJsonl<T>>[1]) {
  try {
    return readJsonl(path, schema);
  } catch (error) {
    if (error instanceof TimewarpError && error.code === ErrorCode.RUN_INVALID)
      return { items: [] as T[], warnings: [] };
    throw error;
  }
}

/** A card that came from this run, rendered for the user, with the run's events it names. */
export interface RunCard {
  card: PatternCard;
  file: string;
  text: string;
  /** Steps of this run's events whose file or command the card's text names. */
  event_steps: number[];
}

/** The steps of `events` whose file (without `:line`) or command a card's text names (pure). */
export function eventsNamedBy(card: PatternCard, events: readonly MemoryEvent[]): number[] {
  const text = [
    ...card.steps,
    ...card.invariants,
    ...card.anti_patterns,
    ...card.eval_examples,
  ].join("\n");
  return events
    .filter((e) => {
      const file = e.where?.replace(/:\d+$/, "");
      return (
        (file !== undefined && file !== "" && text.includes(file)) ||
        (e.cmd !== undefined && text.includes(e.cmd))
      );
    })
    .map((e) => e.step);
}

/** What the dashboard shows of one memory run. */
export interface LabRunView {
  run_id: string;
  goal: Goal | null;
  /** The guards' thresholds (the goal's, else the defaults). */
  thresholds: { warn: number; rollback: number };
  events: MemoryEvent[];
  guards: GuardRecord[];
  summary: GuardSummary | null;
  cards: RunCard[];
  user: string;
  users: string[];
  profile_found: boolean;
  route: ViewRoute;
  warnings: string[];
}

function profileIds(root: string): string[] {
  try {
    return readdirSync(memoryPaths(root).profiles)
      .filter((n) => /^[A-Za-z0-9._-]{1,64}\.json$/.test(n))
      .map((n) => n.slice(0, -".json".length))
      .sort();
  } catch {
    return [];
  }
}

/**
 * A run of `.timewarp/memory/runs/` as a reader sees it (reads only): its goal, events, guard
 * records and summary, the cards of the libraries whose provenance names it — each rendered terse
 * or guided for `user` as `memory view` routes it (profile, then the goal's difficulty) —, and
 * the users that have a profile. NOT_FOUND for an unknown run; a missing events or guards file is
 * an empty list, bad lines are warnings.
 */
export function readLabRun(
  ctx: LabContext,
  runId: string,
  options: { user?: string } = {},
): LabRunView {
  const dir = labRunDir(ctx.root, runId);
  const paths = labRunPaths(dir);
  const { goal, warning } = tryGoal(dir);
  const events = readRecords(paths.events, MemoryEventSchema);
  const guards = readRecords(paths.guards, GuardRecordSchema);
  const user = options.user ?? "default";
  const { profile, found } = readProfile(ctx.root, user);
  const route = routeView({ profile, difficulty: goal?.difficulty });
  const library = loadLibrary(libraryDirs(ctx));
  const cards = library.cards
    .filter((s) => s.card.provenance.source_runs.includes(runId))
    .map((s) => ({
      card: s.card,
      file: s.file,
      text: renderView(s.card, route.view),
      event_steps: eventsNamedBy(s.card, events.items),
    }));
  return {
    run_id: runId,
    goal,
    thresholds: goal?.thresholds ?? ThresholdsSchema.parse({}),
    events: events.items,
    guards: guards.items,
    summary: goal === null ? null : summarizeGuards(goal, events.items, guards.items),
    cards,
    user,
    users: profileIds(ctx.root),
    profile_found: found,
    route,
    warnings: [
      ...(warning === null ? [] : [warning]),
      ...events.warnings,
      ...guards.warnings,
      ...library.warnings,
    ],
  };
}
