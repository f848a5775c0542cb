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

/** One query token as `--explain` shows it: its weight, and what it added to a card's score. */
export interface ExplainedToken {
  token: string;
  /** The token's IDF over the library (the coverage threshold weighs words by it). */
  idf: number;
  /**
   * Its BM25 score in this card (field-boosted). MiniSearch's score for the card is the sum over
   * the matched tokens times their number (matching more of the query counts).
   */
  bm25: number;
}

/** Why a card was returned or rejected (`memory retrieve --explain`). */
export interface CardExplanation {
  pattern_id: string;
  title: string;
  score: number;
  coverage: number;
  /** The threshold the coverage was held against. */
  min_coverage: number;
  /** How many query tokens a card must match (2, or 1 for a one-token query). */
  min_tokens: number;
  /** The query tokens the card matched, with their IDF and BM25 contribution, largest first. */
  matched: ExplainedToken[];
  /** null for a returned card; otherwise why it was rejected. */
  rejected: string | null;
}

export interface Explanation {
  /** The query's distinct tokens (what BM25 searched for). */
  query: string[];
  returned: CardExplanation[];
  /** The best-scoring cards that BM25 found but the threshold rejected, nearest first. */
  rejected: CardExplanation[];
}

/** A BM25 index over pattern cards (MiniSearch), built once and searched many times. */
export interface CardIndex {
  search(objective: string, options?: SearchOptions): RetrievedCard[];
  /** The same search, with each returned card's reasons and the nearest rejected cards' (`nearest`, default 3). */
  explain(objective: string, options?: SearchOptions & { nearest?: number }): Explanation;
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
  interface Candidate {
    id: number;
    score: number;
    matched: string[];
    coverage: number;
    rejected: string | null;
  }
  /** BM25's hits for the query, each judged against the threshold (pure; reads no card). */
  /**
   * BM25's hits for the query, in score order, and the judge of one hit against the threshold
   * (pure; reads no card). Judged lazily: a search stops at its limit.
   */
  const prepare = (objective: string, minCoverage: number) => {
    const q = [...new Set(tokenize(objective))];
    const seen = new Set<string>();
    const groups = tokenizeGroups(objective).filter((g) => {
      const key = g.join(" ");
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    });
    // each word's weight once, not once per hit
    const weights = groups.map((g) => g.reduce((s, t) => s + idf(t), 0) / g.length);
    const needTerms = Math.min(2, q.length);
    const total = weights.reduce((s, w) => s + w, 0);
    const hits = q.length === 0 ? [] : ms.search(q.join(" "));
    const judge = (r: (typeof hits)[number]): Candidate => {
      const matched = [...new Set(r.queryTerms)];
      let coverage = 0;
      if (matched.length >= needTerms) {
        const hit = new Set(matched);
        // each word (a CJK run counts as one) contributes its IDF times the share of its tokens matched
        for (let i = 0; i < groups.length; i++) {
          const g = groups[i] as string[];
          let n = 0;
          for (const t of g) if (hit.has(t)) n++;
          coverage += ((weights[i] ?? 0) * n) / g.length;
        }
        coverage /= total;
      }
      const rejected =
        matched.length < needTerms
          ? `matched ${matched.length} query token (${matched.join(", ")}); a card needs ${needTerms}`
          : coverage < minCoverage
            ? `coverage ${Math.round(coverage * 100)} % below the ${Math.round(minCoverage * 100)} % threshold`
            : null;
      return {
        id: Number(r.id),
        score: Math.round(r.score * 1000) / 1000,
        matched,
        coverage: Math.round(coverage * 100) / 100,
        rejected,
      };
    };
    return { q, needTerms, hits, judge };
  };
  /** The first `limit` hits above the threshold whose card can be read. */
  const accepted = (prepared: ReturnType<typeof prepare>, limit: number) => {
    const out: { c: Candidate; card: PatternCard }[] = [];
    for (const r of prepared.hits) {
      if (out.length >= limit) break;
      const c = prepared.judge(r);
      if (c.rejected !== null) continue;
      const card = cardAt(c.id);
      if (card === undefined) continue;
      out.push({ c, card });
    }
    return out;
  };
  return {
    size: n,
    toJSON: () => ({ version: INDEX_VERSION, size: n, df: [...df], minisearch: ms.toJSON() }),
    search(objective, options = {}) {
      const prepared = prepare(objective, options.minCoverage ?? 0.4);
      return accepted(prepared, options.limit ?? 5).map(({ c, card }) => ({
        card,
        score: c.score,
        matched: c.matched,
        coverage: c.coverage,
      }));
    },
    explain(objective, options = {}) {
      const minCoverage = options.minCoverage ?? 0.4;
      const prepared = prepare(objective, minCoverage);
      const { q, needTerms } = prepared;
      const explainOne = (c: Candidate, card: PatternCard): CardExplanation => ({
        pattern_id: card.pattern_id,
        title: card.title,
        score: c.score,
        coverage: c.coverage,
        min_coverage: minCoverage,
        min_tokens: needTerms,
        matched: c.matched
          .map((token) => {
            // A one-token search restricted to this card: MiniSearch sums the terms' scores (OR).
            const alone = ms.search(token, { filter: (r) => Number(r.id) === c.id })[0];
            return {
              token,
              idf: Math.round(idf(token) * 1000) / 1000,
              bm25: Math.round((alone?.score ?? 0) * 1000) / 1000,
            };
          })
          .sort((a, b) => b.bm25 - a.bm25),
        rejected: c.rejected,
      });
      const returned = accepted(prepared, options.limit ?? 5).map(({ c, card }) =>
        explainOne(c, card),
      );
      const rejected: CardExplanation[] = [];
      for (const r of prepared.hits) {
        if (rejected.length >= (options.nearest ?? 3)) break;
        const c = prepared.judge(r);
        if (c.rejected === null) continue;
        const card = cardAt(c.id);
        if (card !== undefined) rejected.push(explainOne(c, card));
      }
      return { query: q, returned, rejected };
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

/** `memory retrieve --explain` for a terminal: one block per card, returned first (pure). */
export function formatExplanation(e: Explanation): string {
  const tokens = (c: CardExplanation) =>
    c.matched.length === 0
      ? "none"
      : c.matched.map((t) => `${t.token} (idf ${t.idf}, bm25 ${t.bm25})`).join(", ");
  const block = (c: CardExplanation) =>
    [
      `${c.pattern_id} ${c.title}`,
      `  matched: ${tokens(c)}`,
      `  score ${c.score}; coverage ${Math.round(c.coverage * 100)} % (threshold ${Math.round(c.min_coverage * 100)} %, at least ${c.min_tokens} tokens)`,
      ...(c.rejected === null ? [] : [`  rejected: ${c.rejected}`]),
    ].join("\n");
  return [
    `query tokens: ${e.query.join(", ") || "(none)"}`,
    ...(e.returned.length === 0 ? ["returned: none"] : ["returned:", ...e.returned.map(block)]),
    ...(e.rejected.length === 0
      ? ["nearest rejected: none"]
      : ["nearest rejected:", ...e.rejected.map(block)]),
  ].join("\n");
}
