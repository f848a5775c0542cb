import { existsSync } from "node:fs";
import { type Clock, readConfig, workspacePaths } from "../core/index.ts";
import { readGoal } from "./goal.ts";
import { openLibraryIndexKept, searchLibraries } from "./library-index.ts";
import { libraryDirs } from "./run-steps.ts";
import type { Goal, PatternCard } from "./schemas.ts";

/** The most an offer adds to the agent's context, in UTF-8 bytes (issue 18: 1.5 KB). */
export const OFFER_BUDGET_BYTES = 1536;

/** At most this many cards per offer. */
const OFFER_CARDS = 3;

/** What a session was offered already: the goal line and the cards' ids. */
export interface OfferedBefore {
  goal: string | null;
  cards: readonly string[];
}

/** One offer: the text for the agent (null: nothing new to say), and what it holds. */
export interface MemoryOffer {
  text: string | null;
  /** The goal line offered now (null when not offered now). */
  goal: string | null;
  /** The ids of the cards offered now. */
  cards: string[];
  /** Unreadable card files, an index that could not be saved. */
  warnings: string[];
}

const bytes = (s: string) => Buffer.byteLength(s, "utf8");

/** Cut a line to `max` bytes at a character boundary, with an ellipsis when cut. */
function clip(line: string, max: number): string {
  if (bytes(line) <= max) return line;
  let out = "";
  for (const ch of line) {
    if (bytes(`${out}${ch}…`) > max) break;
    out += ch;
  }
  return `${out}…`;
}

const oneLine = (s: string) => s.replace(/\s+/g, " ").trim();

/** The active goal in one line: its objective, then the globs it may and may not edit (pure). */
export function formatGoalLine(goal: Goal): string {
  const parts = [`goal: ${oneLine(goal.objective)}`];
  if (goal.whitelist.length > 0) parts.push(`edit only: ${goal.whitelist.join(", ")}`);
  if (goal.blacklist.length > 0) parts.push(`never edit: ${goal.blacklist.join(", ")}`);
  if (goal.protected.length > 0) parts.push(`protected tests: ${goal.protected.join(", ")}`);
  return clip(parts.join(" · "), 400);
}

/** One card in one line, its id first: what it is for, the steps, what must hold, what to avoid (pure). */
export function formatCardLine(card: PatternCard): string {
  const parts = [`[${card.pattern_id}] ${oneLine(card.title)}`];
  const steps = card.steps.filter((s) => !/^reproduce:/.test(s)).slice(0, 4);
  if (steps.length > 0) parts.push(`do: ${steps.map(oneLine).join(" → ")}`);
  if (card.invariants.length > 0) parts.push(`keep: ${card.invariants.map(oneLine).join("; ")}`);
  if (card.anti_patterns.length > 0)
    parts.push(`never: ${card.anti_patterns.slice(0, 3).map(oneLine).join("; ")}`);
  if (card.eval_examples.length > 0)
    parts.push(`check: ${card.eval_examples.slice(0, 2).map(oneLine).join(", ")}`);
  return clip(parts.join(" · "), 500);
}

const HEADER =
  "timewarp memory (from earlier runs in this project; `timewarp memory view ID --user NAME` shows a card in full):";

/**
 * The offer's text within `budget` bytes (pure): a header, the goal line, then whole card lines
 * in rank order while they fit. Null when there is neither a goal line nor a card to offer.
 */
export function formatOffer(args: {
  goal: string | null;
  cards: readonly PatternCard[];
  budget?: number;
}): { text: string | null; goal: string | null; cards: string[] } {
  const budget = args.budget ?? OFFER_BUDGET_BYTES;
  const lines = [HEADER];
  let goal: string | null = null;
  if (args.goal !== null && bytes(`${HEADER}\n${args.goal}`) <= budget) {
    lines.push(args.goal);
    goal = args.goal;
  }
  const cards: string[] = [];
  for (const card of args.cards) {
    const line = `- ${formatCardLine(card)}`;
    if (bytes([...lines, line].join("\n")) > budget) continue;
    lines.push(line);
    cards.push(card.pattern_id);
  }
  if (goal === null && cards.length === 0) return { text: null, goal: null, cards: [] };
  return { text: lines.join("\n"), goal, cards };
}

/**
 * What a session is offered when it starts or the user submits a prompt (issue 18, reuse at
 * session start): the active goal (`.timewarp/memory/goal.json`) in one line, unless this
 * session had that line already, and the best cards for `hint` above the retrieval threshold
 * (the prompt; the goal's objective when there is no hint), none offered to it before; at most
 * OFFER_BUDGET_BYTES in all. The libraries' indexes stay open in this process between calls
 * (`openLibraryIndexKept`): the hook server's worker answers from memory. Offering is not a use:
 * no card file is written. Throws what reading the goal, the config or a library throws (the
 * hook reports it and offers nothing).
 */
export function offerMemory(args: {
  root: string;
  clock: Clock;
  hint: string | null;
  offered: OfferedBefore;
}): MemoryOffer {
  const { root, offered } = args;
  const goalFile = workspacePaths(root).goal;
  const goal = existsSync(goalFile) ? readGoal(goalFile).goal : null;
  const goalLine = goal === null ? null : formatGoalLine(goal);
  const hint = args.hint !== null && args.hint.trim() !== "" ? args.hint : (goal?.objective ?? "");
  let cards: PatternCard[] = [];
  const warnings: string[] = [];
  if (hint.trim() !== "") {
    const ctx = { root, clock: args.clock, config: readConfig(workspacePaths(root).config) };
    const libraries = libraryDirs(ctx).map((d) => openLibraryIndexKept(d));
    const seen = new Set(offered.cards);
    const { hits } = searchLibraries(libraries, hint, { limit: OFFER_CARDS + seen.size });
    cards = hits
      .map((h) => h.card)
      .filter((c) => !seen.has(c.pattern_id))
      .slice(0, OFFER_CARDS);
    for (const l of libraries) warnings.push(...l.warnings);
  }
  const out = formatOffer({ goal: goalLine === offered.goal ? null : goalLine, cards });
  return { ...out, warnings };
}
