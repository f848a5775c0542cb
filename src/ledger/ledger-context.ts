import type { Clock, Random } from "../core/index.ts";

/** Where the ledger works and with which sources; every ledger entry point takes one. */
export interface LedgerContext {
  /** The workspace root; every path is relative to it. */
  root: string;
  clock?: Clock;
  random?: Random;
  /** Recorded in `context.sessionId` of each operation. */
  sessionId?: string;
  /**
   * Asked by every edit tool once its change is planned, before anything is written (and on a
   * dry run, so a preview tells what the real call would meet): `rollback` refuses the edit with
   * GUARD_BLOCKED, `warn` adds the reasons to the result's message. The MCP server passes the
   * drift guards here, so an agent's edit through timewarp's own tools meets the goal as its
   * own edit tools do through the hooks. Reverts are not asked: undoing is what a guard wants.
   */
  guard?: (edit: LedgerGuardedEdit) => LedgerGuardVerdict;
}

/** What an edit guard is shown: the tool, every path the operation touches, its diff. */
export interface LedgerGuardedEdit {
  tool: string;
  paths: string[];
  diff: string;
  dryRun: boolean;
}

export interface LedgerGuardVerdict {
  action: "none" | "ok" | "warn" | "rollback";
  reasons: string[];
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
