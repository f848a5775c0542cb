import { compactChanges } from "./compact.ts";
import { histogramDiff } from "./histogram.ts";
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

/** The lines of `buf[start, end)`: line k is `buf[starts[k], starts[k + 1])`, terminator included. */
export interface Lines {
  buf: Buffer;
  starts: number[];
  hashes: number[];
  count: number;
}

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;

/** Split into lines (native newline search) and hash each (FNV-1a); no strings are made. */
export function scanLines(buf: Buffer, start: number, end: number): Lines {
  const starts: number[] = [];
  const hashes: number[] = [];
  let ls = start;
  while (ls < end) {
    const nl = buf.indexOf(10, ls);
    const e = nl === -1 || nl >= end ? end : nl + 1;
    let h = FNV_OFFSET;
    for (let i = ls; i < e; i++) h = Math.imul(h ^ buf[i]!, FNV_PRIME);
    starts.push(ls);
    hashes.push(h);
    ls = e;
  }
  const count = starts.length;
  starts.push(end);
  return { buf, starts, hashes, count };
}

function sameBytes(a: Buffer, as: number, ae: number, b: Buffer, bs: number, be: number): boolean {
  if (ae - as !== be - bs) return false;
  for (let i = 0; i < ae - as; i++) if (a[as + i]! !== b[bs + i]!) return false;
  return true;
}

/**
 * Give equal lines equal integer ids, in an open-addressing table keyed by the line hash. The
 * hash finds candidates; the bytes decide, so colliding lines simply probe on to their own slot.
 */
function intern(a: Lines, b: Lines): { idA: Int32Array; idB: Int32Array; ids: number } {
  let cap = 16;
  while (cap < 2 * (a.count + b.count)) cap *= 2;
  const mask = cap - 1;
  const keys = new Int32Array(cap);
  const vals = new Int32Array(cap); // id + 1; 0 is empty
  const repSide: Lines[] = [];
  const repLine: number[] = [];
  const idOf = (side: Lines, k: number): number => {
    const h = side.hashes[k]!;
    const s = side.starts[k]!;
    const e = side.starts[k + 1]!;
    let slot = (h ^ (h >>> 16)) & mask;
    for (;;) {
      const v = vals[slot]!;
      if (v === 0) {
        const id = repLine.length;
        keys[slot] = h;
        vals[slot] = id + 1;
        repSide.push(side);
        repLine.push(k);
        return id;
      }
      if (keys[slot] === h) {
        const rs = repSide[v - 1]!;
        const rk = repLine[v - 1]!;
        if (sameBytes(rs.buf, rs.starts[rk]!, rs.starts[rk + 1]!, side.buf, s, e)) return v - 1;
      }
      slot = (slot + 1) & mask;
    }
  };
  const idA = new Int32Array(a.count);
  for (let k = 0; k < a.count; k++) idA[k] = idOf(a, k);
  const idB = new Int32Array(b.count);
  for (let k = 0; k < b.count; k++) idB[k] = idOf(b, k);
  return { idA, idB, ids: repLine.length };
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
 * The changed regions between two line lists, as git's `--histogram` finds them: lines are
 * interned to integers, anchored on the rarest common lines (`histogram.ts`), and regions with
 * only frequent common lines go to git's classic Myers (`myers.ts`). Past `maxWork` steps
 * (`work-budget.ts`; default `defaultWorkBudget`) the whole input is one block: a count, never
 * time, so the same input always gives the same blocks.
 */
export function diffLines(
  a: Lines,
  b: Lines,
  opts: { maxWork?: number; algorithm?: LineAlgorithm },
): { blocks: ChangeBlock[]; overBudget: boolean } {
  const { idA, idB, ids } = intern(a, b);
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
