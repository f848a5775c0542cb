import { existsSync, mkdirSync, readFileSync, truncateSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { makeTempDir } from "../../test/helpers/cli.ts";
import { readEvents, workspacePaths } from "../core/index.ts";
import { createObjectStore, fsck } from "../store/index.ts";
import { applyWholeFileEdit } from "./edit-tools.ts";
import { fsckLedger } from "./fsck-ledger.ts";
import {
  forgetLoadedIndexes,
  formatIndexLine,
  indexCachePath,
  indexLoadStats,
  loadIndex,
} from "./history-index.ts";
import { ledgerPaths } from "./ledger-paths.ts";
import { walkRecordFiles } from "./operation-store.ts";

describe("fsck of the ledger: index lines, records, images, index.cache (issue 16, class 6)", () => {
  const cleanups: (() => void)[] = [];
  afterEach(() => {
    for (const c of cleanups.splice(0)) c();
    forgetLoadedIndexes();
  });
  const tmp = () => {
    const t = makeTempDir();
    cleanups.push(t.cleanup);
    return t.dir;
  };
  const check = (root: string) => fsckLedger(root, fsck(root));

  it("finds an index line that disagrees with its record, a bad record, a missing image", async () => {
    const root = tmp();
    writeFileSync(join(root, "a.txt"), "one\n");
    await applyWholeFileEdit({ root }, { path: "a.txt", content: "two\n" });
    await applyWholeFileEdit({ root }, { path: "a.txt", content: "three\n" });
    expect(check(root)).toMatchObject({ ok: true, operations: 2, problems: [] });
    const paths = ledgerPaths(root);
    // an index line edited to name another file
    const text = readFileSync(paths.index, "utf8");
    writeFileSync(paths.index, text.replace("a.txt", "b.txt"));
    const [first, second] = walkRecordFiles(paths);
    let report = check(root);
    expect(report.ok).toBe(false);
    expect(report.problems).toEqual([
      expect.objectContaining({
        kind: "corrupt_index",
        path: paths.index,
        code: "CORRUPT_FILE",
        detail: expect.stringContaining("line 1"),
      }),
    ]);
    writeFileSync(paths.index, text);
    // a truncated record, and an image lost from the store
    truncateSync(second ?? "", 40);
    const record = JSON.parse(readFileSync(first ?? "", "utf8"));
    createObjectStore(paths.objects).remove(record.files[0].before.oid);
    report = check(root);
    expect(report.problems).toContainEqual(
      expect.objectContaining({ kind: "bad_record", path: second, code: "CORRUPT_FILE" }),
    );
    expect(report.problems).toContainEqual(
      expect.objectContaining({
        kind: "missing_object",
        path: first,
        code: "OBJECT_NOT_FOUND",
        subject: record.files[0].before.oid,
      }),
    );
    // a milestone file cut short
    mkdirSync(paths.milestones, { recursive: true });
    writeFileSync(join(paths.milestones, "milestone_001.json"), '{"schema_version":1,"id"');
    expect(check(root).problems).toContainEqual(
      expect.objectContaining({
        kind: "bad_record",
        subject: "milestone_001",
        code: "CORRUPT_FILE",
      }),
    );
  });

  it("a damaged index.cache is reported by fsck and discarded by the next load, with an event", () => {
    const root = tmp();
    const paths = ledgerPaths(root);
    mkdirSync(paths.history, { recursive: true });
    const t0 = Date.parse("2026-01-01T00:00:00Z");
    const lines: string[] = [];
    for (let i = 0; i < 2100; i++) {
      const id = i.toString(36).padStart(10, "0");
      lines.push(formatIndexLine({ id, ts: t0 + i, tool: "Edit", linesChanged: 1, files: ["a"] }));
    }
    writeFileSync(paths.index, lines.join(""));
    loadIndex(paths.index); // writes index.cache
    const cache = indexCachePath(paths.index);
    expect(existsSync(cache)).toBe(true);
    expect(check(root).problems.filter((p) => p.kind === "corrupt_cache")).toEqual([]);
    const buf = readFileSync(cache);
    buf[buf.length - 5] = (buf[buf.length - 5] ?? 0) ^ 1; // a bit of an id column
    writeFileSync(cache, buf);
    expect(check(root).problems).toContainEqual(
      expect.objectContaining({ kind: "corrupt_cache", path: cache, code: "CORRUPT_FILE" }),
    );
    forgetLoadedIndexes();
    expect(loadIndex(paths.index).count).toBe(2100);
    expect(indexLoadStats.fromCache).toBe(0);
    const events = readEvents(workspacePaths(root).events).events;
    expect(events.filter((e) => e.type === "cache.discarded")).toEqual([
      expect.objectContaining({ data: expect.objectContaining({ file: cache }) }),
    ]);
  });
});
