import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { makeTempDir, runCli } from "./helpers/cli.ts";

function card(id: string, title: string, triggers: string[]) {
  return {
    version: "1",
    pattern_id: id,
    title,
    triggers,
    steps: [],
    invariants: [],
    anti_patterns: [],
    eval_examples: [],
    views: { terse: title, guided: title },
    provenance: { source_runs: [], created_by: "test", created_at: "2026-01-01T00:00:00Z" },
    uses: 0,
  };
}

interface Explained {
  pattern_id: string;
  coverage: number;
  min_coverage: number;
  matched: { token: string; idf: number; bm25: number }[];
  rejected: string | null;
}

describe("timewarp memory retrieve --explain (CLI)", () => {
  const t = makeTempDir("tw-explain-");
  afterAll(t.cleanup);
  const dir = join(t.dir, ".timewarp", "memory", "patterns");
  mkdirSync(dir, { recursive: true });
  for (const c of [
    card("pc_timezone", "Fix the timezone offset in the date parser", ["timezone", "date parser"]),
    card("pc_config", "Speed up the config parser", ["parser performance"]),
    card("pc_logger", "Rename the logger", ["logger"]),
  ])
    writeFileSync(join(dir, `${c.pattern_id}.json`), JSON.stringify(c));

  it("--json holds why each card matched and why the nearest others did not; humans get the same", () => {
    const q = "timezone offset wrong in the date parser";
    const r = runCli(["memory", "retrieve", q, "--explain", "--no-record", "--json"], {
      cwd: t.dir,
    });
    expect(r.status, r.stderr).toBe(0);
    const body = r.json() as {
      cards: { card: { pattern_id: string } }[];
      explain: { query: string[]; returned: Explained[]; rejected: Explained[] };
    };
    expect(body.cards.map((c) => c.card.pattern_id)).toEqual(["pc_timezone"]);
    expect(body.explain.query).toEqual(expect.arrayContaining(["timezone", "offset", "parser"]));
    const hit = body.explain.returned[0];
    expect(hit?.pattern_id).toBe("pc_timezone");
    expect(hit?.rejected).toBeNull();
    expect(hit?.matched.map((m) => m.token)).toEqual(
      expect.arrayContaining(["timezone", "offset", "date", "parser"]),
    );
    expect(body.explain.rejected.map((c) => [c.pattern_id, c.rejected])).toEqual([
      ["pc_config", "matched 1 query token (parser); a card needs 2"],
    ]);

    const human = runCli(["memory", "retrieve", q, "--explain", "--no-record"], { cwd: t.dir });
    expect(human.status).toBe(0);
    expect(human.stdout).toContain("nearest rejected:");
    expect(human.stdout).toMatch(/matched: timezone \(idf [\d.]+, bm25 [\d.]+\)/);
    expect(human.stdout).toContain("rejected: matched 1 query token (parser); a card needs 2");
  });
});
