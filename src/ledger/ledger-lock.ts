import { mkdirSync } from "node:fs";
import { acquireLock, isTimewarpError, type LockHandle } from "../core/index.ts";
import { ledgerPaths } from "./ledger-paths.ts";

const WAIT_MS = 10_000;
const sleeper = new Int32Array(new SharedArrayBuffer(4));

/**
 * Run `fn` holding the ledger lock (`.timewarp/history/lock`). Ledger writers are short, so a
 * held lock is waited for (up to 10 s) rather than failed at once; the time machine's workspace
 * lock is a different file and never collides with this one.
 */
export async function withLedgerLock<T>(
  root: string,
  command: string,
  fn: () => Promise<T> | T,
): Promise<T> {
  const lock = takeLedgerLock(root, command);
  try {
    return await fn();
  } finally {
    lock.release();
  }
}

function takeLedgerLock(root: string, command: string): LockHandle {
  const paths = ledgerPaths(root);
  mkdirSync(paths.history, { recursive: true });
  const deadline = Date.now() + WAIT_MS;
  let delay = 2;
  for (;;) {
    try {
      return acquireLock(paths.lock, { command });
    } catch (error) {
      if (!isTimewarpError(error, "LOCKED") || Date.now() > deadline) throw error;
      Atomics.wait(sleeper, 0, 0, delay);
      delay = Math.min(delay * 2, 50);
    }
  }
}
