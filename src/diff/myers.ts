/**
 * git's classic diff (xdiff's Myers, `git diff` without `--histogram`), written from the
 * algorithm's description in Myers' paper and xdiff's documented behaviour, over interned line
 * ids in integer arrays. It serves the regions the histogram cannot anchor (every common line
 * occurs more than 64 times) and the histogram's work budget once spent.
 *
 * Before the search, as xdiff prepares a file pair: the equal lines at both ends are set aside;
 * a line with no equal on the other side is marked changed and left out; a line that is very
 * frequent on the other side (at least ~sqrt(n) times) is left out too when it sits in a run of
 * such lines that is mostly unmatched. What remains is compared by divide and conquer on the
 * middle snake in linear space, with xdiff's two ways out of an expensive search: past an edit
 * cost of 256 a diagonal far along with a 20-line snake behind it is taken as the split, and
 * past ~sqrt(n) (at least 256) the furthest-reaching diagonal is. The result is then no longer a
 * shortest script, but it is what git writes, at a cost that stays near linear.
 */

import type { Region } from "./histogram.ts";
import { spend, type WorkBudget } from "./work-budget.ts";

/** The edit cost from which a good snake may end the search early, and the least cost cap. */
const HEUR_MIN_COST = 256;
const MAX_COST_MIN = 256;
/** Lines of equal run that make a snake "good". */
const SNAKE_CNT = 20;
/** How far along (against the edit cost) a diagonal must be to be taken early. */
const K_HEUR = 4;
/** Frequent lines are dropped where fewer than 1 in this many of their run have a match. */
const KPDIS_RUN = 4;
const MAX_EQLIMIT = 1024;
/** How far the run of frequent lines is looked at, each way. */
const SIMSCAN_WINDOW = 100;
const LINE_MAX = 0x7fffffff;

const DISCARD = 0;
const KEEP = 1;
const INVESTIGATE = 2;

/** The change maps the Myers pass writes and the ids it reads. */
export interface MyersInput {
  idA: Int32Array;
  idB: Int32Array;
  /** Out: 1 where an old line is removed. */
  changedA: Uint8Array;
  /** Out: 1 where a new line is added. */
  changedB: Uint8Array;
}

/** Per-id counters, all zero between calls (each call clears what it set). */
export interface MyersScratch {
  countA: Int32Array;
  countB: Int32Array;
}

export function createMyersScratch(ids: number): MyersScratch {
  return { countA: new Int32Array(ids), countB: new Int32Array(ids) };
}

/** xdiff's rough square root: a power of two near sqrt(n), cheap and stable. */
export function bogoSqrt(n: number): number {
  let i = 1;
  for (let m = n; m > 0; m = Math.floor(m / 4)) i *= 2;
  return i;
}

/**
 * Mark the changed lines of region `r` as git's classic diff does, spending `budget`.
 */
export function myersDiff(
  input: MyersInput,
  scratch: MyersScratch,
  r: Region,
  budget: WorkBudget,
): void {
  const { idA, idB } = input;
  // The equal lines at both ends are unchanged and take no part.
  let start = 0;
  const lim = Math.min(r.a1 - r.a0, r.b1 - r.b0);
  while (start < lim && idA[r.a0 + start] === idB[r.b0 + start]) start++;
  let tail = 0;
  while (tail < lim - start && idA[r.a1 - 1 - tail] === idB[r.b1 - 1 - tail]) tail++;
  const a0 = r.a0 + start;
  const a1 = r.a1 - tail;
  const b0 = r.b0 + start;
  const b1 = r.b1 - tail;
  if (a0 === a1 || b0 === b1) {
    input.changedA.fill(1, a0, a1);
    input.changedB.fill(1, b0, b1);
    return;
  }
  const { countA, countB } = scratch;
  for (let i = r.a0; i < r.a1; i++) countA[idA[i]!]!++;
  for (let i = r.b0; i < r.b1; i++) countB[idB[i]!]!++;
  const refA = keptLines(idA, a0, a1, countB, Math.min(bogoSqrt(r.a1 - r.a0), MAX_EQLIMIT));
  const refB = keptLines(idB, b0, b1, countA, Math.min(bogoSqrt(r.b1 - r.b0), MAX_EQLIMIT));
  for (let i = r.a0; i < r.a1; i++) countA[idA[i]!] = 0;
  for (let i = r.b0; i < r.b1; i++) countB[idB[i]!] = 0;
  markLeftOut(input.changedA, a0, a1, refA);
  markLeftOut(input.changedB, b0, b1, refB);
  const ha = new Int32Array(refA.length);
  for (let k = 0; k < refA.length; k++) ha[k] = idA[refA[k]!]!;
  const hb = new Int32Array(refB.length);
  for (let k = 0; k < refB.length; k++) hb[k] = idB[refB[k]!]!;
  spend(budget, r.a1 - r.a0 + (r.b1 - r.b0));
  const search = createSearch(ha, hb, budget);
  compareBoxes(
    search,
    (k) => {
      input.changedA[refA[k]!] = 1;
    },
    (k) => {
      input.changedB[refB[k]!] = 1;
    },
  );
}

