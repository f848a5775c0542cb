import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import {
  createProgressTick,
  ErrorCode,
  isTempName,
  isTimewarpError,
  type OnProgress,
  readJsonFile,
} from "../core/index.ts";
import { createObjectStore, type FsckProblem, type FsckResult } from "../store/index.ts";
import {
  checkIndexCache,
  emptyIndex,
  indexCachePath,
  indexEntryAt,
  parseIndexText,
} from "./history-index.ts";
import { ledgerPaths, recordRelativePath } from "./ledger-paths.ts";
import { walkRecordFiles } from "./operation-store.ts";
import { MilestoneSchema, OperationRecordSchema } from "./schema.ts";

/** `fsck`'s result with the ledger's part: operation records checked. */
export interface LedgerFsckResult extends FsckResult {
  operations: number;
}

/**
 * The store's check (`fsck`) completed with the ledger's: every line of `history/index.tsv`
 * parses and agrees with its record (id, time, tool, lines changed, files), every record and
 * milestone reads, every pre/post image a record names is in the store, and `index.cache`,
 * when it describes this index, holds exactly what parsing it gives. A record with no index
 * line (a crash between the two writes) is only noted, as temp files are: `timewarp history
 * repair` adopts it. Reads only.
 */
export function fsckLedger(
  root: string,
  base: FsckResult,
  options: {
    /** Phases `check index` (lines of all), `check operations` (records so far), `check milestones`. */
    onProgress?: OnProgress;
  } = {},
): LedgerFsckResult {
  const paths = ledgerPaths(root);
  const store = createObjectStore(paths.objects);
  const problems: FsckProblem[] = [...base.problems];
  const push = (p: Omit<FsckProblem, "detail"> & { detail: string }) => problems.push(p);
  const errorOf = (kind: FsckProblem["kind"], subject: string, file: string, error: unknown) =>
    push({
      kind,
      subject,
      path: file,
      code: isTimewarpError(error) ? error.code : ErrorCode.IO_ERROR,
      detail: error instanceof Error ? error.message : String(error),
    });

  // The index, line by line: the readers skip a line that does not parse, so fsck names it.
  const listed = new Set<string>();
  let text = "";
  try {
    text = existsSync(paths.index) ? readFileSync(paths.index, "utf8") : "";
  } catch (error) {
    errorOf("corrupt_index", paths.index, paths.index, error);
  }
  const lines = text.split("\n");
  lines.pop(); // after the last LF: empty, or a torn line readers never parse
  const tick = createProgressTick(options.onProgress, {
    phase: "check index",
    total: lines.length,
  });
  for (let n = 0; n < lines.length; n++) {
    tick();
    const one = emptyIndex(1);
    parseIndexText(`${lines[n]}\n`, one);
    const corrupt = (detail: string) =>
      push({
        kind: "corrupt_index",
        subject: paths.index,
        path: paths.index,
        code: ErrorCode.CORRUPT_FILE,
        detail: `${paths.index} line ${n + 1}: ${detail}`,
      });
    if (one.count !== 1) {
      corrupt("not an index line (id, time, tool, lines changed, paths)");
      continue;
    }
    const line = indexEntryAt(one, 0);
    listed.add(line.id);
    const file = join(paths.history, recordRelativePath(line.ts, line.id));
    if (!existsSync(file)) {
      corrupt(`operation ${line.id} has no record (looked for ${file})`);
      continue;
    }
    let record: ReturnType<typeof readOperationFile>;
    try {
      record = readOperationFile(file);
    } catch {
      continue; // reported with the records below
    }
    const fromRecord = {
      id: record.id,
      ts: Date.parse(record.timestamp),
      tool: record.tool,
      linesChanged: record.metadata.linesChanged,
      files: record.affectedFiles,
    };
    if (JSON.stringify(fromRecord) !== JSON.stringify(line)) {
      corrupt(`operation ${line.id} does not agree with its record ${file}`);
    }
  }
  const cacheProblem = checkIndexCache(paths.index);
  if (cacheProblem !== null) {
    const file = indexCachePath(paths.index);
    push({
      kind: "corrupt_cache",
      subject: file,
      path: file,
      code: ErrorCode.CORRUPT_FILE,
      detail: `${file}: ${cacheProblem}`,
    });
  }

  let operations = 0;
  let caches = base.caches;
  if (existsSync(indexCachePath(paths.index))) caches++;
  options.onProgress?.({ phase: "check operations", done: 0 });
  for (const file of walkRecordFiles(paths)) {
    operations++;
    if (operations % 256 === 0)
      options.onProgress?.({ phase: "check operations", done: operations });
    let record: ReturnType<typeof readOperationFile>;
    try {
      record = readOperationFile(file);
    } catch (error) {
      errorOf("bad_record", file, file, error);
      continue;
    }
    if (!listed.has(record.id)) {
      push({
        kind: "unindexed_record",
        subject: record.id,
        path: file,
        code: ErrorCode.CORRUPT_FILE,
        detail: `operation ${record.id} has no line in ${paths.index} (\`timewarp history repair\` adopts it)`,
      });
    }
    for (const f of record.files) {
      for (const image of [f.before, f.after]) {
        if (image !== null && !store.has(image.oid)) {
          push({
            kind: "missing_object",
            subject: image.oid,
            path: file,
            code: ErrorCode.OBJECT_NOT_FOUND,
            detail: `operation ${record.id}: ${f.newPath ?? f.oldPath ?? "?"}`,
          });
        }
      }
    }
  }
  options.onProgress?.({ phase: "check milestones" });
  let names: string[] = [];
  try {
    names = readdirSync(paths.milestones);
  } catch {
    // no milestones yet
  }
  for (const name of names.filter((n) => n.endsWith(".json") && !isTempName(n))) {
    const file = join(paths.milestones, name);
    try {
      readJsonFile(file, MilestoneSchema);
    } catch (error) {
      errorOf("bad_record", name.replace(/\.json$/, ""), file, error);
    }
  }
  return {
    ...base,
    ok: problems.every((p) => p.kind === "temp_file" || p.kind === "unindexed_record"),
    caches,
    operations,
    problems,
  };
}

function readOperationFile(file: string) {
  return readJsonFile(file, OperationRecordSchema);
}
