import {
  closeSync,
  linkSync,
  openSync,
  readFileSync,
  statSync,
  unlinkSync,
  writeSync,
} from "node:fs";
import { hostname } from "node:os";
import { threadId } from "node:worker_threads";
import { z } from "zod";
import { tempPathFor } from "./atomic-write.ts";
import { ErrorCode, errnoCode, fromSystemError, TimewarpError } from "./errors.ts";
import { isProcessAlive } from "./process-alive.ts";

const LockHolderSchema = z.object({
  pid: z.number().int(),
  host: z.string(),
  started_at: z.string(),
  command: z.string().optional(),
  /** The worker thread that holds it, when not the main thread (`clearLockOfThread`). */
  thread: z.number().int().optional(),
});

export type LockHolder = z.infer<typeof LockHolderSchema>;

export interface LockHandle {
  readonly path: string;
  readonly holder: LockHolder;
  release(): void;
}

export interface AcquireLockOptions {
  /** What the holder is doing, shown to whoever finds the lock held. */
  command?: string;
  /** Injected for tests: is a process with this pid alive on this host? */
  isAlive?: (pid: number) => boolean;
  now?: () => Date;
}

function readHolder(path: string): LockHolder | "absent" | "unreadable" {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    if (errnoCode(error) === "ENOENT") return "absent";
    throw fromSystemError(error, `reading lock ${path}`);
  }
  try {
    const parsed = LockHolderSchema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : "unreadable";
  } catch {
    return "unreadable";
  }
}

/**
 * Publish the holder record at `path` only if nothing is there. The record is written to a
 * private temp file first and then hard-linked into place (link fails with EEXIST atomically),
 * so a lock file is never seen empty or half-written, even when its writer is killed mid-way.
 */
function tryCreate(path: string, holder: LockHolder): boolean {
  const temp = tempPathFor(path);
  try {
    const fd = openSync(temp, "wx", 0o644);
    try {
      writeSync(fd, JSON.stringify(holder));
    } finally {
      closeSync(fd);
    }
    linkSync(temp, path);
    return true;
  } catch (error) {
    if (errnoCode(error) === "EEXIST") return false;
    throw fromSystemError(error, `creating lock ${path}`);
  } finally {
    try {
      unlinkSync(temp);
    } catch {
      // never created
    }
  }
}

/**
 * Take the inter-process lock at `path` (O_EXCL create; the file holds pid, host, start time).
 * A lock whose holder is provably gone (same host, no such pid) is taken over; any other held
 * lock is `LOCKED` naming the holder. The record is published whole (see `tryCreate`); a lock
 * file that is nonetheless unreadable (damaged by hand, or left by an older version) counts as
 * stale only once it is older than a few seconds.
 */
export function acquireLock(path: string, options: AcquireLockOptions = {}): LockHandle {
  const isAlive = options.isAlive ?? isProcessAlive;
  const now = options.now ?? (() => new Date());
  const me: LockHolder = {
    pid: process.pid,
    host: hostname(),
    started_at: now().toISOString(),
    ...(options.command === undefined ? {} : { command: options.command }),
    ...(threadId === 0 ? {} : { thread: threadId }),
  };
  for (let attempt = 0; attempt < 5; attempt++) {
    if (tryCreate(path, me)) return handleFor(path, me);
    const holder = readHolder(path);
    if (holder === "absent") continue;
    if (holder === "unreadable") {
      if (tornAndOld(path, now())) {
        clearTorn(path, me, isAlive);
        continue;
      }
      throw new TimewarpError(
        ErrorCode.LOCKED,
        `lock ${path} is being created by another process (or was left torn); retry, or delete it if no timewarp process runs`,
        { data: { path } },
      );
    }
    const stale = holder.host === me.host && !isAlive(holder.pid);
    if (!stale) {
      throw new TimewarpError(
        ErrorCode.LOCKED,
        `workspace is locked by pid ${holder.pid} on ${holder.host} since ${holder.started_at}` +
          (holder.command ? ` (${holder.command})` : ""),
        { data: { path, holder } },
      );
    }
    takeOverStale(path, holder, me, isAlive);
  }
  throw new TimewarpError(ErrorCode.LOCKED, `could not take lock ${path}: contended`, {
    data: { path },
  });
}

/** A lock file with no readable holder that has stayed so for longer than a writer could need. */
function tornAndOld(path: string, now: Date): boolean {
  try {
    return now.getTime() - statSync(path).mtimeMs > TORN_LOCK_GRACE_MS;
  } catch {
    return false;
  }
}

const TORN_LOCK_GRACE_MS = 5_000;

function clearTorn(path: string, me: LockHolder, isAlive: (pid: number) => boolean): void {
  withTakeoverGuard(path, me, isAlive, () => {
    if (readHolder(path) === "unreadable") unlinkSync(path);
  });
}

/**
 * Remove a stale lock under a short-lived takeover guard, so two processes that both found the
 * same stale lock cannot each delete the lock the other has just created.
 */
function takeOverStale(
  path: string,
  stale: LockHolder,
  me: LockHolder,
  isAlive: (pid: number) => boolean,
): void {
  withTakeoverGuard(path, me, isAlive, () => {
    const current = readHolder(path);
    if (
      current !== "absent" &&
      current !== "unreadable" &&
      current.pid === stale.pid &&
      current.started_at === stale.started_at
    ) {
      unlinkSync(path);
    }
  });
}

function withTakeoverGuard(
  path: string,
  me: LockHolder,
  isAlive: (pid: number) => boolean,
  fn: () => void,
): void {
  const guard = `${path}.takeover`;
  if (!tryCreate(guard, me)) {
    const g = readHolder(guard);
    if (g !== "absent" && g !== "unreadable" && g.host === me.host && !isAlive(g.pid)) {
      try {
        unlinkSync(guard);
      } catch {
        // someone else cleared it
      }
    }
    return;
  }
  try {
    fn();
  } finally {
    unlinkSync(guard);
  }
}

function handleFor(path: string, holder: LockHolder): LockHandle {
  let released = false;
  return {
    path,
    holder,
    release() {
      if (released) return;
      released = true;
      const current = readHolder(path);
      if (
        current !== "absent" &&
        current !== "unreadable" &&
        current.pid === holder.pid &&
        current.started_at === holder.started_at
      ) {
        unlinkSync(path);
      }
    },
  };
}

/** Run `fn` under the lock, releasing it however `fn` ends. */
export async function withLock<T>(
  path: string,
  options: AcquireLockOptions,
  fn: () => Promise<T> | T,
): Promise<T> {
  const lock = acquireLock(path, options);
  try {
    return await fn();
  } finally {
    lock.release();
  }
}

/**
 * Remove the lock at `path` if a worker thread of this process holds it, one that is gone: a
 * thread stopped from outside (terminated mid-hook) never ran its release, and its process,
 * still alive, would keep the lock held for everyone until it exits. True when it did.
 */
export function clearLockOfThread(path: string, thread: number): boolean {
  const h = readHolder(path);
  if (h === "absent" || h === "unreadable") return false;
  if (h.pid !== process.pid || h.host !== hostname() || h.thread !== thread) return false;
  try {
    unlinkSync(path);
  } catch (error) {
    if (errnoCode(error) !== "ENOENT") throw fromSystemError(error, `removing lock ${path}`);
  }
  return true;
}

/** The current holder of the lock at `path`, if any (for `timewarp status`). */
export function readLockHolder(path: string): LockHolder | null {
  const h = readHolder(path);
  return h === "absent" || h === "unreadable" ? null : h;
}
