import { resolve } from "node:path";
import type { Clock } from "../core/index.ts";

/** What every dashboard route receives: the workspace it shows and what it may do there. */
export interface UiContext {
  /** The workspace root (as the CLI resolved it). */
  root: string;
  /** Whether state-changing routes (revert, travel, return, rewind) are on. */
  allowActions: boolean;
  clock: Clock;
  /**
   * The command line that runs this package's CLI (`node …/bin/timewarp.cjs`): actions run
   * through it (`api/cli-action.ts`). `startUiServer` defaults it to the package's own bin.
   */
  cliCommand: string[];
}

/**
 * This Node running the package's own `bin/timewarp.cjs` (two levels up from src/ui/, and from
 * the bundle's dist/bin/): the CLI a user would run, whichever process hosts the server.
 */
export function packageCliCommand(): string[] {
  return [process.execPath, resolve(import.meta.dirname, "..", "..", "bin", "timewarp.cjs")];
}
