import { mkdirSync } from "node:fs";
import { threadId } from "node:worker_threads";
import { acquireLockWaiting, type LockHandle, readLockHolder, withLock } from "../core/index.ts";
import { ledgerPaths } from "./ledger-paths.ts";

const WAIT_MS = 10_000;
/** How long a travel or return waits for an edit being written (edits take milliseconds). */
const TRANSITION_WAIT_MS = 2_000;

/**
 * Run `fn` holding the ledger lock (`.timewarp/history/lock`). Ledger writers are short, so a
 * lock another process holds is waited for (up to 10 s) rather than failed at once; callers in
 * this process queue in memory and never contend on the file (`withLock`), and the wait never
 * blocks the event loop, so a long-lived process (the MCP server, the hook worker) serves
 * parallel calls one after the other.
 */
export async function withLedgerLock<T>(
  root: string,
  command: string,
  fn: () => Promise<T> | T,
): Promise<T> {
  const paths = ledgerPaths(root);
  mkdirSync(paths.history, { recursive: true });
  return withLock(paths.lock, { command, waitMs: WAIT_MS }, fn);
}

/**
 * The ledger lock for a travel or return, taken synchronously under the workspace lock and held
 * until the transition ends: an edit that passed its state check just before the travel began
 * must not write into the tree being restored (issue 16, class 5). Edits take milliseconds, so a
 * held lock is waited for up to 2 s, then LOCKED naming the edit.
 */
export function holdLedgerForTransition(root: string, command: string): LockHandle {
  const paths = ledgerPaths(root);
  mkdirSync(paths.history, { recursive: true });
  return acquireLockWaiting(paths.lock, {
    command,
    waitMs: TRANSITION_WAIT_MS,
    // Held by this very thread (an MCP server's edit between two awaits): blocking it here
    // would stop the holder from finishing, so refuse at once.
    stopWaiting: () => {
      const holder = readLockHolder(paths.lock);
      return holder?.pid === process.pid && (holder.thread ?? 0) === threadId;
    },
  });
}
