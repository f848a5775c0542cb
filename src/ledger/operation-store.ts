import {
  closeSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { dirname, join } from "node:path";
import {
  ErrorCode,
  errnoCode,
  fromSystemError,
  isTempName,
  isTimewarpError,
  readJsonFile,
  TimewarpError,
  tempPathFor,
} from "../core/index.ts";
import { firstPositionOf, loadIndex } from "./history-index.ts";
import { type LedgerPaths, recordRelativePath } from "./ledger-paths.ts";
import { OPERATION_ID_PATTERN, type OperationRecord, OperationRecordSchema } from "./schema.ts";

/**
 * Write one record atomically at its dated path (the caller appends the index line after). Its
 * bytes are fsynced before the rename, so nothing can ever point at a record whose content is
 * not on disk; its directory is not fsynced: the index append that follows is, and on a
 * journaled file system (ext4, xfs) that commits the rename with it. Elsewhere a power cut can
 * at worst lose the rename, which readers already handle (an index line without its record).
 */
export function writeOperationRecord(paths: LedgerPaths, record: OperationRecord): string {
  const file = recordFileOf(paths, record);
  mkdirSync(dirname(file), { recursive: true });
  const temp = tempPathFor(file);
  let fd: number | undefined;
  try {
    fd = openSync(temp, "wx", 0o644);
    writeFileSync(fd, `${JSON.stringify(record, null, 2)}\n`);
    fsyncSync(fd);
    closeSync(fd);
    fd = undefined;
    renameSync(temp, file);
  } catch (error) {
    if (fd !== undefined) closeSync(fd);
    rmSync(temp, { force: true });
    throw fromSystemError(error, `writing ${file}`);
  }
  return file;
}

/** Where a record lives (whether or not it is written yet). */
export function recordFileOf(paths: LedgerPaths, record: OperationRecord): string {
  return join(paths.history, recordRelativePath(Date.parse(record.timestamp), record.id));
}

/**
 * The file of operation `id`: through the index (one stat and a map lookup), else by walking the
 * dated folders, so a record whose index line was lost to a crash is still found by id.
 */
export function findOperationFile(paths: LedgerPaths, id: string): string | null {
  if (!OPERATION_ID_PATTERN.test(id)) return null;
  const index = loadIndex(paths.index);
  const at = firstPositionOf(index, id);
  if (at !== undefined) {
    const file = join(paths.history, recordRelativePath(index.ts[at] ?? 0, id));
    if (existsSync(file)) return file;
  }
  const suffix = `_${id}.json`;
  for (const file of walkRecordFiles(paths)) if (file.endsWith(suffix)) return file;
  return null;
}

/** Read operation `id`; OPERATION_NOT_FOUND naming how many exist when it is absent. */
export function readOperation(paths: LedgerPaths, id: string): OperationRecord {
  const file = findOperationFile(paths, id);
  if (file === null) {
    const total = loadIndex(paths.index).count;
    throw new TimewarpError(
      ErrorCode.OPERATION_NOT_FOUND,
      `operation ${JSON.stringify(id)} not found in ${paths.history} (the history has ${total} operations; see \`timewarp history\`)`,
      { data: { id } },
    );
  }
  try {
    return readJsonFile(file, OperationRecordSchema);
  } catch (error) {
    if (isTimewarpError(error, "NOT_FOUND")) {
      throw new TimewarpError(ErrorCode.OPERATION_NOT_FOUND, `operation ${id}: record vanished`, {
        data: { id },
      });
    }
    throw error;
  }
}

/** Every record file under `history/snapshots/` (temp files skipped), oldest folder first. */
export function walkRecordFiles(paths: LedgerPaths): string[] {
  const out: string[] = [];
  const walk = (dir: string, depth: number) => {
    let names: string[];
    try {
      names = readdirSync(dir).sort();
    } catch (error) {
      if (errnoCode(error) === "ENOENT") return;
      throw error;
    }
    for (const name of names) {
      if (isTempName(name)) continue;
      const p = join(dir, name);
      if (depth < 3) walk(p, depth + 1);
      else if (name.endsWith(".json")) out.push(p);
    }
  };
  walk(paths.snapshots, 0);
  return out;
}