/** Every line of [s, e) that is not in `kept` (ascending) is changed. */
function markLeftOut(changed: Uint8Array, s: number, e: number, kept: Int32Array): void {
  let k = 0;
  for (let i = s; i < e; i++) {
    if (k < kept.length && kept[k] === i) k++;
    else changed[i] = 1;
  }
}

/**
 * The lines of [s, e) that take part in the search: those with an equal on the other side,
 * less the frequent ones (`limit` or more equals) that sit among mostly unmatched lines.
 */
function keptLines(
  ids: Int32Array,
  s: number,
  e: number,
  otherCount: Int32Array,
  limit: number,
): Int32Array {
  const n = e - s;
  const action = new Uint8Array(n);
  for (let i = 0; i < n; i++) {
    const c = otherCount[ids[s + i]!]!;
    action[i] = c === 0 ? DISCARD : c < limit ? KEEP : INVESTIGATE;
  }
  const kept = new Int32Array(n);
  let m = 0;
  for (let i = 0; i < n; i++) {
    const act = action[i]!;
    if (act === KEEP || (act === INVESTIGATE && !mostlyUnmatched(action, i))) kept[m++] = s + i;
  }
  return kept.subarray(0, m);
}

/**
 * Whether the frequent line `i` lies in a run (bounded by lines with a usable match) whose
 * unmatched lines, on both sides of it, far outnumber the frequent ones.
 */
function mostlyUnmatched(action: Uint8Array, i: number): boolean {
  const lo = Math.max(0, i - SIMSCAN_WINDOW);
  const hi = Math.min(action.length - 1, i + SIMSCAN_WINDOW);
  let unmatchedBefore = 0;
  let frequentBefore = 1;
  for (let j = i - 1; j >= lo && action[j] !== KEEP; j--) {
    if (action[j] === DISCARD) unmatchedBefore++;
    else frequentBefore++;
  }
  if (unmatchedBefore === 0) return false;
  let unmatchedAfter = 0;
  let frequentAfter = 1;
  for (let j = i + 1; j <= hi && action[j] !== KEEP; j++) {
    if (action[j] === DISCARD) unmatchedAfter++;
    else frequentAfter++;
  }
  if (unmatchedAfter === 0) return false;
  const unmatched = unmatchedBefore + unmatchedAfter;
  const frequent = frequentBefore + frequentAfter;
  return frequent * KPDIS_RUN < frequent + unmatched;
}

/** The state of one search: the kept lines' ids, the two diagonal vectors, the split found. */
interface Search {
  ha: Int32Array;
  hb: Int32Array;
  /** Forward and backward furthest reach per diagonal, diagonal d at index d + base. */
  fwd: Int32Array;
  bwd: Int32Array;
  base: number;
  maxCost: number;
  budget: WorkBudget;
  splitA: number;
  splitB: number;
  minLo: boolean;
  minHi: boolean;
}

function createSearch(ha: Int32Array, hb: Int32Array, budget: WorkBudget): Search {
  const diagonals = ha.length + hb.length + 3;
  return {
    ha,
    hb,
    fwd: new Int32Array(diagonals),
    bwd: new Int32Array(diagonals),
    base: hb.length + 1,
    maxCost: Math.max(bogoSqrt(diagonals), MAX_COST_MIN),
    budget,
    splitA: 0,
    splitB: 0,
    minLo: false,
    minHi: false,
  };
}

/**
 * Divide and conquer: shrink each box by its equal ends, mark a box with one empty side
 * changed, else split it at the middle snake and do both halves. An explicit stack, since the
 * splits can nest deep; the order of the boxes does not change the result.
 */
