/**
 * Histogram diff over interned line ids, after git's xdiff (`--histogram`, from JGit): in each
 * region, index the old side's lines by id with their count in the region; walk the new side and
 * take as anchor the longest run of equal lines around the lowest-count common line; mark the
 * regions before and after it the same way. A region whose common lines all occur more than
 * `MAX_CHAIN` times on the old side goes to the fallback (git's classic Myers); a region with no
 * common line is changed whole. This is what keeps frequent lines (` *`, `}`, blank) from
 * driving the cost, and what makes hunks land where git puts them.
 */

import { spend, type WorkBudget } from "./work-budget.ts";

/** git's cutoff: a line seen more often than this in a region cannot anchor it. */
export const MAX_CHAIN = 64;

/** Old lines [a0, a1) against new lines [b0, b1). */
export interface Region {
  a0: number;
  a1: number;
  b0: number;
  b1: number;
}

export interface HistogramInput {
  idA: Int32Array;
  idB: Int32Array;
  /** Number of distinct ids. */
  ids: number;
  /** Out: 1 where an old line is removed. */
  changedA: Uint8Array;
  /** Out: 1 where a new line is added. */
  changedB: Uint8Array;
  /** Diff a region the histogram cannot anchor, marking `changedA`/`changedB`. */
  fallback: (r: Region) => void;
  /** The whole line diff's work budget: each region's lines are spent from it. */
  budget: WorkBudget;
}

interface Scratch {
  head: Int32Array;
  cnt: Int32Array;
  next: Int32Array;
}

interface Anchor {
  as: number;
  ae: number;
  bs: number;
  be: number;
}

/**
 * The histogram's work (lines indexed and scanned, summed over regions) allowed per input line
 * before the remaining regions go to the fallback. git has no such bound: when every anchor is
 * one line at a region's start (every other line changed), each region rescans the rest and git
 * takes seconds (4.9 s on lib.dom.d.ts). Realistic edits stay far below it, so their hunks are
 * git's. It was 16: the scans it allowed there were wasted (the fallback then diffs nearly the
 * whole file), and 4 gives the same patches on every case of `bench:diff` and the tests.
 */
const WORK_PER_LINE = 4;
const WORK_FLOOR = 50_000;

/** Mark every changed line of `a` against `b`. */
export function histogramDiff(input: HistogramInput): void {
  let budget = WORK_FLOOR + WORK_PER_LINE * (input.idA.length + input.idB.length);
  const scratch: Scratch = {
    head: new Int32Array(input.ids).fill(-1),
    cnt: new Int32Array(input.ids),
    next: new Int32Array(input.idA.length),
  };
  // An explicit stack: the regions before each anchor can nest as deep as the file is long.
  const stack: Region[] = [{ a0: 0, a1: input.idA.length, b0: 0, b1: input.idB.length }];
  for (let r = stack.pop(); r !== undefined; r = stack.pop()) {
    spend(input.budget, 1);
    if (r.a0 >= r.a1 || r.b0 >= r.b1) {
      input.changedA.fill(1, r.a0, Math.max(r.a0, r.a1));
      input.changedB.fill(1, r.b0, Math.max(r.b0, r.b1));
      continue;
    }
    budget -= r.a1 - r.a0 + (r.b1 - r.b0);
    if (budget >= 0) spend(input.budget, r.a1 - r.a0 + (r.b1 - r.b0));
    const found = budget < 0 ? "fallback" : findAnchor(input, scratch, r);
    if (found === "fallback") input.fallback(r);
    else if (found === null) {
      input.changedA.fill(1, r.a0, r.a1);
      input.changedB.fill(1, r.b0, r.b1);
    } else {
      stack.push({ a0: found.ae + 1, a1: r.a1, b0: found.be + 1, b1: r.b1 });
      stack.push({ a0: r.a0, a1: found.as, b0: r.b0, b1: found.bs });
    }
  }
}

/**
 * The anchor of one region (inclusive bounds), null when no line is common, "fallback" when
 * every common line is too frequent.
 */
function findAnchor(input: HistogramInput, s: Scratch, r: Region): Anchor | null | "fallback" {
  const { idA, idB } = input;
  const { head, cnt, next } = s;
  // Chains run in increasing line order: built from the end, each line pushed on the front.
  for (let i = r.a1 - 1; i >= r.a0; i--) {
    const id = idA[i]!;
    next[i] = head[id]!;
    head[id] = i;
    cnt[id] = cnt[id]! + 1;
  }
  const best: Anchor = { as: 0, ae: -1, bs: 0, be: -1 };
  let bestCnt = MAX_CHAIN + 1;
  let found = false;
  let hasCommon = false;
  let b = r.b0;
  while (b < r.b1) {
    let bNext = b + 1;
    const id = idB[b]!;
    const c = cnt[id]!;
    if (c > bestCnt) hasCommon = true;
    else if (c > 0) {
      hasCommon = true;
      for (let as = head[id]!; as !== -1; ) {
        const m = extend(idA, idB, cnt, r, as, b);
        if (m.be + 1 > bNext) bNext = m.be + 1;
        if (best.ae - best.as < m.ae - m.as || m.rc < bestCnt) {
          best.as = m.as;
          best.ae = m.ae;
          best.bs = m.bs;
          best.be = m.be;
          bestCnt = m.rc;
          found = true;
        }
        // The next occurrence past this match: the ones inside it would find the same run.
        let np = next[as]!;
        while (np !== -1 && np <= m.ae) np = next[np]!;
        as = np;
      }
    }
    b = bNext;
  }
  for (let i = r.a0; i < r.a1; i++) {
    const id = idA[i]!;
    head[id] = -1;
    cnt[id] = 0;
  }
  if (hasCommon && bestCnt > MAX_CHAIN) return "fallback";
  return found ? best : null;
}

/** The run of equal lines through old line `as0` = new line `bs0`, with its lowest count. */
function extend(
  idA: Int32Array,
  idB: Int32Array,
  cnt: Int32Array,
  r: Region,
  as0: number,
  bs0: number,
): Anchor & { rc: number } {
  let as = as0;
  let bs = bs0;
  let ae = as0;
  let be = bs0;
  let rc = cnt[idA[as0]!]!;
  while (as > r.a0 && bs > r.b0 && idA[as - 1] === idB[bs - 1]) {
    as--;
    bs--;
    if (rc > 1) rc = Math.min(rc, cnt[idA[as]!]!);
  }
  while (ae + 1 < r.a1 && be + 1 < r.b1 && idA[ae + 1] === idB[be + 1]) {
    ae++;
    be++;
    if (rc > 1) rc = Math.min(rc, cnt[idA[ae]!]!);
  }
  return { as, ae, bs, be, rc };
}
