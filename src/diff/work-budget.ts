/**
 * The line diff's allowance of work: lines of each region searched, plus diagonals extended at
 * each edit cost of the Myers search, summed. It counts
 * steps, never time, so the same input always ends the same way; running out throws
 * `OVER_BUDGET` (the caller then writes the changed region as one hunk).
 */
export interface WorkBudget {
  left: number;
}

export const OVER_BUDGET: unique symbol = Symbol("line diff over its work budget");

/** Spend `n` steps of `b`; throws `OVER_BUDGET` once it is used up. */
export function spend(b: WorkBudget, n: number): void {
  b.left -= n;
  if (b.left < 0) throw OVER_BUDGET;
}
