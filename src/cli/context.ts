import { resolve } from "node:path";
import type { Clock, Random } from "../core/index.ts";
import { systemClock, systemRandom } from "../core/index.ts";

/** What every command handler receives: where it works, how it prints, and the injected sources. */
export interface CommandContext {
  /** The workspace root (`--cwd`, default the process's working directory). */
  root: string;
  json: boolean;
  clock: Clock;
  random: Random;
  /** Progress for long work: stderr on a TTY without `--json`, silent otherwise. */
  progress: (message: string) => void;
}

export interface GlobalOptions {
  json?: boolean;
  cwd?: string;
}

export function createCommandContext(options: GlobalOptions): CommandContext {
  const json = options.json === true;
  const showProgress = !json && process.stderr.isTTY === true;
  return {
    root: resolve(options.cwd ?? process.cwd()),
    json,
    clock: systemClock,
    random: systemRandom,
    progress: showProgress ? (message) => process.stderr.write(`\r\x1b[2K${message}`) : () => {},
  };
}
