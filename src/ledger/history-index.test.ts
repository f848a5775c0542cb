import { appendFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  allIds,
  appendIndexEntries,
  emptyIndex,
  firstPositionOf,
  formatIndexLine,
  type IndexEntry,
  indexEntryAt,
  loadIndex,
  parseIndexText,
  positionOf,
  writeIndex,
} from "./history-index.ts";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
const tmp = () => {
  const d = mkdtempSync(join(tmpdir(), "tw-ledger-index-"));
  dirs.push(d);
  return join(d, "index.tsv");
};

const entry = (n: number, files: string[] = [`src/f${n}.ts`]): IndexEntry => ({
  id: `op${String(n).padStart(8, "0")}`,
  ts: 1_700_000_000_000 + n,
  tool: n % 2 === 0 ? "ApplyEditBlock" : "Delete",
  linesChanged: n,
  files,
});

describe("history index", () => {
  it("round-trips paths with tabs, newlines and backslashes", () => {
    const e = entry(1, ["a\tb.txt", "c\nd\\e.txt", "plain.ts"]);
    const data = emptyIndex();
    parseIndexText(formatIndexLine(e), data);
    expect(indexEntryAt(data, 0)).toEqual(e);
  });

  it("skips a torn last line, and the next append cuts it off", () => {
    const path = tmp();
    appendIndexEntries(path, [entry(1)]);
    appendFileSync(path, "op00000002\t17000"); // a writer killed mid-line
    expect(allIds(loadIndex(path))).toEqual(["op00000001"]);
    appendIndexEntries(path, [entry(3)]);
    expect(readFileSync(path, "utf8")).toBe(formatIndexLine(entry(1)) + formatIndexLine(entry(3)));
    expect(allIds(loadIndex(path))).toEqual(["op00000001", "op00000003"]);
  });

  it("parses only appended bytes when the file grew, and all of it when replaced", () => {
    const path = tmp();
    appendIndexEntries(path, [entry(1), entry(2)]);
    const first = loadIndex(path);
    appendIndexEntries(path, [entry(3)]);
    const second = loadIndex(path);
    expect(second).toBe(first); // same cached object, extended
    expect(second.count).toBe(3);
    writeIndex(path, [entry(3)]);
    expect(allIds(loadIndex(path))).toEqual(["op00000003"]);
  });

  it("ignores malformed lines; a duplicate id resolves to its first line", () => {
    const path = tmp();
    writeFileSync(
      path,
      `garbage\n${formatIndexLine(entry(1))}x\ty\tz\tw\nop00000009\tnot-a-time\tEdit\t1\n${formatIndexLine(entry(2))}${formatIndexLine(entry(1))}`,
    );
    const index = loadIndex(path);
    expect(allIds(index)).toEqual(["op00000001", "op00000002", "op00000001"]);
    expect(positionOf(index, "op00000001")).toBe(0);
    expect(positionOf(index, "op00000002")).toBe(1);
    expect(positionOf(index, "op00000009")).toBeUndefined();
    const fresh = loadIndex(path);
    fresh.byId = undefined;
    expect(firstPositionOf(fresh, "op00000001")).toBe(0);
    expect(firstPositionOf(fresh, "op00000002")).toBe(1);
    expect(firstPositionOf(fresh, "00000001op")).toBeUndefined(); // spans two ids: not aligned
    expect(firstPositionOf(fresh, "op00000009")).toBeUndefined();
  });
});
