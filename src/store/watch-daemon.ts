import {
  existsSync,
  type FSWatcher,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statfsSync,
  statSync,
  utimesSync,
  watch,
} from "node:fs";
import { join } from "node:path";
import {
  acquireLock,
  effectiveExcludes,
  readConfig,
  workspacePaths,
  writeJsonAtomic,
} from "../core/index.ts";
import { createExcludeMatcher } from "./excludes.ts";
import { scanScope } from "./scan-workspace.ts";
import { type WatchDaemonInfo, type WatchPaths, watchPaths } from "./watch.ts";
import { openWatchJournal, type WatchJournal } from "./watch-journal.ts";
import { createTreeWatcher, type TreeWatcher } from "./watch-tree.ts";

export interface WatchDaemonOptions {
  /** Stop after this long without a client asking (default 2 hours). */
  idleMs?: number;
  /** Start a new journal past this size (default 16 MiB); tokens of the old one walk once. */
  maxJournalBytes?: number;
  /**
   * Watch at most this many directories (default a quarter of `fs.inotify.max_user_watches`,
   * a budget shared with every editor and tool of the user): past it the daemon stops and
   * scans walk, rather than starve an IDE's watcher.
   */
  maxWatches?: number;
  /** How often liveness (root, daemon.json, idleness) is checked (default 5 s, or idle / 2). */
  checkEveryMs?: number;
  /** Where progress lines go (default stderr, which `watch start` sends to daemon.log). */
  log?: (line: string) => void;
  /** Stops the daemon when aborted (its reason is the abort's reason). */
  signal?: AbortSignal;
  /**
   * Called once every watch is in place and `daemon.json` is published: from then on a token
   * of this daemon covers every change (the hook daemon starts its prime here).
   */
  onWatching?: () => void;
  /** When something else served by this process was last used; it counts against idleness. */
  lastActivity?: () => number;
  /**
   * Called as the daemon stops, once its watches are closed and `daemon.json` removed (scans
   * walk from then on), while it still holds its lock (what shares its lifetime). A promise
   * returned is waited for (a command still running in this process) before the lock goes.
   */
  beforeStop?: (reason: string) => void | Promise<void>;
}

function mtimeOf(path: string): number {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return 0;
  }
}

/** An inotify limit of the kernel (`/proc/sys/fs/inotify/<name>`), or `fallback` when unknown. */
function inotifyLimit(name: string, fallback: number): number {
  try {
    const n = Number(readFileSync(`/proc/sys/fs/inotify/${name}`, "utf8").trim());
    return Number.isInteger(n) && n > 0 ? n : fallback;
  } catch {
    return fallback;
  }
}

/** The kernel's inotify queue size (`fs.inotify.max_queued_events`). */
function queueCapacity(): number {
  return inotifyLimit("max_queued_events", 16_384);
}

/** statfs magic numbers of file systems whose changes inotify does not (fully) report. */
const REMOTE_FS = new Map<number, string>([
  [0x6969, "NFS"],
  [0x517b, "SMB"],
  [0xff534d42, "CIFS"],
  [0xfe534d42, "SMB2"],
  [0x65735546, "FUSE"],
  [0x01021997, "9P"],
  [0x5346414f, "AFS"],
  [0x73757245, "Coda"],
]);

/** The name of the remote or user-space file system `root` lives on, or null. */
function remoteFileSystem(root: string): string | null {
  try {
    return REMOTE_FS.get(statfsSync(root).type) ?? null;
  } catch {
    return null;
  }
}

/**
 * Run the watch daemon of the workspace at `root` until stopped (SIGTERM/SIGINT/SIGHUP), idle,
 * or its workspace or record disappears. Takes `watch/daemon.lock` (LOCKED when another daemon
 * runs), watches every non-excluded directory, then publishes `daemon.json`. Resolves with the
 * reason it stopped. See `watch.ts` for the journal protocol.
 */
function readDaemonInfo(wp: WatchPaths): WatchDaemonInfo | undefined {
  try {
    return JSON.parse(readFileSync(wp.info, "utf8")) as WatchDaemonInfo;
  } catch {
    return undefined; // removed (the data directory was deleted, or a stop by hand)
  }
}

