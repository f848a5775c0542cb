import { mkdirSync, readdirSync } from "node:fs";
import { basename, join } from "node:path";
import {
  ErrorCode,
  errnoCode,
  isTempName,
  isTimewarpError,
  readEachFlagged,
  readJsonFile,
  TimewarpError,
  writeJsonAtomic,
} from "../core/index.ts";
import type { LedgerPaths } from "./ledger-paths.ts";
import { MILESTONE_ID_PATTERN, type Milestone, MilestoneSchema } from "./schema.ts";

/**
 * Every milestone on disk, in number order. A milestone file that does not read throws
 * CORRUPT_FILE naming it: retention and proposals must not work from a partial list (an
 * operation the damaged one protects would look free). A listing uses `listMilestonesChecked`.
 */
export function listMilestones(paths: LedgerPaths): Milestone[] {
  return milestoneFiles(paths).map((f) => readJsonFile(f, MilestoneSchema));
}

/** A milestone file that cannot be read, as a listing flags it. */
export interface CorruptMilestone {
  /** `milestone_NNN`, from the file's name. */
  id: string;
  /** CORRUPT_FILE (truncated, not JSON, wrong shape), or the file system's code. */
  code: ErrorCode;
  message: string;
  /** The milestone file at fault. */
  file: string;
}

/**
 * Every milestone that reads, in number order, and the files that do not (`corrupt`): one
 * damaged milestone must not hide the others from a listing (issue 16).
 */
export function listMilestonesChecked(paths: LedgerPaths): {
  milestones: Milestone[];
  corrupt: CorruptMilestone[];
} {
  const { read, failed } = readEachFlagged(milestoneFiles(paths), (file) =>
    readJsonFile(file, MilestoneSchema),
  );
  const corrupt = failed.map(({ key: file, error }) => ({
    id: basename(file, ".json"),
    code: error.code,
    message: error.message,
    file,
  }));
  return { milestones: read, corrupt };
}

/** The paths of the milestone files, in number order (temp files left out). */
function milestoneFiles(paths: LedgerPaths): string[] {
  let names: string[];
  try {
    names = readdirSync(paths.milestones);
  } catch (error) {
    if (errnoCode(error) === "ENOENT") return [];
    throw error;
  }
  return names
    .filter(
      (n) =>
        !isTempName(n) &&
        MILESTONE_ID_PATTERN.test(n.replace(/\.json$/, "")) &&
        n.endsWith(".json"),
    )
    .sort((a, b) => milestoneNumber(a) - milestoneNumber(b))
    .map((n) => join(paths.milestones, n));
}

function milestoneNumber(name: string): number {
  return Number(/(\d+)/.exec(name)?.[1] ?? 0);
}

export function readMilestone(paths: LedgerPaths, id: string): Milestone {
  if (!MILESTONE_ID_PATTERN.test(id)) {
    throw new TimewarpError(
      ErrorCode.MILESTONE_NOT_FOUND,
      `${JSON.stringify(id)} is not a milestone id (milestone_NNN)`,
    );
  }
  try {
    return readJsonFile(join(paths.milestones, `${id}.json`), MilestoneSchema);
  } catch (error) {
    if (isTimewarpError(error, "NOT_FOUND")) {
      const have = listMilestones(paths).map((m) => m.id);
      throw new TimewarpError(
        ErrorCode.MILESTONE_NOT_FOUND,
        `milestone ${id} not found in ${paths.milestones} (have ${have.length}${have.length > 0 ? `: ${have.slice(-5).join(", ")}` : ""})`,
        { data: { id, available: have } },
      );
    }
    throw error;
  }
}

/** The next free `milestone_NNN` id; the caller holds the ledger lock. */
export function nextMilestoneId(paths: LedgerPaths): string {
  let max = 0;
  try {
    for (const n of readdirSync(paths.milestones))
      if (!isTempName(n)) max = Math.max(max, milestoneNumber(n));
  } catch (error) {
    if (errnoCode(error) !== "ENOENT") throw error;
  }
  return `milestone_${String(max + 1).padStart(3, "0")}`;
}

export function writeMilestone(paths: LedgerPaths, milestone: Milestone): void {
  mkdirSync(paths.milestones, { recursive: true });
  writeJsonAtomic(join(paths.milestones, `${milestone.id}.json`), milestone);
}
