import MiniSearch, { type Options } from "minisearch";
import { z } from "zod";
import type { PatternCard } from "./schemas.ts";
import { tokenize, tokenizeGroups } from "./tokenize.ts";

export interface RetrievedCard {
  card: PatternCard;
  /** BM25 score from MiniSearch (field-boosted). */
  score: number;
  /** The query tokens this card matched. */
  matched: string[];
  /** IDF-weighted share of the query's distinct tokens this card matched (rare words count more). */
  coverage: number;
}

export interface SearchOptions {
  limit?: number;
  /**
   * Minimum IDF-weighted share of the query's distinct tokens a card must match (default 0.4),
   * and at least two tokens when the query has two or more: no card is better than an unrelated
   * one that shares only common words ("test", "readme").
   */
  minCoverage?: number;
}

/** A BM25 index over pattern cards (MiniSearch), built once and searched many times. */
export interface CardIndex {
  search(objective: string, options?: SearchOptions): RetrievedCard[];
  size: number;
  /** A plain object for JSON.stringify; `loadCardIndex` turns it back into an index. */
  toJSON(): SerializedCardIndex;
}

/** Bumped whenever the fields, the tokenizer or the document layout change: an older file is rebuilt. */
export const INDEX_VERSION = 2;

/** What a persisted index holds: MiniSearch's own JSON and the document frequencies the coverage threshold needs. */
const SerializedCardIndexSchema = z.object({
  version: z.literal(INDEX_VERSION),
  size: z.number().int().nonnegative(),
  df: z.array(z.tuple([z.string(), z.number()])),
  minisearch: z.custom<ReturnType<MiniSearch["toJSON"]>>(
    (v) => typeof v === "object" && v !== null,
  ),
});
export type SerializedCardIndex = z.infer<typeof SerializedCardIndexSchema>;

/** Two fields, not one per card field: MiniSearch scores each (term, field) posting list, and search time grows with their number. */
interface Doc {
  id: number;
  /** title + triggers: what the card is for. */
  head: string;
  /** steps + invariants + anti-patterns: how it is done. */
  body: string;
}

function miniSearchOptions(tokenizer: (text: string) => string[]): Options<Doc> & {
  extractField: (doc: Doc, field: string) => string;
} {
  return {
    fields: ["head", "body"],
    extractField: (doc: Doc, field: string) => {
      const v = doc[field as keyof Doc];
      return typeof v === "number" ? String(v) : v;
    },
    tokenize: tokenizer,
    processTerm: (t: string) => t,
    searchOptions: { boost: { head: 3 }, combineWith: "OR" },
  };
}

/** Build the index (title and triggers boosted ×3 over steps and invariants); the tokenizer splits paths, camelCase, snake_case and CJK bigrams (tokenize.ts). */
export function createCardIndex(cards: readonly PatternCard[]): CardIndex {
  // Document frequency per token (for the IDF-weighted coverage threshold), counted while
  // MiniSearch tokenizes: extractField sees the document, tokenize the text, once each.
  const df = new Map<string, number>();
  const lastDoc = new Map<string, number>();
  let current = -1;
  // MiniSearch tokenizes queries with the same function: only documents count
  let indexing = true;
  const base = miniSearchOptions((text) => {
    const tokens = tokenize(text);
    if (!indexing) return tokens;
    for (const t of tokens) {
      if (lastDoc.get(t) === current) continue;
      lastDoc.set(t, current);
      df.set(t, (df.get(t) ?? 0) + 1);
    }
    return tokens;
  });
  const ms = new MiniSearch<Doc>({
    ...base,
    extractField: (doc, field) => {
      current = doc.id;
      return base.extractField(doc, field);
    },
  });
  ms.addAll(
    cards.map((c, id) => ({
      id,
      head: [c.title, ...c.triggers].join("\n"),
      body: [...c.steps, ...c.invariants, ...c.anti_patterns].join("\n"),
    })),
  );
  indexing = false;
  return cardIndex(ms, df, cards.length, (id) => cards[id]);
}

/**
 * An index from `CardIndex.toJSON()` (no card is read or tokenized); `cardAt(i)` returns the
 * i-th card of the list it was built from, read only for the hits. Undefined when the object
 * is not a serialized index of this version.
 */
export function loadCardIndex(
  json: unknown,
  cardAt: (id: number) => PatternCard | undefined,
): CardIndex | undefined {
  const r = SerializedCardIndexSchema.safeParse(json);
  if (!r.success) return undefined;
  const j = r.data;
  let ms: MiniSearch<Doc>;
  try {
    ms = MiniSearch.loadJS<Doc>(j.minisearch, miniSearchOptions(tokenize));
  } catch {
    return undefined; // written by another MiniSearch version, or damaged
  }
  return cardIndex(ms, new Map(j.df), j.size, cardAt);
}

function cardIndex(
  ms: MiniSearch<Doc>,
  df: Map<string, number>,
  n: number,
  cardAt: (id: number) => PatternCard | undefined,
): CardIndex {
  // A token no card has weighs as a rare one (df = 1): it should lower coverage, but a query in
  // two languages against cards in one should not be ruled out by its untranslatable half alone.
  const idf = (t: string) => {
    const f = Math.max(1, df.get(t) ?? 0);
    return Math.log(1 + (n - f + 0.5) / (f + 0.5));
  };
  return {
    size: n,
    toJSON: () => ({ version: INDEX_VERSION, size: n, df: [...df], minisearch: ms.toJSON() }),
    search(objective, options = {}) {
      const q = [...new Set(tokenize(objective))];
      if (q.length === 0) return [];
      const seen = new Set<string>();
      const groups = tokenizeGroups(objective).filter((g) => {
        const key = g.join(" ");
        if (seen.has(key)) return false;
        seen.add(key);
        return true;
      });
      const weight = (g: string[]) => g.reduce((s, t) => s + idf(t), 0) / g.length;
      const needTerms = Math.min(2, q.length);
      const minCoverage = options.minCoverage ?? 0.4;
      const total = groups.reduce((s, g) => s + weight(g), 0);
      const out: RetrievedCard[] = [];
      for (const r of ms.search(q.join(" "))) {
        const matched = [...new Set(r.queryTerms)];
        if (matched.length < needTerms) continue;
        const hit = new Set(matched);
        // each word (a CJK run counts as one) contributes its IDF times the share of its tokens matched
        const coverage =
          groups.reduce(
            (s, g) => s + (weight(g) * g.filter((t) => hit.has(t)).length) / g.length,
            0,
          ) / total;
        if (coverage < minCoverage) continue;
        const card = cardAt(Number(r.id));
        if (card === undefined) continue;
        out.push({
          card,
          score: Math.round(r.score * 1000) / 1000,
          matched,
          coverage: Math.round(coverage * 100) / 100,
        });
        if (out.length >= (options.limit ?? 5)) break;
      }
      return out;
    },
  };
}

/** The naive alternative (benchmark only): score every card by token overlap with the query. */
export function linearScanSearch(
  cards: readonly PatternCard[],
  objective: string,
  limit = 5,
): { card: PatternCard; score: number }[] {
  const q = new Set(tokenize(objective));
  const scored: { card: PatternCard; score: number }[] = [];
  for (const card of cards) {
    const toks = new Set(
      tokenize([card.title, ...card.triggers, ...card.steps, ...card.invariants].join(" ")),
    );
    let s = 0;
    for (const t of q) if (toks.has(t)) s++;
    if (s > 0) scored.push({ card, score: s });
  }
  scored.sort((a, b) => b.score - a.score);
  return scored.slice(0, limit);
}