interface LivenessOptions {
  root: string;
  wp: WatchPaths;
  configPath: string;
  scope: string;
  idleMs: number;
  /** When a client last asked (or anything else this process serves was used). */
  lastActive: () => number;
}

/**
 * The daemon's periodic check: a reason to stop (its workspace or record is gone, it is idle,
 * the config turned it off or changed its scope), or undefined after the heartbeat (`daemon.json`
 * touched: a record older than a few checks belongs to a hung or dead daemon).
 */
function createLivenessCheck(options: LivenessOptions): () => string | undefined {
  const { root, wp, configPath, scope, idleMs } = options;
  // Unset: the first check reads the config, so an edit made while the daemon was starting
  // (before this check existed) is judged too, not taken as the baseline.
  let configMtime: ReturnType<typeof mtimeOf> | undefined;
  return () => {
    if (!existsSync(root)) return "the workspace is gone";
    if (readDaemonInfo(wp)?.pid !== process.pid) return "daemon.json is gone or not ours";
    // The config before idleness: a daemon both idle and turned off says why it must not return.
    const mtime = mtimeOf(configPath);
    if (mtime !== configMtime) {
      try {
        const now = readConfig(configPath);
        // only once it reads: a config caught half-written is read again at the next check
        configMtime = mtime;
        if (!now.watch) return "watch is off in the config";
        if (scanScope(effectiveExcludes(now)) !== scope) {
          return "the excludes changed (the next hook starts a daemon with them)";
        }
      } catch {
        // a config being edited: judged at the next check
      }
    }
    if (Date.now() - options.lastActive() > idleMs) return "idle";
    const t = new Date();
    try {
      utimesSync(wp.info, t, t);
    } catch {
      // checked again next time
    }
    return undefined;
  };
}

/** What `run` returns, or undefined when it throws (handed to `failed`). */
function attempt<T>(run: () => T, failed: (error: unknown) => void): T | undefined {
  try {
    return run();
  } catch (error) {
    failed(error);
    return undefined;
  }
}

/**
 * Run the watch daemon of the workspace at `root` until stopped (SIGTERM/SIGINT/SIGHUP), idle,
 * or its workspace or record disappears. Takes `watch/daemon.lock` (LOCKED when another daemon
 * runs), watches every non-excluded directory, then publishes `daemon.json`. Resolves with the
 * reason it stopped. See `watch.ts` for the journal protocol; the parts are the journal
 * (`watch-journal.ts`), the directory watches (`watch-tree.ts`) and the liveness check below.
 */
