import { mkdirSync } from "node:fs";
import { withLock } from "../core/index.ts";
import { ledgerPaths } from "./ledger-paths.ts";

const WAIT_MS = 10_000;

/**
 * Run `fn` holding the ledger lock (`.timewarp/history/lock`). Ledger writers are short, so a
 * lock another process holds is waited for (up to 10 s) rather than failed at once; callers in
 * this process queue in memory and never contend on the file (`withLock`), and the wait never
 * blocks the event loop, so a long-lived process (the MCP server, the hook worker) serves
 * parallel calls one after the other. The time machine's workspace lock is a different file and
 * never collides with this one.
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
