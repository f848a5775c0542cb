import { mkdirSync, readdirSync } from "node:fs";
import { join } from "node:path";
import {
  ErrorCode,
  errnoCode,
  isTempName,
  isTimewarpError,
  readJsonFile,
  TimewarpError,
  writeJsonAtomic,
} from "../core/index.ts";
import type { LedgerPaths } from "./ledger-paths.ts";
import { MILESTONE_ID_PATTERN, type Milestone, MilestoneSchema } from "./schema.ts";

/** Every milestone on disk, in number order. */
export function listMilestones(paths: LedgerPaths): Milestone[] {
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
    .map((n) => readJsonFile(join(paths.milestones, n), MilestoneSchema));
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
