import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import {
  closeSync,
  existsSync,
  fstatSync,
  mkdirSync,
  openSync,
  readFileSync,
  readSync,
  rmSync,
  statSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { join } from "node:path";
import {
  errnoCode,
  isProcessAlive,
  isSameProcess,
  readConfig,
  readLockHolder,
  workspacePaths,
} from "../core/index.ts";

/**
 * The file watcher's protocol (`timewarp watch`): a daemon per workspace keeps an inotify
 * watch on every non-excluded directory and appends each path it hears about to a journal;
 * a scan asks "what changed since my token" and visits only those paths instead of walking
 * the tree (git's fsmonitor idea, with files instead of a socket so the synchronous scan path
 * can ask). The daemon is only ever an accelerator: when it is absent, slow, of another scope
 * or unsure (its journal says `F`), the answer is "unknown" and the scan walks.
 *
 * Journal lines: `P <json path>` a path that may have changed; `C <name>` a client's cookie
 * (every event before the cookie's creation is above this line: one inotify queue, in order);
 * `F <json reason>` anything may have changed. A token is `<instance>:<byte offset>`, always
 * right after a cookie line.
 */

export interface WatchPaths {
  dir: string;
  /** Written by the daemon once every watch is in place; removed when it stops. */
  info: string;
  cookies: string;
  lock: string;
  log: string;
  /** When a daemon could not run (inotify limit): starters wait before trying again. */
  failed: string;
  /** Touched at each start: hooks do not start another one moments later. */
  started: string;
}

export function watchPaths(root: string): WatchPaths {
  const dir = join(workspacePaths(root).data, "watch");
  return {
    dir,
    info: join(dir, "daemon.json"),
    cookies: join(dir, "cookies"),
    lock: join(dir, "daemon.lock"),
    log: join(dir, "daemon.log"),
    failed: join(dir, "failed.json"),
    started: join(dir, "last-start"),
  };
}

/** `daemon.json`: who watches, with which scope, writing which journal. */
export interface WatchDaemonInfo {
  pid: number;
  instance: string;
  journal: string;
  scope: string;
  started_at: string;
  directories: number;
}

/** A daemon touches `daemon.json` every few seconds; a record older than this is not trusted. */
const HEARTBEAT_STALE_MS = 30_000;

/**
 * The running daemon's record, or null when none is running: absent, unreadable, its pid gone,
 * or its heartbeat stale (a hung daemon, or a pid reused by another process after a kill -9).
 */
export function runningWatchDaemon(root: string): WatchDaemonInfo | null {
  const file = watchPaths(root).info;
  let info: WatchDaemonInfo;
  try {
    info = JSON.parse(readFileSync(file, "utf8")) as WatchDaemonInfo;
    if (Date.now() - statSync(file).mtimeMs > HEARTBEAT_STALE_MS) return null;
  } catch {
    return null;
  }
  if (typeof info.pid !== "number" || typeof info.instance !== "string") return null;
  return isProcessAlive(info.pid) ? info : null;
}

export interface WatchedChanges {
  /** Paths that may have changed since the token; undefined: unknown, walk the tree. */
  changed: string[] | undefined;
  /** The position to keep with the scan's result; undefined when no daemon answered. */
  token: string | undefined;
  /** Why `changed` is unknown, when it is. */
  reason?: string;
}

/** Past this many changed paths a walk is as cheap as visiting them one by one. */
const MAX_CHANGED = 50_000;
const DEFAULT_TIMEOUT_MS = 300;
const sleeper = new Int32Array(new SharedArrayBuffer(4));

function unknown(reason: string, token?: string): WatchedChanges {
  return { changed: undefined, token, reason };
}

/**
 * What changed in the workspace since `token` (a previous answer's), as the watch daemon saw
 * it. Synchronous: creates a cookie file, waits (at most `timeoutMs`) until the daemon logs
 * it, and reads the journal lines in between. A token of another daemon instance, or none,
 * yields `changed: undefined` with a fresh token: the caller walks once, and from then on
 * asks with that token.
 */
export function watchedChanges(
  root: string,
  token: string | undefined,
  scope: string,
  options: { timeoutMs?: number } = {},
): WatchedChanges {
  const wp = watchPaths(root);
  const info = runningWatchDaemon(root);
  if (info === null) return unknown("no watch daemon runs");
  if (info.scope !== scope) return unknown("the watch daemon runs with other excludes");
  let fd: number;
  try {
    fd = openSync(join(wp.dir, info.journal), "r");
  } catch {
    return unknown("the watch journal is unreadable");
  }
  const cookie = `${process.pid}-${randomBytes(4).toString("hex")}`;
  const cookiePath = join(wp.cookies, cookie);
  try {
    const size = fstatSync(fd).size;
    const sep = token?.lastIndexOf(":") ?? -1;
    const sameInstance = sep > 0 && token?.slice(0, sep) === info.instance;
    const from = sameInstance ? Number(token?.slice(sep + 1)) : Number.NaN;
    let full = !(Number.isSafeInteger(from) && from >= 0 && from <= size);
    let pos = full ? size : from;
    try {
      writeFileSync(cookiePath, "", { flag: "wx" });
    } catch (error) {
      return unknown(`cannot write a watch cookie (${errnoCode(error) ?? String(error)})`);
    }
    const wanted = `C ${cookie}`;
    const paths = new Set<string>();
    const deadline = performance.now() + (options.timeoutMs ?? DEFAULT_TIMEOUT_MS);
    const chunk = Buffer.allocUnsafe(64 * 1024);
    let pending = "";
    let waitMs = 0.05;
    for (;;) {
      const n = readSync(fd, chunk, 0, chunk.length, pos);
      if (n > 0) {
        // The journal is ASCII (the daemon escapes every other character), so string offsets
        // are byte offsets and a chunk boundary never splits a character.
        const text = pending + chunk.toString("latin1", 0, n);
        const base = pos - pending.length;
        let start = 0;
        for (;;) {
          const nl = text.indexOf("\n", start);
          if (nl < 0) break;
          const line = text.slice(start, nl);
          const consumed = base + nl + 1;
          start = nl + 1;
          if (line === wanted) {
            const changed = [...paths];
            if (full)
              return unknown("first answer of this watch daemon", `${info.instance}:${consumed}`);
            if (changed.length > MAX_CHANGED) {
              return unknown(
                "too many changes to visit one by one",
                `${info.instance}:${consumed}`,
              );
            }
            return { changed, token: `${info.instance}:${consumed}` };
          }
          if (line.startsWith("P ")) {
            try {
              paths.add(JSON.parse(line.slice(2)) as string);
            } catch {
              full = true;
            }
          } else if (line.startsWith("F")) full = true;
        }
        pending = text.slice(start);
        pos += n;
        continue;
      }
      if (performance.now() >= deadline) {
        rmSync(cookiePath, { force: true });
        return unknown("the watch daemon did not answer in time");
      }
      Atomics.wait(sleeper, 0, 0, waitMs);
      waitMs = Math.min(waitMs * 2, 2);
    }
  } finally {
    closeSync(fd);
  }
}

export interface StartWatchOptions {
  /** The command that runs `timewarp watch run` for this workspace. */
  command: readonly string[];
  /** Wait until the daemon's watches are in place (or it failed); default false. */
  wait?: boolean;
  waitMs?: number;
}

export interface StartWatchResult {
  started: boolean;
  pid: number | null;
  /** Why no daemon was started or none is ready. */
  reason?: string;
}

/** How long starters leave a workspace alone after its daemon could not run. */
const FAILED_BACKOFF_MS = 10 * 60_000;
const RESPAWN_GAP_MS = 30_000;

/**
 * Start the watch daemon of `root` in the background unless one runs (or one failed a moment
 * ago). With `wait`, returns once its `daemon.json` is written; otherwise at once (hooks).
 */
export function startWatchDaemon(root: string, options: StartWatchOptions): StartWatchResult {
  if (process.platform !== "linux") {
    return {
      started: false,
      pid: null,
      reason: `no watch daemon on ${process.platform} (Linux only)`,
    };
  }
  const running = runningWatchDaemon(root);
  if (running !== null) return { started: false, pid: running.pid, reason: "already running" };
  const wp = watchPaths(root);
  // One that holds the daemon's lock but has not written daemon.json yet is still walking the
  // tree (seconds at 100k files): a second one would only fail on the lock.
  const starting = startingDaemon(wp.lock);
  if (starting !== null) return { started: false, pid: starting, reason: "already starting" };
  try {
    const failed = JSON.parse(readFileSync(wp.failed, "utf8")) as { at: string; reason: string };
    if (Date.now() - Date.parse(failed.at) < FAILED_BACKOFF_MS) {
      return { started: false, pid: null, reason: `last run failed: ${failed.reason}` };
    }
  } catch {
    // no recent failure
  }
  if (options.wait !== true) {
    // Hooks start one in passing: not again while the last one is only moments old (a daemon
    // that dies at start must not be respawned by every tool call).
    try {
      if (Date.now() - statSync(wp.started).mtimeMs < RESPAWN_GAP_MS) {
        return { started: false, pid: null, reason: "a daemon was started moments ago" };
      }
    } catch {
      // never started here
    }
  }
  mkdirSync(wp.cookies, { recursive: true });
  writeFileSync(wp.started, `${new Date().toISOString()}\n`);
  const log = openSync(wp.log, "a");
  writeSync(log, `${new Date().toISOString()} starting: ${options.command.join(" ")}\n`);
  const [exe, ...args] = options.command;
  const child = spawn(exe as string, args, {
    cwd: root,
    env: { ...DAEMON_MALLOC, ...process.env },
    detached: true,
    stdio: ["ignore", log, log],
  });
  closeSync(log);
  child.unref();
  const pid = child.pid ?? null;
  if (options.wait !== true) return { started: true, pid };
  const deadline = Date.now() + (options.waitMs ?? 10_000);
  while (Date.now() < deadline) {
    const info = runningWatchDaemon(root);
    if (info !== null && info.pid === pid) return { started: true, pid };
    if (pid !== null && !isProcessAlive(pid)) {
      // Another start won the lock meanwhile (a hook's, a snapshot's): that one is the daemon.
      const other = startingDaemon(wp.lock) ?? runningWatchDaemon(root)?.pid ?? null;
      if (other !== null && other !== pid)
        return { started: false, pid: other, reason: "already starting" };
      return { started: false, pid: null, reason: `it exited; see ${wp.log}` };
    }
    Atomics.wait(sleeper, 0, 0, 10);
  }
  return { started: true, pid, reason: "not ready yet" };
}

/**
 * glibc's malloc tuned for the long-lived daemon (issue 22, item 5: ≤ 120 MiB with its worker
 * at 100k files), unless the user set these: a fixed mmap threshold, so that a large buffer (a
 * 20 MB manifest text, a file read) is mapped on its own and unmapped when freed; glibc's
 * default raises the threshold after each such free, and later ones stay in the worker's arena,
 * never given back. Measured at 100k after status, history, snapshot list and diff, two
 * snapshots, a travel and a return: RSS 170 → 128 MiB (RssAnon 126 → 84) five seconds after,
 * warm 121 → 104. Other C libraries ignore them.
 */
const DAEMON_MALLOC = {
  MALLOC_MMAP_THRESHOLD_: "131072",
  MALLOC_TRIM_THRESHOLD_: "131072",
};

/** The pid of a live process holding the daemon's lock (a daemon starting or running), or null. */
function startingDaemon(lock: string): number | null {
  try {
    const holder = readLockHolder(lock);
    if (holder === null) return null;
    const live =
      holder.process_start === undefined
        ? isProcessAlive(holder.pid)
        : isSameProcess(holder.pid, holder.process_start);
    return live ? holder.pid : null;
  } catch {
    return null;
  }
}

/**
 * Start the workspace's watch daemon in the background when none runs, the workspace has its
 * `.timewarp/`, and neither the config (`watch: false`) nor `TIMEWARP_WATCH=0` says no. What
 * hooks and `snapshot create` call on their way out. Best effort, never throws: without a
 * daemon, scans walk the tree, which is slower and just as right.
 */
export function ensureWatchDaemon(root: string, command: () => readonly string[]): void {
  if (process.env.TIMEWARP_WATCH === "0") return;
  try {
    if (runningWatchDaemon(root) !== null) return;
    const paths = workspacePaths(root);
    if (!existsSync(paths.data)) return; // not a timewarp workspace (yet)
    if (!readConfig(paths.config).watch) return;
    startWatchDaemon(root, { command: command() });
  } catch {
    // never a reason to fail the command that asked
  }
}

/** Stop the running daemon (SIGTERM) and wait for it to go; false when none ran. */
export function stopWatchDaemon(root: string, waitMs = 5_000): boolean {
  const info = runningWatchDaemon(root);
  if (info === null) return false;
  try {
    process.kill(info.pid, "SIGTERM");
  } catch {
    return false;
  }
  const deadline = Date.now() + waitMs;
  while (Date.now() < deadline && isProcessAlive(info.pid)) Atomics.wait(sleeper, 0, 0, 10);
  return true;
}
