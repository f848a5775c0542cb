import { compactChanges } from "./compact.ts";
import { histogramDiff } from "./histogram.ts";
import type { Lines } from "./intern-lines.ts";
import { createMyersScratch, myersDiff } from "./myers.ts";
import { OVER_BUDGET, type WorkBudget } from "./work-budget.ts";

/**
 * `histogram` (the default, git's `--histogram`) or `myers` (git's default algorithm, which
 * the histogram falls back to): the second lets tests hold the Myers core to git's output.
 */
export type LineAlgorithm = "histogram" | "myers";

/** A changed region: old lines [aStart, aEnd) became new lines [bStart, bEnd). */
export interface ChangeBlock {
  aStart: number;
  aEnd: number;
  bStart: number;
  bEnd: number;
}

/** The change blocks read off the two change maps, unchanged lines pairing up in order. */
function blocksOf(changedA: Uint8Array, changedB: Uint8Array): ChangeBlock[] {
  const blocks: ChangeBlock[] = [];
  const na = changedA.length;
  const nb = changedB.length;
  let i = 0;
  let j = 0;
  while (i < na || j < nb) {
    if (i < na && j < nb && !changedA[i] && !changedB[j]) {
      i++;
      j++;
      continue;
    }
    const aStart = i;
    const bStart = j;
    while (i < na && changedA[i]) i++;
    while (j < nb && changedB[j]) j++;
    blocks.push({ aStart, aEnd: i, bStart, bEnd: j });
  }
  return blocks;
}

/**
 * The work a line diff may do by default: a floor, plus an allowance per line of both sides.
 * xdiff's cost cutoffs keep real code well below it: typescript.js (201k lines) with every
 * other line changed spends 71M of its 412M, and with every other line replaced by one from
 * elsewhere in the file 184M. Inputs built to defeat the cutoffs (300k lines of 40 values in
 * two unrelated orders need 1.25G) stop at it, after a few seconds of CPU.
 */
export const WORK_FLOOR = 10_000_000;
export const WORK_PER_LINE = 1_000;

export function defaultWorkBudget(lines: number): number {
  return WORK_FLOOR + WORK_PER_LINE * lines;
}

/**
 * The changed regions between two line lists, as git's `--histogram` finds them: over the
 * lines' interned ids (`intern-lines.ts`; `ids` of them), anchored on the rarest common lines (`histogram.ts`), and regions with
 * only frequent common lines go to git's classic Myers (`myers.ts`). Past `maxWork` steps
 * (`work-budget.ts`; default `defaultWorkBudget`) the whole input is one block: a count, never
 * time, so the same input always gives the same blocks.
 */
export function diffLines(
  a: Lines,
  b: Lines,
  ids: number,
  opts: { maxWork?: number; algorithm?: LineAlgorithm },
): { blocks: ChangeBlock[]; overBudget: boolean } {
  const idA = a.ids;
  const idB = b.ids;
  const changedA = new Uint8Array(a.count);
  const changedB = new Uint8Array(b.count);
  const budget: WorkBudget = { left: opts.maxWork ?? defaultWorkBudget(a.count + b.count) };
  const ctx = { idA, idB, changedA, changedB };
  const scratch = createMyersScratch(ids);
  try {
    if (opts.algorithm === "myers") {
      myersDiff(ctx, scratch, { a0: 0, a1: a.count, b0: 0, b1: b.count }, budget);
    } else
      histogramDiff({
        ...ctx,
        ids,
        budget,
        fallback: (r) => myersDiff(ctx, scratch, r, budget),
      });
  } catch (error) {
    if (error !== OVER_BUDGET) throw error;
    const whole =
      a.count === 0 && b.count === 0
        ? []
        : [{ aStart: 0, aEnd: a.count, bStart: 0, bEnd: b.count }];
    return { blocks: whole, overBudget: true };
  }
  const sideA = { ids: idA, changed: changedA, lines: a };
  const sideB = { ids: idB, changed: changedB, lines: b };
  compactChanges(sideA, sideB);
  compactChanges(sideB, sideA);
  return { blocks: blocksOf(changedA, changedB), overBudget: false };
}
