import { describe, expect, it } from "vitest";
import { isTimewarpError } from "../core/index.ts";
import { emptyIndex, formatIndexLine, idAt, parseIndexText } from "./history-index.ts";
import { queryHistoryIndex } from "./query-history.ts";

function makeIndex(n: number) {
  let text = "";
  for (let i = 0; i < n; i++) {
    text += formatIndexLine({
      id: `op${String(i).padStart(8, "0")}`,
      ts: i * 1000,
      tool: ["ApplyEditBlock", "Delete", "ApplyWholeFileEdit"][i % 3] ?? "",
      linesChanged: 1,
      files: [i % 4 === 0 ? `src/auth/f${i % 10}.ts` : `docs/n${i % 7}.md`],
    });
  }
  const data = emptyIndex();
  parseIndexText(text, data);
  return data;
}

describe("queryHistoryIndex", () => {
  it("walks every page newest first: no duplicates, no gaps, stable total", () => {
    const index = makeIndex(257);
    const filters = { tools: ["ApplyEditBlock", "Delete"], fileGlob: "src/**/*.ts" };
    const expected: string[] = [];
    for (let i = 256; i >= 0; i--) {
      if (i % 3 !== 2 && i % 4 === 0) expected.push(idAt(index, i));
    }
    const seen: string[] = [];
    let cursor: string | undefined;
    for (let guard = 0; guard < 100; guard++) {
      const page = queryHistoryIndex(index, filters, { limit: 7, ...(cursor ? { cursor } : {}) });
      expect(page.total).toBe(expected.length);
      seen.push(...page.positions.map((p) => idAt(index, p)));
      expect(page.hasMore).toBe(page.nextCursor !== undefined);
      if (!page.hasMore) break;
      cursor = page.nextCursor;
    }
    expect(seen).toEqual(expected);
  });

  it("filters by an inclusive time window", () => {
    const index = makeIndex(50);
    const page = queryHistoryIndex(index, { sinceMs: 10_000, untilMs: 19_000 }, { limit: 100 });
    expect(page.total).toBe(10);
    expect(page.positions[0]).toBe(19);
    expect(page.positions.at(-1)).toBe(10);
    expect(page.hasMore).toBe(false);
  });

  it("an exact last page has hasMore false and no cursor", () => {
    const index = makeIndex(10);
    const first = queryHistoryIndex(index, {}, { limit: 5 });
    expect(first.hasMore).toBe(true);
    const second = queryHistoryIndex(index, {}, { limit: 5, cursor: first.nextCursor ?? "" });
    expect(second.positions).toEqual([4, 3, 2, 1, 0]);
    expect(second.hasMore).toBe(false);
    expect(second.nextCursor).toBeUndefined();
  });

  it("rejects a cursor that is not from this history", () => {
    try {
      queryHistoryIndex(makeIndex(3), {}, { limit: 5, cursor: "c1.bm9wZQ" });
      expect.unreachable();
    } catch (error) {
      expect(isTimewarpError(error, "INVALID_INPUT")).toBe(true);
    }
  });
});
