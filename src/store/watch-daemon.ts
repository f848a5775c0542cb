import { randomBytes } from "node:crypto";
import {
  closeSync,
  existsSync,
  type FSWatcher,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  statfsSync,
  statSync,
  utimesSync,
  watch,
  writeSync,
} from "node:fs";
import { join } from "node:path";
import {
  acquireLock,
  effectiveExcludes,
  errnoCode,
  readConfig,
  workspacePaths,
  writeJsonAtomic,
} from "../core/index.ts";
import { createExcludeMatcher } from "./excludes.ts";
import { scanScope } from "./scan-workspace.ts";
import { type WatchDaemonInfo, watchPaths } from "./watch.ts";

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
  /** When something else served by this process was last used; it counts against idleness. */
  lastActivity?: () => number;
  /** Called as the daemon stops, while it still holds its lock (what shares its lifetime). */
  beforeStop?: (reason: string) => void;
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

/** JSON with every non-ASCII character escaped: the journal stays ASCII (see `watch.ts`). */
function asciiJson(text: string): string {
  return JSON.stringify(text).replace(
    /[\u007f-\uffff]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}

/**
 * Run the watch daemon of the workspace at `root` until stopped (SIGTERM/SIGINT/SIGHUP), idle,
 * or its workspace or record disappears. Takes `watch/daemon.lock` (LOCKED when another daemon
 * runs), watches every non-excluded directory, then publishes `daemon.json`. Resolves with the
 * reason it stopped. See `watch.ts` for the journal protocol.
 */
export function runWatchDaemon(root: string, options: WatchDaemonOptions = {}): Promise<string> {
  const paths = workspacePaths(root);
  const wp = watchPaths(root);
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  mkdirSync(wp.cookies, { recursive: true });
  const lock = acquireLock(wp.lock, { command: "timewarp watch run" });
  const config = readConfig(paths.config);
  const excludes = effectiveExcludes(config);
  const excluded = createExcludeMatcher(excludes);
  const scope = scanScope(excludes);
  const idleMs = options.idleMs ?? 2 * 60 * 60_000;
  const overflowAt = Math.floor(queueCapacity() / 2);
  const maxWatches = options.maxWatches ?? Math.floor(inotifyLimit("max_user_watches", 8_192) / 4);
  let configMtime = mtimeOf(paths.config);
  const maxJournal = options.maxJournalBytes ?? 16 * 1024 * 1024;

  const watchers = new Map<string, { watcher: FSWatcher; ino: number }>();
  const startedAt = new Date().toISOString();
  let instance = "";
  let journalName = "";
  let journalFd = -1;
  let lines: string[] = [];
  let flushQueued = false;
  /** Paths already logged since the last cookie: one line each suffices (tokens sit on cookies). */
  let recent = new Set<string>();
  let lastAsked = Date.now();
  let stopping: ((reason: string) => void) | undefined;

  let journalBytes = 0;
  const flush = (): void => {
    flushQueued = false;
    if (lines.length === 0 || journalFd < 0) return;
    const text = `${lines.join("\n")}\n`;
    lines = [];
    writeSync(journalFd, text);
    journalBytes += text.length;
    // A new journal (and instance) past the limit: clients holding tokens of the old one walk
    // once. Checked here, not only when a client asks, so hours of churn cannot fill the disk.
    if (journalBytes > maxJournal) {
      openJournal();
      publish();
    }
  };
  const append = (line: string): void => {
    lines.push(line);
    if (!flushQueued) {
      flushQueued = true;
      setImmediate(flush);
    }
  };
  const fail = (reason: string): void => {
    append(`F ${asciiJson(reason)}`);
    flush();
    try {
      writeJsonAtomic(wp.failed, { at: new Date().toISOString(), reason }, { durable: false });
    } catch {
      // the journal line already tells clients
    }
    stopping?.(reason);
  };

  const publish = (): void => {
    const info: WatchDaemonInfo = {
      pid: process.pid,
      instance,
      journal: journalName,
      scope,
      started_at: startedAt,
      directories: watchers.size,
    };
    writeJsonAtomic(wp.info, info, { durable: false });
  };

  const openJournal = (): void => {
    const old = journalName;
    if (journalFd >= 0) closeSync(journalFd);
    instance = `${randomBytes(6).toString("hex")}`;
    journalName = `journal-${instance}.log`;
    journalFd = openSync(join(wp.dir, journalName), "a");
    journalBytes = 0;
    recent = new Set();
    if (old !== "") rmSync(join(wp.dir, old), { force: true });
  };

  const unwatchTree = (rel: string): void => {
    for (const [dir, w] of watchers) {
      if (dir === rel || (rel === "" ? true : dir.startsWith(`${rel}/`))) {
        w.watcher.close();
        watchers.delete(dir);
      }
    }
  };

  /**
   * The kernel queues at most `max_queued_events` inotify events and, past that, drops the rest
   * with one overflow notice that Node's fs.watch does not pass on. Events are read in one go
   * per turn of the event loop, so a turn that delivers a large part of the queue's capacity
   * may have lost some: say `F` (clients walk once) rather than trust the journal.
   */
  let burst = 0;
  let burstResetQueued = false;
  let burstReported = false;
  const countEvent = (): void => {
    burst++;
    if (!burstResetQueued) {
      burstResetQueued = true;
      setImmediate(() => {
        burst = 0;
        burstResetQueued = false;
        burstReported = false;
      });
    }
    if (burst >= overflowAt && !burstReported) {
      burstReported = true;
      append(
        `F ${asciiJson(`${burst} events in one burst: the inotify queue may have overflowed`)}`,
      );
    }
  };

  const onEvent = (dirRel: string, type: string, name: Buffer | string | null): void => {
    countEvent();
    if (name === null) {
      if (dirRel === "") fail("an event on the workspace root without a name");
      else logPath(dirRel);
      return;
    }
    const raw = typeof name === "string" ? Buffer.from(name, "utf8") : name;
    const text = raw.toString("utf8");
    // A name that is not UTF-8: report its directory (scans walk such trees byte-exactly).
    if (!Buffer.from(text, "utf8").equals(raw)) {
      if (dirRel === "") fail("a name that is not UTF-8 in the workspace root");
      else logPath(dirRel);
      return;
    }
    if (dirRel === "" && text === ".timewarp") return;
    const rel = dirRel === "" ? text : `${dirRel}/${text}`;
    logPath(rel);
    if (type === "rename") syncWatches(rel, text);
  };

  const logPath = (rel: string): void => {
    if (recent.has(rel)) return;
    recent.add(rel);
    append(`P ${asciiJson(rel)}`);
  };

  /** After a create, delete or move of `rel`: watch it (and below) if it is now a directory. */
  const syncWatches = (rel: string, name: string): void => {
    let ino: number | undefined;
    try {
      const st = lstatSync(join(root, rel));
      if (st.isDirectory() && !excluded(rel, name, true)) ino = st.ino;
    } catch {
      // gone
    }
    const have = watchers.get(rel);
    if (have === undefined && ino === undefined) return; // a file: nothing was or is watched
    if (have !== undefined && have.ino === ino) return;
    if (have !== undefined) unwatchTree(rel);
    if (ino !== undefined) watchTree(rel);
  };

  /** Watch `rel` and every non-excluded directory below it. */
  const watchTree = (top: string): void => {
    const stack = [top];
    while (stack.length > 0) {
      if (watchers.size >= maxWatches) {
        fail(
          `the workspace has more directories than this daemon's share of inotify watches (${maxWatches}, a quarter of fs.inotify.max_user_watches); scans walk instead`,
        );
        return;
      }
      const rel = stack.pop() as string;
      const abs = rel === "" ? root : join(root, rel);
      let watcher: FSWatcher;
      let ino: number;
      try {
        ino = lstatSync(abs).ino;
        watcher = watch(abs, { persistent: true, encoding: "buffer" }, (type, name) =>
          onEvent(rel, type, name),
        );
      } catch (error) {
        const code = errnoCode(error);
        if (code === "ENOENT" || code === "ENOTDIR") continue; // gone meanwhile: its parent saw it
        // Unreadable: a scan lists it as skipped and revisits it every time; nothing to watch.
        if (code === "EACCES" || code === "EPERM") continue;
        if (code === "ENOSPC") {
          fail(
            `the inotify watch limit is reached (${watchers.size} directories watched; raise fs.inotify.max_user_watches)`,
          );
        } else fail(`cannot watch ${rel === "" ? "the workspace root" : rel}: ${code ?? error}`);
        return;
      }
      watcher.on("error", (error) => {
        // A watched directory removed under us reports an error on some kernels: its parent's
        // event already said so; anything else leaves the watcher unsure.
        if (existsSync(abs)) fail(`watcher error on ${rel || "."}: ${String(error)}`);
      });
      watchers.set(rel, { watcher, ino });
      let names: string[];
      try {
        names = readdirSync(abs, { withFileTypes: true })
          .filter((d) => d.isDirectory())
          .map((d) => d.name);
      } catch {
        continue;
      }
      for (const name of names) {
        if (rel === "" && name === ".timewarp") continue;
        if (name.includes("\uFFFD")) continue; // scans walk such trees; see onEvent
        const child = rel === "" ? name : `${rel}/${name}`;
        if (!excluded(child, name, true)) stack.push(child);
      }
    }
  };

  /** Cookies already logged (their second event is our own unlink). */
  const handled = new Set<string>();
  let cookieWatcher: FSWatcher | undefined;
  let timer: NodeJS.Timeout | undefined;

  return new Promise<string>((resolve, reject) => {
    const onSignal = (signal: string) => () => stopping?.(`signal ${signal}`);
    const handlers = {
      SIGTERM: onSignal("SIGTERM"),
      SIGINT: onSignal("SIGINT"),
      SIGHUP: onSignal("SIGHUP"),
    };
    stopping = (reason: string) => {
      stopping = undefined;
      if (timer !== undefined) clearInterval(timer);
      cookieWatcher?.close();
      unwatchTree("");
      flush();
      for (const [signal, handler] of Object.entries(handlers)) process.off(signal, handler);
      options.signal?.removeEventListener("abort", onAbort);
      try {
        options.beforeStop?.(reason);
      } catch (error) {
        log(`timewarp watch: ${String(error)}`);
      }
      try {
        const info = JSON.parse(readFileSync(wp.info, "utf8")) as WatchDaemonInfo;
        if (info.pid === process.pid) rmSync(wp.info, { force: true });
      } catch {
        // not ours or gone
      }
      if (journalFd >= 0) closeSync(journalFd);
      journalFd = -1;
      rmSync(join(wp.dir, journalName), { force: true });
      lock.release();
      log(`timewarp watch: stopped (${reason})`);
      resolve(reason);
    };
    const onAbort = (): void => stopping?.(String(options.signal?.reason ?? "aborted"));
    for (const [signal, handler] of Object.entries(handlers)) process.on(signal, handler);
    options.signal?.addEventListener("abort", onAbort);

    try {
      start();
    } catch (error) {
      stopping?.(`failed to start: ${String(error)}`);
      reject(error);
    }
  });

  function start(): void {
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
    openJournal();
    for (const name of readdirSync(wp.dir)) {
      if (name.startsWith("journal-") && name !== journalName) {
        rmSync(join(wp.dir, name), { force: true });
      }
    }
    // Cookies first: any later event is then ordered against them.
    cookieWatcher = watch(wp.cookies, { persistent: true }, (_type, name) => {
      if (name === null || handled.has(name)) {
        if (name !== null) handled.delete(name); // the second event: our own unlink
        return;
      }
      handled.add(name);
      lastAsked = Date.now();
      lines.push(`C ${name}`);
      flush();
      recent = new Set();
      rmSync(join(wp.cookies, name), { force: true });
    });
    for (const stale of readdirSync(wp.cookies)) rmSync(join(wp.cookies, stale), { force: true });
    watchTree("");
    if (stopping === undefined) return; // failed while setting up
    publish();
    rmSync(wp.failed, { force: true });
    log(`timewarp watch: watching ${watchers.size} directories of ${root} (pid ${process.pid})`);
    timer = setInterval(
      () => {
        if (!existsSync(root)) return stopping?.("the workspace is gone");
        let info: WatchDaemonInfo | undefined;
        try {
          info = JSON.parse(readFileSync(wp.info, "utf8")) as WatchDaemonInfo;
        } catch {
          // removed (the data directory was deleted, or a stop by hand)
        }
        if (info?.pid !== process.pid) return stopping?.("daemon.json is gone or not ours");
        const active = Math.max(lastAsked, options.lastActivity?.() ?? 0);
        if (Date.now() - active > idleMs) return stopping?.("idle");
        const mtime = mtimeOf(paths.config);
        if (mtime !== configMtime) {
          configMtime = mtime;
          try {
            const now = readConfig(paths.config);
            if (!now.watch) return stopping?.("watch is off in the config");
            if (scanScope(effectiveExcludes(now)) !== scope) {
              return stopping?.("the excludes changed (the next hook starts a daemon with them)");
            }
          } catch {
            // a config being edited: judged at the next check
          }
        }
        // The heartbeat: a record older than a few checks belongs to a hung or dead daemon.
        const t = new Date();
        try {
          utimesSync(wp.info, t, t);
        } catch {
          // checked again next time
        }
      },
      options.checkEveryMs ?? Math.min(5_000, Math.max(50, idleMs / 2)),
    );
  }
}
