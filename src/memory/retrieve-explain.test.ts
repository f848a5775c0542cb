import { describe, expect, it } from "vitest";
import { createCardIndex, formatExplanation } from "./retrieve.ts";
import type { PatternCard } from "./schemas.ts";

function card(id: string, title: string, triggers: string[], steps: string[]): PatternCard {
  return {
    version: "1",
    pattern_id: id,
    title,
    triggers,
    steps,
    invariants: [],
    anti_patterns: [],
    eval_examples: [],
    views: { terse: title, guided: title },
    provenance: { source_runs: [], created_by: "test", created_at: "2026-01-01T00:00:00Z" },
    uses: 0,
  };
}

const CARDS = [
  card(
    "pc_timezone",
    "Fix the timezone offset in the date parser",
    ["timezone", "date parser"],
    ["edit src/date.ts"],
  ),
  card(
    "pc_docs",
    "Translate the README into Chinese",
    ["readme", "translate docs"],
    ["edit README.zh.md"],
  ),
  card(
    "pc_parser_speed",
    "Speed up the config parser",
    ["parser performance"],
    ["profile src/config.ts"],
  ),
  card("pc_logger", "Rename the logger", ["logger"], ["edit src/log.ts"]),
];

describe("CardIndex.explain", () => {
  it("gives each returned card its matched tokens, IDF, BM25 share and coverage against the threshold", () => {
    const index = createCardIndex(CARDS);
    const e = index.explain("timezone offset wrong in the date parser");
    expect(e.returned.map((c) => c.pattern_id)).toEqual(["pc_timezone"]);
    const hit = e.returned[0];
    expect(hit?.rejected).toBeNull();
    expect(hit?.min_coverage).toBe(0.4);
    expect(hit?.min_tokens).toBe(2);
    expect(hit?.coverage).toBeGreaterThanOrEqual(0.4);
    const tokens = hit?.matched.map((t) => t.token) ?? [];
    expect(tokens).toEqual(expect.arrayContaining(["timezone", "offset", "date", "parser"]));
    expect(tokens).not.toContain("wrong");
    for (const t of hit?.matched ?? []) {
      expect(t.idf).toBeGreaterThan(0);
      expect(t.bm25).toBeGreaterThan(0);
    }
    // MiniSearch's score: the tokens' BM25 summed, times the number of tokens matched
    const sum = (hit?.matched ?? []).reduce((s, t) => s + t.bm25, 0);
    expect(Math.abs(sum * tokens.length - (hit?.score ?? 0))).toBeLessThan(0.05);
    // a rare token weighs more than one every parser card has
    const idf = (tok: string) => hit?.matched.find((t) => t.token === tok)?.idf ?? 0;
    expect(idf("timezone")).toBeGreaterThan(idf("parser"));
    // search returns the same cards
    expect(
      index.search("timezone offset wrong in the date parser").map((r) => r.card.pattern_id),
    ).toEqual(["pc_timezone"]);
  });

  it("says why the nearest cards were rejected: one token only, or coverage below 40 %", () => {
    const index = createCardIndex(CARDS);
    const e = index.explain("timezone offset wrong in the date parser");
    const speed = e.rejected.find((c) => c.pattern_id === "pc_parser_speed");
    expect(speed?.rejected).toMatch(/^matched 1 query token \(parser\); a card needs 2$/);
    const low = index.explain("translate the parser readme for timezone users in date offset");
    const coverage = [...low.returned, ...low.rejected].find((c) =>
      /coverage/.test(c.rejected ?? ""),
    );
    expect(coverage?.rejected).toMatch(/^coverage \d+ % below the 40 % threshold$/);
    expect(coverage?.coverage).toBeLessThan(0.4);
    expect(low.rejected.map((c) => c.pattern_id)).not.toContain("pc_logger");
    const text = formatExplanation(e);
    expect(text).toContain("pc_timezone");
    expect(text).toContain("rejected: matched 1 query token (parser)");
  });

  it("an empty query explains nothing", () => {
    const e = createCardIndex(CARDS).explain("   ");
    expect(e).toEqual({ query: [], returned: [], rejected: [] });
  });
});
