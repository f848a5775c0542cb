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
import { resolve } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { threadId } from "node:worker_threads";
import { z } from "zod";
import { tempPathFor } from "./atomic-write.ts";
import { ErrorCode, errnoCode, fromSystemError, isTimewarpError, TimewarpError } from "./errors.ts";
import { isProcessAlive, isSameProcess, type Liveness, processStartOf } from "./process-alive.ts";

export const LockHolderSchema = z.object({
  pid: z.number().int(),
  host: z.string(),
  started_at: z.string(),
  command: z.string().optional(),
  /** The worker thread that holds it, when not the main thread (`clearLockOfThread`). */
  thread: z.number().int().optional(),
  /**
   * When the holder process started (`processStartOf`), where the OS tells: a live process with
   * the holder's pid but another start time reuses the pid, and the lock is stale. Absent in
   * locks of older versions (then the pid alone decides).
   */
  process_start: z.string().optional(),
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
  /** Injected for tests: when did the process with this pid start (see `processStartOf`)? */
  startOf?: (pid: number) => string | null;
  now?: () => Date;
}

function livenessOf(options: AcquireLockOptions): Liveness {
  return { isAlive: options.isAlive ?? isProcessAlive, startOf: options.startOf ?? processStartOf };
}

/**
 * A holder on this host is gone when its pid is, or when that pid now belongs to a process that
 * started at another time (pid reuse). A holder on another host is never provably gone.
 */
function isGone(holder: LockHolder, me: LockHolder, live: Liveness): boolean {
  if (holder.host !== me.host) return false;
  if (holder.process_start === undefined) return !live.isAlive(holder.pid);
  return !isSameProcess(holder.pid, holder.process_start, live);
}

let ownStart: string | null | undefined;

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
 * Take the inter-process lock at `path` (O_EXCL create; the file holds pid, host, start time,
 * and the holder process's own start time). Fails at once, never waits: for a synchronous
 * section; code that holds a lock across `await`s takes it with `acquireLockQueued`. A lock whose
 * holder is provably gone (same host, and no such pid, or that pid now names a process that
 * started at another time) is taken over; any other held lock is `LOCKED` naming the holder. The record is published whole (see `tryCreate`); a lock
 * file that is nonetheless unreadable (damaged by hand, or left by an older version) counts as
 * stale only once it is older than a few seconds.
 */
export function acquireLock(path: string, options: AcquireLockOptions = {}): LockHandle {
  const live = livenessOf(options);
  const now = options.now ?? (() => new Date());
  if (ownStart === undefined) ownStart = processStartOf(process.pid);
  const me: LockHolder = {
    pid: process.pid,
    host: hostname(),
    started_at: now().toISOString(),
    command: options.command,
    ...(threadId === 0 ? {} : { thread: threadId }),
    ...(ownStart === null ? {} : { process_start: ownStart }),
  };
  for (let attempt = 0; attempt < 5; attempt++) {
    if (tryCreate(path, me)) return handleFor(path, me);
    const holder = readHolder(path);
    if (holder === "absent") continue;
    if (holder === "unreadable") {
      if (tornAndOld(path, now())) {
        clearTorn(path, me, live);
        continue;
      }
      throw new TimewarpError(
        ErrorCode.LOCKED,
        `lock ${path} is being created by another process (or was left torn); retry, or delete it if no timewarp process runs`,
        { data: { path } },
      );
    }
    if (!isGone(holder, me, live)) {
      throw new TimewarpError(
        ErrorCode.LOCKED,
        `workspace is locked by pid ${holder.pid} on ${holder.host} since ${holder.started_at}` +
          (holder.command ? ` (${holder.command})` : ""),
        { data: { path, holder } },
      );
    }
    takeOverStale(path, holder, me, live);
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

function clearTorn(path: string, me: LockHolder, live: Liveness): void {
  withTakeoverGuard(path, me, live, () => {
    if (readHolder(path) === "unreadable") unlinkSync(path);
  });
}

/**
 * Remove a stale lock under a short-lived takeover guard, so two processes that both found the
 * same stale lock cannot each delete the lock the other has just created.
 */
function takeOverStale(path: string, stale: LockHolder, me: LockHolder, live: Liveness): void {
  withTakeoverGuard(path, me, live, () => {
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

function withTakeoverGuard(path: string, me: LockHolder, live: Liveness, fn: () => void): void {
  const guard = `${path}.takeover`;
  if (!tryCreate(guard, me)) {
    const g = readHolder(guard);
    if (g !== "absent" && g !== "unreadable" && isGone(g, me, live)) {
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

export interface WaitForLockOptions extends AcquireLockOptions {
  /** How long to wait for another process (or thread) to release the lock, then LOCKED (default 10 s). */
  waitMs?: number;
}

const DEFAULT_WAIT_MS = 10_000;

const pause = new Int32Array(new SharedArrayBuffer(4));

/**
 * `acquireLock`, retried every 20 ms while another process holds the lock, up to `waitMs`
 * (then its LOCKED). Synchronous (`Atomics.wait`): only for a thread whose own loop cannot be
 * what holds the lock (a CLI process, a child); `stopWaiting` ends the wait at once on a LOCKED
 * it is given (a hold by this very thread, which waiting would never see released).
 */
export function acquireLockWaiting(
  path: string,
  options: WaitForLockOptions & { stopWaiting?: (error: TimewarpError) => boolean } = {},
): LockHandle {
  const deadline = Date.now() + (options.waitMs ?? DEFAULT_WAIT_MS);
  for (;;) {
    try {
      return acquireLock(path, options);
    } catch (error) {
      if (!isTimewarpError(error, ErrorCode.LOCKED) || Date.now() >= deadline) throw error;
      if (options.stopWaiting?.(error)) throw error;
    }
    Atomics.wait(pause, 0, 0, 20);
  }
}

/** Per lock file (absolute path): the tail of this thread's queue of callers for it. */
const queues = new Map<string, Promise<void>>();

/**
 * Take the lock at `path` without ever blocking the event loop, for code that holds a lock
 * across `await`s or runs in a long-lived process (the MCP server, the watch daemon's hook
 * worker). Callers in this thread queue in memory, first come first served, so they never
 * contend on the file: the next one takes it once the previous one released it. A hold by
 * another process (or thread) is waited for with timers, up to `waitMs`, then LOCKED naming it.
 * A synchronous wait (`Atomics.wait`) froze the very loop the holder needed to finish: three
 * parallel MCP edits took 10 s and one failed LOCKED by the server itself (issue 16, class 5).
 */
export async function acquireLockQueued(
  path: string,
  options: WaitForLockOptions = {},
): Promise<LockHandle> {
  const key = resolve(path);
  const before = queues.get(key) ?? Promise.resolve();
  let leave = () => {};
  const turn = new Promise<void>((done) => {
    leave = done;
  });
  const tail = before.then(() => turn);
  queues.set(key, tail);
  const leaveQueue = () => {
    leave();
    if (queues.get(key) === tail) queues.delete(key);
  };
  await before;
  let file: LockHandle;
  try {
    file = await waitForFile(path, options);
  } catch (error) {
    leaveQueue();
    throw error;
  }
  let released = false;
  return {
    path: file.path,
    holder: file.holder,
    release() {
      if (released) return;
      released = true;
      try {
        file.release();
      } finally {
        leaveQueue();
      }
    },
  };
}

async function waitForFile(path: string, options: WaitForLockOptions): Promise<LockHandle> {
  const deadline = Date.now() + (options.waitMs ?? DEFAULT_WAIT_MS);
  let delay = 1;
  for (;;) {
    try {
      return acquireLock(path, options);
    } catch (error) {
      if (!isTimewarpError(error, ErrorCode.LOCKED) || Date.now() >= deadline) throw error;
    }
    await sleep(delay);
    delay = Math.min(delay * 2, 25);
  }
}

/**
 * Run `fn` under the lock taken by `acquireLockQueued` (queued in this thread, waited for
 * across processes without blocking), releasing it however `fn` ends.
 */
export async function withLock<T>(
  path: string,
  options: WaitForLockOptions,
  fn: () => Promise<T> | T,
): Promise<T> {
  const lock = await acquireLockQueued(path, options);
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
