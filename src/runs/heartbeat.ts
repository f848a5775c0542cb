import { readFileSync } from "node:fs";

function readCounter(path: string): number | undefined {
  try {
    const n = Number.parseInt(readFileSync(path, "utf8").split(" ")[0] ?? "", 10);
    return Number.isFinite(n) ? n : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The tool's heartbeat (session/heartbeat: a counter the Tcl side bumps), timed on the runner's
 * own clock: the counter's value says nothing about time, only that it moved.
 */
export interface HeartbeatWatch {
  /** Read the counter; a new value restarts the clock. */
  observe(): void;
  /** Restart the clock now (the tool's loop was just free: it answered). */
  reset(): void;
  /** Milliseconds since the counter last moved. */
  silentForMs(): number;
}

export function watchHeartbeat(path: string): HeartbeatWatch {
  let value = readCounter(path);
  let seenAt = performance.now();
  return {
    observe() {
      const v = readCounter(path);
      if (v !== undefined && v !== value) {
        value = v;
        seenAt = performance.now();
      }
    },
    reset() {
      this.observe();
      seenAt = performance.now();
    },
    silentForMs: () => performance.now() - seenAt,
  };
}
