import * as jestDiff from "@jest/diff-sequences";
import { ErrorCode, TimewarpError } from "../core/index.ts";

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

/**
 * The changed regions between two line lists. Lines are interned to integers, and lines absent
 * from the other side are dropped before the linear-space Myers runs: they can never be part of
 * a common subsequence, and dropping them is what makes "every other line changed" and "fully
 * rewritten" cheap (git's xdiff does the same). Past `timeCapMs` the whole input is one block.
 */
export function diffLines(
  a: Lines,
  b: Lines,
  opts: { timeCapMs: number },
): { blocks: ChangeBlock[]; timedOut: boolean } {
  const { idA, idB, ids } = intern(a, b);
  const inA = new Uint8Array(ids);
  for (let k = 0; k < idA.length; k++) inA[idA[k] ?? 0] = 1;
  const inB = new Uint8Array(ids);
  for (let k = 0; k < idB.length; k++) inB[idB[k] ?? 0] = 1;
  const keepA: number[] = [];
  for (let k = 0; k < idA.length; k++) if (inB[idA[k] ?? 0]) keepA.push(k);
  const keepB: number[] = [];
  for (let k = 0; k < idB.length; k++) if (inA[idB[k] ?? 0]) keepB.push(k);
  const fa = new Int32Array(keepA.length);
  for (let k = 0; k < keepA.length; k++) fa[k] = idA[keepA[k]!]!;
  const fb = new Int32Array(keepB.length);
  for (let k = 0; k < keepB.length; k++) fb[k] = idB[keepB[k]!]!;

  const blocks: ChangeBlock[] = [];
  let pa = 0;
  let pb = 0;
  const deadline = performance.now() + opts.timeCapMs;
  let calls = 0;
  try {
    diffSequences(
      fa.length,
      fb.length,
      (i, j) => {
        if ((++calls & 0xffff) === 0 && performance.now() > deadline) throw TIMED_OUT;
        return fa[i] === fb[j];
      },
      (n, ai, bj) => {
        for (let k = 0; k < n; k++) {
          const x = keepA[ai + k] ?? 0;
          const y = keepB[bj + k] ?? 0;
          if (x > pa || y > pb) blocks.push({ aStart: pa, aEnd: x, bStart: pb, bEnd: y });
          pa = x + 1;
          pb = y + 1;
        }
      },
    );
  } catch (error) {
    if (error !== TIMED_OUT) throw error;
    const whole =
      a.count === 0 && b.count === 0
        ? []
        : [{ aStart: 0, aEnd: a.count, bStart: 0, bEnd: b.count }];
    return { blocks: whole, timedOut: true };
  }
  if (pa < a.count || pb < b.count)
    blocks.push({ aStart: pa, aEnd: a.count, bStart: pb, bEnd: b.count });
  return { blocks, timedOut: false };
}