function compareBoxes(s: Search, removeA: (k: number) => void, addB: (k: number) => void): void {
  const { ha, hb } = s;
  // Boxes as 5 numbers each: off1, lim1, off2, lim2, needMin (0/1).
  const stack: number[] = [0, ha.length, 0, hb.length, 0];
  while (stack.length > 0) {
    const needMin = stack.pop()!;
    let lim2 = stack.pop()!;
    let off2 = stack.pop()!;
    let lim1 = stack.pop()!;
    let off1 = stack.pop()!;
    while (off1 < lim1 && off2 < lim2 && ha[off1] === hb[off2]) {
      off1++;
      off2++;
    }
    while (off1 < lim1 && off2 < lim2 && ha[lim1 - 1] === hb[lim2 - 1]) {
      lim1--;
      lim2--;
    }
    if (off1 === lim1) for (let k = off2; k < lim2; k++) addB(k);
    else if (off2 === lim2) for (let k = off1; k < lim1; k++) removeA(k);
    else {
      split(s, off1, lim1, off2, lim2, needMin === 1);
      const { splitA, splitB } = s;
      stack.push(splitA, lim1, splitB, lim2, s.minHi ? 1 : 0);
      stack.push(off1, splitA, off2, splitB, s.minLo ? 1 : 0);
    }
  }
}

/** One box's search: its bounds, the diagonal ranges reached each way, the parity. */
interface Box {
  off1: number;
  lim1: number;
  off2: number;
  lim2: number;
  dmin: number;
  dmax: number;
  fmid: number;
  bmid: number;
  odd: boolean;
  fmin: number;
  fmax: number;
  bmin: number;
  bmax: number;
  gotSnake: boolean;
}

/**
 * Find where to split the box: the middle snake where the forward and backward searches meet,
 * or, unless a minimal script is needed, a good snake past the heuristic's cost, or the
 * furthest-reaching diagonal past the cost cap. Sets `splitA`, `splitB`, `minLo`, `minHi`.
 */
function split(
  s: Search,
  off1: number,
  lim1: number,
  off2: number,
  lim2: number,
  needMin: boolean,
): void {
  const fmid = off1 - off2;
  const bmid = lim1 - lim2;
  const box: Box = {
    off1,
    lim1,
    off2,
    lim2,
    dmin: off1 - lim2,
    dmax: lim1 - off2,
    fmid,
    bmid,
    odd: ((fmid - bmid) & 1) === 1,
    fmin: fmid,
    fmax: fmid,
    bmin: bmid,
    bmax: bmid,
    gotSnake: false,
  };
  s.fwd[fmid + s.base] = off1;
  s.bwd[bmid + s.base] = lim1;
  for (let cost = 1; ; cost++) {
    box.gotSnake = false;
    // Both directions' diagonals (and their snakes, counted in the steps).
    spend(s.budget, box.fmax - box.fmin + (box.bmax - box.bmin) + 2);
    if (forwardStep(s, box) || backwardStep(s, box)) return;
    if (needMin) continue;
    if (box.gotSnake && cost > HEUR_MIN_COST && goodSnake(s, box, cost)) return;
    if (cost >= s.maxCost) {
      furthest(s, box);
      return;
    }
  }
}

/** Extend every forward diagonal by one edit and its snake; true when it meets the backward. */
function forwardStep(s: Search, box: Box): boolean {
  const { fwd, bwd, base, ha, hb } = s;
  const { lim1, lim2, bmin, bmax, odd } = box;
  // The range grows by one each way while it stays in the box, else shrinks by one (parity).
  let fmin = box.fmin;
  let fmax = box.fmax;
  if (fmin > box.dmin) fwd[--fmin - 1 + base] = -1;
  else fmin++;
  if (fmax < box.dmax) fwd[++fmax + 1 + base] = -1;
  else fmax--;
  box.fmin = fmin;
  box.fmax = fmax;
  let snake = 0;
  // Diagonal k's right neighbour is the left one of the diagonal before it: read each once.
  let hi = fwd[fmax + 1 + base]!;
  for (let k = fmax + base; k >= fmin + base; k -= 2) {
    const lo = fwd[k - 1]!;
    let i1 = lo >= hi ? lo + 1 : hi;
    hi = lo;
    const d = k - base;
    let i2 = i1 - d;
    if (i1 < lim1 && i2 < lim2 && ha[i1] === hb[i2]) {
      const from = i1;
      do {
        i1++;
        i2++;
      } while (i1 < lim1 && i2 < lim2 && ha[i1] === hb[i2]);
      if (i1 - from > snake) snake = i1 - from;
    }
    fwd[k] = i1;
    if (odd && bmin <= d && d <= bmax && bwd[k]! <= i1) {
      setSplit(s, i1, i2, true, true);
      return true;
    }
  }
  if (snake > SNAKE_CNT) box.gotSnake = true;
  return false;
}