export function runWatchDaemon(root: string, options: WatchDaemonOptions = {}): Promise<string> {
  const paths = workspacePaths(root);
  const wp = watchPaths(root);
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  mkdirSync(wp.cookies, { recursive: true });
  const lock = acquireLock(wp.lock, { command: "timewarp watch run" });
  const excludes = effectiveExcludes(readConfig(paths.config));
  const scope = scanScope(excludes);
  const idleMs = options.idleMs ?? 2 * 60 * 60_000;
  const startedAt = new Date().toISOString();
  let lastAsked = Date.now();
  let journal: WatchJournal | undefined;
  let tree: TreeWatcher | undefined;
  let cookieWatcher: FSWatcher | undefined;
  let timer: NodeJS.Timeout | undefined;
  let stopping: ((reason: string) => void) | undefined;

  const publish = (): void => {
    const info: WatchDaemonInfo = {
      pid: process.pid,
      instance: journal?.instance ?? "",
      journal: journal?.name ?? "",
      scope,
      started_at: startedAt,
      directories: tree?.size ?? 0,
    };
    writeJsonAtomic(wp.info, info, { durable: false });
  };

  const fail = (reason: string): void => {
    journal?.unsure(reason);
    journal?.flush();
    try {
      writeJsonAtomic(wp.failed, { at: new Date().toISOString(), reason }, { durable: false });
    } catch {
      // the journal line already tells clients
    }
    stopping?.(reason);
  };

  /** Cookies first: any later event is then ordered against them. */
  const watchCookies = (into: WatchJournal): FSWatcher => {
    /** Cookies already logged (their second event is our own unlink). */
    const handled = new Set<string>();
    const watcher = watch(wp.cookies, { persistent: true }, (_type, name) => {
      if (name === null || handled.has(name)) {
        if (name !== null) handled.delete(name);
        return;
      }
      handled.add(name);
      lastAsked = Date.now();
      into.cookie(name);
      rmSync(join(wp.cookies, name), { force: true });
    });
    for (const stale of readdirSync(wp.cookies)) rmSync(join(wp.cookies, stale), { force: true });
    return watcher;
  };

  const start = (): void => {
    // The cookie protocol relies on inotify's one ordered queue per process; FSEvents (macOS)
    // and ReadDirectoryChangesW (Windows) give no such order across directories.
    if (process.platform !== "linux") {
      fail(`the watch daemon needs Linux inotify; on ${process.platform} scans walk instead`);
      return;
    }
    const remote = remoteFileSystem(root);
    if (remote !== null) {
      fail(`inotify does not see every change on ${remote} file systems; scans walk instead`);
      return;
    }
    const opened = openWatchJournal({
      dir: wp.dir,
      maxBytes: options.maxJournalBytes ?? 16 * 1024 * 1024,
      onReplaced: publish,
    });
    journal = opened;
    for (const name of readdirSync(wp.dir)) {
      if (name.startsWith("journal-") && name !== opened.name) {
        rmSync(join(wp.dir, name), { force: true });
      }
    }
    cookieWatcher = watchCookies(opened);
    tree = createTreeWatcher({
      root,
      excluded: createExcludeMatcher(excludes),
      maxWatches: options.maxWatches ?? Math.floor(inotifyLimit("max_user_watches", 8_192) / 4),
      overflowAt: Math.floor(queueCapacity() / 2),
      journal: opened,
      fail,
    });
    tree.watchTree("");
    if (stopping === undefined) return; // failed while setting up
    // (logged first: whoever finds the record finds this line)
    log(
      `timewarp watch: watching ${tree.size} directories of ${root} (pid ${process.pid}; ${tree.raw ? "inotify handles" : "fs.watch"})`,
    );
    publish();
    rmSync(wp.failed, { force: true });
    attempt(
      () => options.onWatching?.(),
      (error) => log(`timewarp watch: ${String(error)}`),
    );
    const check = createLivenessCheck({
      root,
      wp,
      configPath: paths.config,
      scope,
      idleMs,
      lastActive: () => Math.max(lastAsked, options.lastActivity?.() ?? 0),
    });
    timer = setInterval(
      () => {
        const reason = check();
        if (reason !== undefined) stopping?.(reason);
      },
      options.checkEveryMs ?? Math.min(5_000, Math.max(50, idleMs / 2)),
    );
  };

  return new Promise<string>((resolve, reject) => {
    const onSignal = (signal: string) => () => stopping?.(`signal ${signal}`);
    const handlers = {
      SIGTERM: onSignal("SIGTERM"),
      SIGINT: onSignal("SIGINT"),
      SIGHUP: onSignal("SIGHUP"),
    };
    const onAbort = (): void => stopping?.(String(options.signal?.reason ?? "aborted"));
    stopping = (reason: string) => {
      stopping = undefined;
      if (timer !== undefined) clearInterval(timer);
      cookieWatcher?.close();
      tree?.unwatchTree("");
      journal?.flush();
      for (const [signal, handler] of Object.entries(handlers)) process.off(signal, handler);
      options.signal?.removeEventListener("abort", onAbort);
      if (readDaemonInfo(wp)?.pid === process.pid) rmSync(wp.info, { force: true });
      const end = (): void => {
        journal?.close();
        lock.release();
        log(`timewarp watch: stopped (${reason})`);
        resolve(reason);
      };
      const failed = (error: unknown) => log(`timewarp watch: ${String(error)}`);
      const after = attempt(() => options.beforeStop?.(reason), failed);
      if (after instanceof Promise) after.catch(failed).finally(end);
      else end();
    };
    for (const [signal, handler] of Object.entries(handlers)) process.on(signal, handler);
    options.signal?.addEventListener("abort", onAbort);

    try {
      start();
    } catch (error) {
      stopping?.(`failed to start: ${String(error)}`);
      reject(error);
    }
  });
}
