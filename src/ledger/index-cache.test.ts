import { spawnSync } from "node:child_process";
import {
  cpSync,
  mkdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  truncateSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { makeTempDir, REPO_ROOT } from "../../test/helpers/cli.ts";
import { type GetEditHistoryParams, getEditHistory } from "./history.ts";
import {
  forgetLoadedIndexes,
  formatIndexLine,
  type IndexEntry,
  indexCachePath,
  indexLoadStats,
} from "./history-index.ts";
import { recordRelativePath } from "./ledger-paths.ts";
import { repairIndex } from "./retention.ts";

const N = 2100; // above the size from which a cache is written (2000)
const TOOLS = ["ApplyEditBlock", "Edit", "Write", "tab\there"];
const T0 = Date.parse("2026-01-01T00:00:00Z");

const entry = (i: number): IndexEntry => ({
  id: i.toString(36).padStart(10, "0"),
  ts: T0 + i * 60_000,
  tool: TOOLS[i % TOOLS.length] ?? "Edit",
  linesChanged: i % 7,
  files:
    i % 5 === 0 ? [`src/m${i % 9}/a b.ts`, `docs/n${i % 4}.md`] : [`src/m${i % 9}/f${i % 40}.ts`],
});

/** Record files for [from, to), so pages show real records; a few are left out on purpose. */
function writeRecords(history: string, from: number, to: number): void {
  for (let i = from; i < to; i++) {
    if (i % 97 === 0) continue; // listed in the index, record missing
    const e = entry(i);
    const file = join(history, recordRelativePath(e.ts, e.id));
    mkdirSync(join(file, ".."), { recursive: true });
    writeFileSync(
      file,
      JSON.stringify({
        schema_version: 1,
        id: e.id,
        timestamp: new Date(e.ts).toISOString(),
        description: `edit ${i}`,
        tool: e.tool,
        affectedFiles: e.files,
        diff: "",
        reverseDiff: "",
        context: { workspacePath: "/x", toolParams: {} },
        metadata: {
          filesSizeBytes: 1,
          linesChanged: e.linesChanged,
          linesAdded: 0,
          linesRemoved: 0,
          executionTimeMs: 1,
        },
        files: [],
        directories: [],
      }),
    );
  }
}

const QUERIES: GetEditHistoryParams[] = [
  { limit: 100 },
  { limit: 7, toolFilter: ["Edit", "tab\there"] },
  { limit: 20, fileFilter: "src/m1/**", since: new Date(T0 + 500 * 60_000).toISOString() },
  { limit: 50, fileFilter: "**/*.md", until: new Date(T0 + 2500 * 60_000).toISOString() },
];

/** Every page of every query, cursor by cursor, as a fresh process would see them. */
function allPages(root: string): unknown[] {
  const out: unknown[] = [];
  for (const q of QUERIES) {
    let cursor: string | undefined;
    let pages = 0;
    forgetLoadedIndexes();
    do {
      const page = getEditHistory({ root }, { ...q, cursor });
      out.push(page);
      cursor = page.pagination.nextCursor;
    } while (cursor !== undefined && ++pages < 2);
  }
  return out;
}

describe("index.cache (derived columnar copy of index.tsv)", () => {
  const cleanups: (() => void)[] = [];
  afterEach(() => {
    for (const c of cleanups.splice(0)) c();
    forgetLoadedIndexes();
  });

  const setup = () => {
    const tmp = makeTempDir("tw-ledger-cache-");
    cleanups.push(tmp.cleanup);
    const root = join(tmp.dir, "ws");
    const history = join(root, ".timewarp", "history");
    mkdirSync(history, { recursive: true });
    const index = join(history, "index.tsv");
    const lines: string[] = [];
    for (let i = 0; i < N; i++) lines.push(formatIndexLine(entry(i)));
    writeFileSync(index, lines.join(""));
    writeRecords(history, 0, N);
    /** The same history without any cache, read from index.tsv alone. */
    const reference = () => {
      const copy = join(tmp.dir, `ref-${Math.random().toString(36).slice(2)}`);
      mkdirSync(join(copy, ".timewarp/history"), { recursive: true });
      cpSync(index, join(copy, ".timewarp/history/index.tsv"));
      symlinkSync(join(history, "snapshots"), join(copy, ".timewarp/history/snapshots"));
      forgetLoadedIndexes();
      const pages = allPages(copy);
      rmSync(copy, { recursive: true, force: true });
      return pages;
    };
    return { tmp, root, history, index, cache: indexCachePath(index), reference };
  };

  /** Load once as a fresh process and report how: from the cache, and how many bytes parsed. */
  const freshLoad = (root: string) => {
    forgetLoadedIndexes();
    getEditHistory({ root }, { limit: 1 });
    return { ...indexLoadStats };
  };

  it("is written by a full parse, then used: results identical to index.tsv alone", () => {
    const { root, cache, reference } = setup();
    expect(freshLoad(root)).toMatchObject({ fromCache: 0, cacheWrites: 1 });
    expect(statSync(cache).size).toBeGreaterThan(0);
    expect(freshLoad(root)).toEqual({ fromCache: 1, parsedBytes: 0, cacheWrites: 0 });
    const withCache = allPages(root);
    expect(indexLoadStats.fromCache).toBe(1);
    expect(withCache).toEqual(reference());
    // a real page: real records, a missing record, a tool name with a TAB, two-file operations
    const flat = JSON.stringify(withCache);
    expect(flat).toContain("(record missing)");
    expect(flat).toContain("tab\\there");
    expect(flat).toContain("a b.ts");
  });

  it("parses only the lines another process appended after the cache was written", () => {
    const { tmp, root, index, reference } = setup();
    freshLoad(root);
    const before = statSync(index).size;
    // another process appends (through the ledger's own append, which also cuts a torn line)
    writeFileSync(index, readFileSync(index, "utf8").concat("0000000zzz\t17"), { flag: "w" });
    const script = `
      import { appendIndexEntries } from ${JSON.stringify(pathToFileURL(join(REPO_ROOT, "src/ledger/history-index.ts")).href)};
      const [path, from, to] = process.argv.slice(2);
      const e = (i) => ({ id: i.toString(36).padStart(10, "0"), ts: ${T0} + i * 60000, tool: i % 2 ? "Edit" : "NewTool", linesChanged: 1, files: ["src/m1/new" + i + ".ts"] });
      appendIndexEntries(path, Array.from({ length: Number(to) - Number(from) }, (_, k) => e(Number(from) + k)));
    `;
    const file = join(tmp.dir, "append.mjs");
    writeFileSync(file, script);
    const child = spawnSync(
      process.execPath,
      [
        "--import",
        pathToFileURL(join(REPO_ROOT, "node_modules/tsx/dist/esm/index.mjs")).href,
        file,
        index,
        String(N),
        String(N + 25),
      ],
      { encoding: "utf8" },
    );
    expect(child.stderr).toBe("");
    expect(child.status).toBe(0);
    // no records for them: those pages are described from the index lines alone
    const stats = freshLoad(root);
    expect(stats.fromCache).toBe(1);
    expect(stats.parsedBytes).toBe(statSync(index).size - before);
    expect(allPages(root)).toEqual(reference());
    expect(JSON.stringify(allPages(root))).toContain("NewTool");
  });

  it("is ignored and rebuilt when truncated or corrupt", () => {
    const { root, index, cache, reference } = setup();
    freshLoad(root);
    const good = readFileSync(cache);
    const size = statSync(index).size;
    const damaged: Buffer[] = [
      good.subarray(0, good.length >> 1), // truncated
      good.subarray(0, 20), // truncated inside the header
      Buffer.alloc(0),
      Buffer.from("not a cache at all\n"),
    ];
    for (const at of [good.length - 5, good.length - 40_000, 60]) {
      const flipped = Buffer.from(good);
      flipped[at] = (flipped[at] ?? 0) ^ 0x55; // one byte: an id, a column, the header
      damaged.push(flipped);
    }
    const expected = reference();
    for (const bytes of damaged) {
      writeFileSync(cache, bytes);
      expect(freshLoad(root)).toEqual({ fromCache: 0, parsedBytes: size, cacheWrites: 1 });
      expect(freshLoad(root)).toMatchObject({ fromCache: 1, parsedBytes: 0 });
      writeFileSync(cache, bytes);
      expect(allPages(root)).toEqual(expected);
    }
    unlinkSync(cache);
    expect(freshLoad(root)).toMatchObject({ fromCache: 0, cacheWrites: 1 });
  });

  it("is ignored when index.tsv was rewritten (repair, retention) or changed in place", async () => {
    const { root, history, index, cache, reference } = setup();
    freshLoad(root);
    const stale = readFileSync(cache);
    // repair drops the lines whose record is gone: a new index.tsv (new inode), cache removed
    for (let i = 100; i < 110; i++) {
      const e = entry(i);
      rmSync(join(history, recordRelativePath(e.ts, e.id)), { force: true });
    }
    const repaired = await repairIndex({ root });
    expect(repaired.dropped.length).toBeGreaterThan(10);
    // a reader that loaded the old index writes its cache late: it must not be believed
    writeFileSync(cache, stale);
    const full = statSync(index).size;
    expect(freshLoad(root)).toMatchObject({ fromCache: 0, parsedBytes: full, cacheWrites: 1 });
    expect(allPages(root)).toEqual(reference());

    // same inode, different bytes of the same length (an editor, a restore): fingerprint differs
    freshLoad(root);
    const text = readFileSync(index, "utf8");
    const last = text.lastIndexOf("\t");
    writeFileSync(index, `${text.slice(0, last)}\tsrc/zz${text.slice(last + 7)}`);
    expect(statSync(index).size).toBe(full);
    expect(freshLoad(root)).toMatchObject({ fromCache: 0, parsedBytes: full });
    expect(allPages(root)).toEqual(reference());

    // same inode, shorter than what the cache covers
    freshLoad(root);
    truncateSync(index, full >> 1);
    const cut = readFileSync(index).lastIndexOf(0x0a) + 1;
    expect(freshLoad(root)).toMatchObject({ fromCache: 0, parsedBytes: cut });
    expect(allPages(root)).toEqual(reference());
  });
});
