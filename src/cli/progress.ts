import type { ProgressUpdate } from "../core/index.ts";

/**
 * The CLI's progress line: one line on stderr, rewritten in place, for work that turns out slow
 * (issue 21: a first snapshot of a large tree). Quick work prints nothing: messages before
 * `afterMs` are dropped, so a command that ends within it leaves stderr as it was.
 */
export function createProgressLine(options: {
  /** False for `--json`, for a stderr that is not a terminal: then it never writes. */
  enabled: boolean;
  write: (text: string) => void;
  /** Milliseconds, any origin (the clock the command was given). */
  now: () => number;
  afterMs?: number;
}): (message: string) => void {
  if (!options.enabled) return () => {};
  const start = options.now();
  const after = options.afterMs ?? 1000;
  let shown = false;
  return (message) => {
    // "" clears the line, and only a line that was written needs clearing
    if (message === "") {
      if (shown) options.write("\r\x1b[2K");
      shown = false;
      return;
    }
    if (options.now() - start < after) return;
    options.write(`\r\x1b[2K${message}`);
    shown = true;
  };
}

/** A snapshot's scan as the `scan` phase (its total is not known until it ends). */
export function scanProgress(p: { entries: number; rehashed: number }): ProgressUpdate {
  return {
    phase: "scan",
    done: p.entries,
    message: `scanned ${p.entries} entries, read ${p.rehashed}`,
  };
}
