import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/**
 * Fault injection for the crash-safety tests (issue 3 §5, issue 16). Named points sit between
 * the durable steps of travel/return and of a ledger operation (`ledger:*`, see the ledger's
 * README); environment variables turn a point into a fault:
 *
 * - `TIMEWARP_CRASH_AT=<point>:<n>` — SIGKILL this process at the n-th hit of `<point>`
 *   (`*` matches every point, so `*:7` dies at the 7th step of any kind).
 * - `TIMEWARP_ENOSPC_AT=<point>:<n>` — throw an ENOSPC system error there (disk full).
 * - `TIMEWARP_PAUSE_AT=<point>:<ms>` — sleep there (to make lock races deterministic).
 * - `TIMEWARP_HOLD_AT=<point>@<dir>` — stop there until the test says go: write this process's
 *   pid to `<dir>/held`, then wait (at most a minute) for `<dir>/go` to exist.
 *
 * Unset (the normal case), a point costs one environment lookup.
 */
const hits = new Map<string, number>();

function parseSpec(value: string | undefined): { point: string; n: number } | undefined {
  if (!value) return undefined;
  const at = value.lastIndexOf(":");
  if (at <= 0) return undefined;
  const n = Number(value.slice(at + 1));
  return Number.isFinite(n) ? { point: value.slice(0, at), n } : undefined;
}

function count(key: string): number {
  const next = (hits.get(key) ?? 0) + 1;
  hits.set(key, next);
  return next;
}

export function faultPoint(point: string): void {
  const crash = parseSpec(process.env.TIMEWARP_CRASH_AT);
  const enospc = parseSpec(process.env.TIMEWARP_ENOSPC_AT);
  const pause = parseSpec(process.env.TIMEWARP_PAUSE_AT);
  const hold = process.env.TIMEWARP_HOLD_AT;
  if (!crash && !enospc && !pause && !hold) return;
  const any = count("*");
  const mine = count(point);
  if (crash && (crash.point === "*" ? any : crash.point === point ? mine : -1) === crash.n) {
    process.kill(process.pid, "SIGKILL");
  }
  if (enospc && enospc.point === point && mine >= enospc.n) {
    throw Object.assign(new Error(`ENOSPC: no space left on device (injected at ${point})`), {
      code: "ENOSPC",
    });
  }
  if (pause && pause.point === point) {
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, pause.n);
  }
  const at = hold?.indexOf("@") ?? -1;
  if (hold !== undefined && at > 0 && hold.slice(0, at) === point) holdAt(hold.slice(at + 1));
}

/** `TIMEWARP_HOLD_AT`'s stop: says so in `dir/held`, then waits for `dir/go`. */
function holdAt(dir: string): void {
  writeFileSync(join(dir, "held"), `${process.pid}\n`);
  const deadline = Date.now() + 60_000;
  const sleeper = new Int32Array(new SharedArrayBuffer(4));
  while (!existsSync(join(dir, "go")) && Date.now() < deadline) Atomics.wait(sleeper, 0, 0, 20);
}
