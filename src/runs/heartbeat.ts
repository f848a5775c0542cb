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

/**
 * How long the counter may stand still before the session is HEARTBEAT_LOST: the setting
 * `heartbeat_stale_ms` (unset: three beat intervals, 3 s by default), but never less than three
 * intervals — one or two late beats on a loaded host are not a lost tool. On a shared file
 * system whose attribute cache lags, the setting is raised to ride it out.
 */
/** The threshold from the `skillpilot` settings (see heartbeatThresholdMs). */
export function staleMsFromSettings(s: {
  heartbeat_stale_ms?: number | undefined;
  heartbeat_interval_ms: number;
}): number {
  return heartbeatThresholdMs({
    heartbeatStaleMs: s.heartbeat_stale_ms ?? 0,
    heartbeatIntervalMs: s.heartbeat_interval_ms,
  });
}

export function heartbeatThresholdMs(timings: {
  heartbeatStaleMs: number;
  heartbeatIntervalMs: number;
}): number {
  return Math.max(timings.heartbeatStaleMs, 3 * timings.heartbeatIntervalMs);
}

/**
 * Whether the heartbeat can be judged while a request runs: only when something other than the
 * Tcl event loop beats (a thread or the sidecar), since a long command blocks that loop.
 */
export function beatSurvivesBusyLoop(mode: string | undefined): boolean {
  return mode === "thread" || mode === "sidecar";
}
