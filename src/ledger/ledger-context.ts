import type { Clock, Random } from "../core/index.ts";

/** Where the ledger works and with which sources; every ledger entry point takes one. */
export interface LedgerContext {
  /** The workspace root; every path is relative to it. */
  root: string;
  clock?: Clock;
  random?: Random;
  /** Recorded in `context.sessionId` of each operation. */
  sessionId?: string;
}

/** What every edit tool returns (the seed's CommonReturns, plus what was done). */
export interface EditResult {
  success: true;
  message: string;
  /** The operation recorded; absent on dryRun and when nothing changed. */
  snapshotId?: string;
  /** The git-format diff of the change (the preview on dryRun, what was applied otherwise). */
  previewDiff: string;
  affectedFiles: string[];
  dryRun: boolean;
  /** "past" when the edit was made during a travel (recorded so; `return` keeps it as a patch). */
  timeline?: "past";
}
