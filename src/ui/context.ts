import type { Clock } from "../core/index.ts";

/** What every dashboard route receives: the workspace it shows and what it may do there. */
export interface UiContext {
  /** The workspace root (as the CLI resolved it). */
  root: string;
  /** Whether state-changing routes (revert, travel, return, rewind) are on. */
  allowActions: boolean;
  clock: Clock;
}
