import * as jestDiff from "@jest/diff-sequences";
import { ErrorCode, TimewarpError } from "../core/index.ts";
import { compactChanges } from "./compact.ts";
import { histogramDiff, type Region } from "./histogram.ts";

type DiffSequences = (
  aLength: number,
  bLength: number,
  isCommon: (aIndex: number, bIndex: number) => boolean,
  foundSubsequence: (nCommon: number, aCommon: number, bCommon: number) => void,
) => void;

// The package is CommonJS with `exports.default`; its ESM wrapper re-exports that as `default`,
// while its types describe the CommonJS view. Unwrap whichever this runtime gives.
function resolveDiffSequences(mod: unknown): DiffSequences {
  let f: unknown = mod;
  for (let k = 0; k < 3 && typeof f !== "function"; k++) {
    f = typeof f === "object" && f !== null && "default" in f ? f.default : undefined;
  }
  if (typeof f !== "function")
    throw new TimewarpError(ErrorCode.INTERNAL, "@jest/diff-sequences exports no function");
  return f as DiffSequences;
}

const diffSequences = resolveDiffSequences(jestDiff);

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

const TIMED_OUT = Symbol("line-diff timed out");

/** Marks of the lines present in a region, by id; a new stamp per use saves clearing. */
interface Presence {
  seenA: Int32Array;
  seenB: Int32Array;
  stamp: number;
}

/**
 * git's classic fallback for a region the histogram cannot anchor: Myers via
 * `@jest/diff-sequences` on the lines that also occur on the other side of the region (the
 * others can never match), every line it leaves unmatched marked changed.
 */
function myersRegion(
  ctx: { idA: Int32Array; idB: Int32Array; changedA: Uint8Array; changedB: Uint8Array },
  presence: Presence,
  r: Region,
  isLate: () => boolean,
): void {
  const { idA, idB, changedA, changedB } = ctx;
  const stamp = ++presence.stamp;
  for (let k = r.a0; k < r.a1; k++) presence.seenA[idA[k]!] = stamp;
  for (let k = r.b0; k < r.b1; k++) presence.seenB[idB[k]!] = stamp;
  const keepA: number[] = [];
  for (let k = r.a0; k < r.a1; k++) if (presence.seenB[idA[k]!] === stamp) keepA.push(k);
  const keepB: number[] = [];
  for (let k = r.b0; k < r.b1; k++) if (presence.seenA[idB[k]!] === stamp) keepB.push(k);
  const fa = new Int32Array(keepA.length);
  for (let k = 0; k < keepA.length; k++) fa[k] = idA[keepA[k]!]!;
  const fb = new Int32Array(keepB.length);
  for (let k = 0; k < keepB.length; k++) fb[k] = idB[keepB[k]!]!;
  changedA.fill(1, r.a0, r.a1);
  changedB.fill(1, r.b0, r.b1);
  let calls = 0;
  diffSequences(
    fa.length,
    fb.length,
    (i, j) => {
      if ((++calls & 0xffff) === 0 && isLate()) throw TIMED_OUT;
      return fa[i] === fb[j];
    },
    (n, ai, bj) => {
      for (let k = 0; k < n; k++) {
        changedA[keepA[ai + k]!] = 0;
        changedB[keepB[bj + k]!] = 0;
      }
    },
  );
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
 * The changed regions between two line lists, as git's `--histogram` finds them: lines are
 * interned to integers, anchored on the rarest common lines (`histogram.ts`), and regions with
 * only frequent common lines go to Myers. Past `timeCapMs` the whole input is one block.
 */
export function diffLines(
  a: Lines,
  b: Lines,
  opts: { timeCapMs: number },
): { blocks: ChangeBlock[]; timedOut: boolean } {
  const { idA, idB, ids } = intern(a, b);
  const changedA = new Uint8Array(a.count);
  const changedB = new Uint8Array(b.count);
  const deadline = performance.now() + opts.timeCapMs;
  const isLate = () => performance.now() > deadline;
  const presence: Presence = { seenA: new Int32Array(ids), seenB: new Int32Array(ids), stamp: 0 };
  const ctx = { idA, idB, changedA, changedB };
  let regions = 0;
  try {
    histogramDiff({
      ...ctx,
      ids,
      fallback: (r) => myersRegion(ctx, presence, r, isLate),
      tick: () => {
        if ((++regions & 0x3ff) === 0 && isLate()) throw TIMED_OUT;
      },
    });
  } catch (error) {
    if (error !== TIMED_OUT) throw error;
    const whole =
      a.count === 0 && b.count === 0
        ? []
        : [{ aStart: 0, aEnd: a.count, bStart: 0, bEnd: b.count }];
    return { blocks: whole, timedOut: true };
  }
  const sideA = { ids: idA, changed: changedA, lines: a };
  const sideB = { ids: idB, changed: changedB, lines: b };
  compactChanges(sideA, sideB);
  compactChanges(sideB, sideA);
  return { blocks: blocksOf(changedA, changedB), timedOut: false };
}
