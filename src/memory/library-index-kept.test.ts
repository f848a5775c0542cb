import { mkdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { makeTempDir } from "../../test/helpers/cli.ts";
import { openLibraryIndexKept } from "./library-index.ts";

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

function card(id: string, title: string) {
  return {
    version: "1",
    pattern_id: id,
    title,
    triggers: [title],
    steps: [],
    invariants: [],
    anti_patterns: [],
    eval_examples: [],
    views: { terse: title, guided: title },
    provenance: { source_runs: [], created_by: "test", created_at: "2026-01-01T00:00:00Z" },
    uses: 0,
  };
}

/** Written as timewarp writes a card: a temp file renamed into the library. */
function save(dir: string, c: ReturnType<typeof card>): void {
  const temp = join(dir, `.tmp-${c.pattern_id}`);
  writeFileSync(temp, JSON.stringify(c));
  renameSync(temp, join(dir, `${c.pattern_id}.json`));
}

describe("openLibraryIndexKept", () => {
  it("keeps the opened index while the library is unchanged and reopens it when a card is saved or removed", () => {
    const t = makeTempDir("tw-kept-");
    cleanups.push(t.cleanup);
    const dir = join(t.dir, "patterns");
    mkdirSync(dir);
    save(dir, card("pc_timezone", "timezone offset in the date parser"));
    const first = openLibraryIndexKept(dir);
    expect(first.rebuilt).toBe(true);
    expect(openLibraryIndexKept(dir)).toBe(first);
    expect(first.index.search("timezone offset parser").map((h) => h.card.pattern_id)).toEqual([
      "pc_timezone",
    ]);

    save(dir, card("pc_release", "release notes for the changelog"));
    const second = openLibraryIndexKept(dir);
    expect(second).not.toBe(first);
    expect(second.index.search("release notes changelog").map((h) => h.card.pattern_id)).toEqual([
      "pc_release",
    ]);
    expect(openLibraryIndexKept(dir)).toBe(second);

    rmSync(join(dir, "pc_release.json"));
    const third = openLibraryIndexKept(dir);
    expect(third).not.toBe(second);
    expect(third.index.search("release notes changelog")).toEqual([]);
  });

  it("a library that does not exist yet is empty, and seen once it is created", () => {
    const t = makeTempDir("tw-kept-");
    cleanups.push(t.cleanup);
    const dir = join(t.dir, "patterns");
    expect(openLibraryIndexKept(dir).index.size).toBe(0);
    mkdirSync(dir);
    save(dir, card("pc_timezone", "timezone offset in the date parser"));
    expect(openLibraryIndexKept(dir).index.size).toBe(1);
  });
});
