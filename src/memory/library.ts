import { mkdirSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import {
  type Clock,
  ErrorCode,
  errnoCode,
  fromSystemError,
  TimewarpError,
  writeJsonAtomic,
} from "../core/index.ts";
import { cardSimilarity, mergeCards, NEAR_DUPLICATE } from "./card.ts";
import { type PatternCard, PatternCardSchema } from "./schemas.ts";

export interface StoredCard {
  card: PatternCard;
  file: string;
}

export interface Library {
  cards: StoredCard[];
  /** Card files that could not be read (hand-edited into nonsense), each naming file and reason; they are skipped. */
  warnings: string[];
}

/** The card files (`pc_*.json`) of a library directory, sorted; undefined when it does not exist. */
export function listCardFiles(dir: string): string[] | undefined {
  try {
    return readdirSync(dir)
      .filter((n) => /^pc_.*\.json$/.test(n))
      .sort();
  } catch (error) {
    if (errnoCode(error) === "ENOENT") return undefined;
    throw fromSystemError(error, `listing ${dir}`);
  }
}

/**
 * Load `pc_*.json` from each directory in order (project library first, then the user-level
 * one); an id already loaded from an earlier directory shadows later ones. A missing directory
 * is an empty library.
 */
export function loadLibrary(dirs: readonly string[]): Library {
  const cards: StoredCard[] = [];
  const warnings: string[] = [];
  const seen = new Set<string>();
  for (const dir of dirs) {
    const names = listCardFiles(dir);
    if (names === undefined) continue;
    for (const name of names) {
      const file = join(dir, name);
      const parsed = parseCardFile(file);
      if (!parsed.ok) {
        warnings.push(parsed.issue);
        continue;
      }
      if (seen.has(parsed.card.pattern_id)) continue;
      seen.add(parsed.card.pattern_id);
      cards.push({ card: parsed.card, file });
    }
  }
  return { cards, warnings };
}

function parseCardFile(
  file: string,
): { ok: true; card: PatternCard } | { ok: false; issue: string } {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    return { ok: false, issue: `${file}: ${fromSystemError(error, "reading").message}` };
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    const msg = error instanceof Error ? error.message : String(error);
    const pos = jsonErrorOffset(msg, text);
    const line = pos === undefined ? undefined : text.slice(0, pos).split("\n").length;
    return {
      ok: false,
      issue: `${file}${line !== undefined ? ` line ${line}` : ""}: not valid JSON (${msg}), skipped`,
    };
  }
  const r = PatternCardSchema.safeParse(json);
  if (!r.success) {
    const issues = r.error.issues
      .map((i) => `${i.path.join(".") || "(root)"}: ${i.message}`)
      .join("; ");
    return { ok: false, issue: `${file}: not a pattern card (${issues}), skipped` };
  }
  return { ok: true, card: r.data };
}

/**
 * Where JSON.parse failed: Node reports `at position N` for some errors and only a quoted
 * context (`Unexpected token '}', ..."id": \n}" is not valid JSON`) for others.
 */
function jsonErrorOffset(message: string, text: string): number | undefined {
  const pos = message.match(/position (\d+)/)?.[1];
  if (pos !== undefined) return Number(pos);
  if (/Unexpected end of JSON input/.test(message)) return text.length;
  const m = message.match(
    /Unexpected token '([^']*)', (?:\.\.\.)?"([\s\S]*)"(?:\.\.\.)? is not valid JSON/,
  );
  if (m === null) return undefined;
  const context = m[2] ?? "";
  const at = text.indexOf(context);
  if (at < 0) return undefined;
  const token = context.lastIndexOf(m[1] ?? "");
  return at + Math.max(0, token);
}

/** Find a card by id in the library; CARD_NOT_FOUND listing what exists. */
export function findCard(library: Library, id: string): StoredCard {
  const hit = library.cards.find((c) => c.card.pattern_id === id);
  if (hit === undefined) {
    const have = library.cards.map((c) => c.card.pattern_id);
    throw new TimewarpError(
      ErrorCode.CARD_NOT_FOUND,
      `no pattern card ${JSON.stringify(id)} (have ${have.length}${have.length > 0 ? `: ${have.slice(0, 10).join(", ")}` : ""})`,
      { data: { available: have } },
    );
  }
  return hit;
}

export interface SaveResult {
  card: PatternCard;
  file: string;
  /** The id of the existing card it was merged into, when it was a near duplicate. */
  merged_into: string | null;
  similarity: number | null;
}

/**
 * Save a card into `dir`, merging it into a near-duplicate (same id, or token similarity
 * ≥ 0.6) rather than adding a second copy. Atomic write.
 */
export function saveCard(dir: string, card: PatternCard, clock: Clock): SaveResult {
  const library = loadLibrary([dir]);
  let best: { stored: StoredCard; sim: number } | undefined;
  for (const stored of library.cards) {
    const sim = stored.card.pattern_id === card.pattern_id ? 1 : cardSimilarity(stored.card, card);
    if (sim >= NEAR_DUPLICATE && (best === undefined || sim > best.sim)) best = { stored, sim };
  }
  mkdirSync(dir, { recursive: true });
  if (best !== undefined) {
    const merged = mergeCards(best.stored.card, card, clock.now());
    writeJsonAtomic(best.stored.file, merged);
    return {
      card: merged,
      file: best.stored.file,
      merged_into: merged.pattern_id,
      similarity: round(best.sim),
    };
  }
  const file = join(dir, `${card.pattern_id}.json`);
  writeJsonAtomic(file, card);
  return { card, file, merged_into: null, similarity: null };
}

/** Count one use of a stored card (retrieval for a task). */
export function recordUse(stored: StoredCard, clock: Clock): PatternCard {
  const updated = {
    ...stored.card,
    uses: stored.card.uses + 1,
    last_used_at: clock.now().toISOString(),
  };
  writeJsonAtomic(stored.file, updated);
  stored.card = updated;
  return updated;
}

function round(x: number): number {
  return Math.round(x * 1000) / 1000;
}