/** Extend every backward diagonal by one edit and its snake; true when it meets the forward. */
function backwardStep(s: Search, box: Box): boolean {
  const { fwd, bwd, base, ha, hb } = s;
  const { off1, off2, fmin, fmax, odd } = box;
  let bmin = box.bmin;
  let bmax = box.bmax;
  if (bmin > box.dmin) bwd[--bmin - 1 + base] = LINE_MAX;
  else bmin++;
  if (bmax < box.dmax) bwd[++bmax + 1 + base] = LINE_MAX;
  else bmax--;
  box.bmin = bmin;
  box.bmax = bmax;
  let snake = 0;
  let hi = bwd[bmax + 1 + base]!;
  for (let k = bmax + base; k >= bmin + base; k -= 2) {
    const lo = bwd[k - 1]!;
    let i1 = lo < hi ? lo : hi - 1;
    hi = lo;
    const d = k - base;
    let i2 = i1 - d;
    if (i1 > off1 && i2 > off2 && ha[i1 - 1] === hb[i2 - 1]) {
      const from = i1;
      do {
        i1--;
        i2--;
      } while (i1 > off1 && i2 > off2 && ha[i1 - 1] === hb[i2 - 1]);
      if (from - i1 > snake) snake = from - i1;
    }
    bwd[k] = i1;
    if (!odd && fmin <= d && d <= fmax && i1 <= fwd[k]!) {
      setSplit(s, i1, i2, true, true);
      return true;
    }
  }
  if (snake > SNAKE_CNT) box.gotSnake = true;
  return false;
}

function setSplit(s: Search, i1: number, i2: number, minLo: boolean, minHi: boolean): void {
  s.splitA = i1;
  s.splitB = i2;
  s.minLo = minLo;
  s.minHi = minHi;
}

/**
 * The heuristic way out: a diagonal whose progress (lines of both sides covered, less its
 * distance from the box's middle diagonal) exceeds K_HEUR times the cost and that ends in a
 * snake of SNAKE_CNT equal lines; forward first, then backward.
 */
function goodSnake(s: Search, box: Box, cost: number): boolean {
  const { fwd, bwd, base, ha, hb } = s;
  const { off1, lim1, off2, lim2 } = box;
  let best = 0;
  for (let d = box.fmax; d >= box.fmin; d -= 2) {
    const i1 = fwd[d + base]!;
    const i2 = i1 - d;
    const v = i1 - off1 + (i2 - off2) - Math.abs(d - box.fmid);
    if (v <= K_HEUR * cost || v <= best) continue;
    if (off1 + SNAKE_CNT > i1 || i1 >= lim1 || off2 + SNAKE_CNT > i2 || i2 >= lim2) continue;
    let k = 1;
    while (k <= SNAKE_CNT && ha[i1 - k] === hb[i2 - k]) k++;
    if (k > SNAKE_CNT) {
      best = v;
      setSplit(s, i1, i2, true, false);
    }
  }
  if (best > 0) return true;
  for (let d = box.bmax; d >= box.bmin; d -= 2) {
    const i1 = bwd[d + base]!;
    const i2 = i1 - d;
    const v = lim1 - i1 + (lim2 - i2) - Math.abs(d - box.bmid);
    if (v <= K_HEUR * cost || v <= best) continue;
    if (off1 >= i1 || i1 > lim1 - SNAKE_CNT || off2 >= i2 || i2 > lim2 - SNAKE_CNT) continue;
    let k = 0;
    while (k < SNAKE_CNT && ha[i1 + k] === hb[i2 + k]) k++;
    if (k === SNAKE_CNT) {
      best = v;
      setSplit(s, i1, i2, false, true);
    }
  }
  return best > 0;
}

/** The cost cap's way out: the diagonal that reached furthest (i1 + i2), either way. */
function furthest(s: Search, box: Box): void {
  const { fwd, bwd, base } = s;
  const { off1, lim1, off2, lim2 } = box;
  let fbest = -1;
  let fbest1 = -1;
  for (let d = box.fmax; d >= box.fmin; d -= 2) {
    let i1 = Math.min(fwd[d + base]!, lim1);
    let i2 = i1 - d;
    if (lim2 < i2) {
      i1 = lim2 + d;
      i2 = lim2;
    }
    if (fbest < i1 + i2) {
      fbest = i1 + i2;
      fbest1 = i1;
    }
  }
  let bbest = LINE_MAX;
  let bbest1 = LINE_MAX;
  for (let d = box.bmax; d >= box.bmin; d -= 2) {
    let i1 = Math.max(off1, bwd[d + base]!);
    let i2 = i1 - d;
    if (i2 < off2) {
      i1 = off2 + d;
      i2 = off2;
    }
    if (i1 + i2 < bbest) {
      bbest = i1 + i2;
      bbest1 = i1;
    }
  }
  if (lim1 + lim2 - bbest < fbest - (off1 + off2)) setSplit(s, fbest1, fbest - fbest1, true, false);
  else setSplit(s, bbest1, bbest - bbest1, false, true);
}
