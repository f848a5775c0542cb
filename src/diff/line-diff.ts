import * as jestDiff from "@jest/diff-sequences";

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
  if (typeof f !== "function") throw new Error("@jest/diff-sequences exports no function");
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

const TIMED_OUT = Symbol("line-diff timed out");

/**
 * The changed regions between two line arrays. Lines are interned to integers, and lines absent
 * from the other side are dropped before the linear-space Myers runs: they can never be part of
 * a common subsequence, and dropping them is what makes "every other line changed" and "fully
 * rewritten" cheap (git's xdiff does the same). Past `timeCapMs` the whole input is one block.
 */
export function diffLines(
  a: readonly string[],
  b: readonly string[],
  opts: { timeCapMs: number },
): { blocks: ChangeBlock[]; timedOut: boolean } {
  const ids = new Map<string, number>();
  const idA = new Int32Array(a.length);
  const idB = new Int32Array(b.length);
  for (let i = 0; i < a.length; i++) {
    const line = a[i] ?? "";
    let id = ids.get(line);
    if (id === undefined) {
      id = ids.size;
      ids.set(line, id);
    }
    idA[i] = id;
  }
  const inA = ids.size;
  const seenA = new Uint8Array(inA);
  for (let i = 0; i < a.length; i++) seenA[idA[i] ?? 0] = 1;
  const seenB = new Uint8Array(inA);
  for (let j = 0; j < b.length; j++) {
    const id = ids.get(b[j] ?? "");
    // Ids >= inA exist only in b; -1 marks them without growing the map.
    idB[j] = id === undefined ? -1 : id;
    if (id !== undefined) seenB[id] = 1;
  }
  const keepA: number[] = [];
  for (let i = 0; i < a.length; i++) if (seenB[idA[i] ?? 0]) keepA.push(i);
  const keepB: number[] = [];
  for (let j = 0; j < b.length; j++) {
    const id = idB[j] ?? -1;
    if (id >= 0 && seenA[id]) keepB.push(j);
  }
  const fa = Int32Array.from(keepA, (i) => idA[i] ?? 0);
  const fb = Int32Array.from(keepB, (j) => idB[j] ?? 0);

  const matchA: number[] = [];
  const matchB: number[] = [];
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
          matchA.push(keepA[ai + k] ?? 0);
          matchB.push(keepB[bj + k] ?? 0);
        }
      },
    );
  } catch (error) {
    if (error !== TIMED_OUT) throw error;
    return { blocks: wholeBlock(a.length, b.length), timedOut: true };
  }

  const blocks: ChangeBlock[] = [];
  let pa = 0;
  let pb = 0;
  for (let k = 0; k < matchA.length; k++) {
    const ai = matchA[k] ?? 0;
    const bj = matchB[k] ?? 0;
    if (ai > pa || bj > pb) blocks.push({ aStart: pa, aEnd: ai, bStart: pb, bEnd: bj });
    pa = ai + 1;
    pb = bj + 1;
  }
  if (pa < a.length || pb < b.length) {
    blocks.push({ aStart: pa, aEnd: a.length, bStart: pb, bEnd: b.length });
  }
  return { blocks, timedOut: false };
}

function wholeBlock(na: number, nb: number): ChangeBlock[] {
  return na === 0 && nb === 0 ? [] : [{ aStart: 0, aEnd: na, bStart: 0, bEnd: nb }];
}
