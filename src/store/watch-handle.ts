import { watch } from "node:fs";
import { getSystemErrorName } from "node:util";

/**
 * One inotify watch on one directory, as the tree watcher keeps 24.8k of them at 100k files
 * (issue 22, item 5: the daemon ≤ 120 MiB with its worker).
 *
 * `fs.watch` wraps each watch in an `FSWatcher`: an EventEmitter with its listeners' table and a
 * closure of its own around the handle, ~470 bytes of heap per directory (+29 MiB of the
 * daemon's resident memory at 100k files, +22 MiB with its V8 flags). The handle under it,
 * `FSEvent` from Node's `fs_event_wrap` binding, is what `fs.watch` itself starts, and costs
 * ~120 bytes: +13 MiB. It is reached through `process.binding`, which Node keeps for such
 * bindings but calls deprecated (DEP0111: documentation only, a warning under
 * `--pending-deprecation`), so it is used only where it is there, behaves as expected and
 * would not warn; otherwise `fs.watch`, with the same events.
 */
export interface DirWatch {
  close(): void;
}

/**
 * What a watch reports: `this` is the watch (one listener serves every directory). `name` is the
 * entry's name as bytes, or null when the kernel gave none.
 */
export type DirWatchListener = (this: DirWatch, type: string, name: Buffer | null) => void;
/** The watch failed after it started (it is closed). */
export type DirWatchErrorListener = (this: DirWatch, error: Error) => void;

interface RawHandle extends DirWatch {
  start(path: string, persistent: boolean, recursive: boolean, encoding: string): number;
  onchange: ((this: RawHandle, status: number, type: string, name: Buffer | null) => void) | null;
}

type RawHandleClass = new () => RawHandle;

/**
 * Node's FSEvent class, or null where it is missing, would warn (see `DirWatch`) or is turned
 * off (TIMEWARP_WATCH_FS_WATCH=1).
 */
function rawHandleClass(): RawHandleClass | null {
  if (process.env.TIMEWARP_WATCH_FS_WATCH === "1" || pendingDeprecation()) return null;
  try {
    const binding = (process as unknown as { binding(name: string): unknown }).binding(
      "fs_event_wrap",
    ) as { FSEvent?: unknown };
    const cls = binding.FSEvent;
    if (typeof cls === "function" && typeof cls.prototype?.start === "function")
      return cls as RawHandleClass;
  } catch {
    // not in this Node
  }
  return null;
}

/**
 * Whether Node was asked for pending deprecations, each way it takes (a flag, either spelling,
 * on the command line or in NODE_OPTIONS, or NODE_PENDING_DEPRECATION=1): then
 * `process.binding` warns, and under `--throw-deprecation` that warning is thrown on the next
 * tick, out of any `try`.
 */
function pendingDeprecation(): boolean {
  const flags = `${process.execArgv.join(" ")} ${process.env.NODE_OPTIONS ?? ""}`;
  return /--pending[-_]deprecation\b/.test(flags) || process.env.NODE_PENDING_DEPRECATION === "1";
}

/** An error as `fs.watch` throws it: `code`, `errno`, `syscall` and `path`. */
function watchError(errno: number, path: string): Error {
  const code = getSystemErrorName(errno);
  return Object.assign(new Error(`${code}: watch ${path}`), {
    code,
    errno,
    syscall: "watch",
    path,
  });
}

/** Watches of directories that share one pair of listeners. */
export interface DirWatcher {
  /**
   * Watch the directory `abs` (not recursively; keeps the process up until closed). Throws as
   * `fs.watch` does (`code`: ENOENT, EACCES, ENOSPC, …).
   */
  watch(abs: string): DirWatch;
  /** Whether the watches are Node's raw handles rather than `fs.watch`'s (for the log, tests). */
  readonly raw: boolean;
}

/** A way to watch directories that reports to `onChange` and `onError` (`this`: the watch). */
export function createDirWatcher(
  onChange: DirWatchListener,
  onError: DirWatchErrorListener,
): DirWatcher {
  const Raw = rawHandleClass();
  if (Raw === null) {
    return {
      raw: false,
      watch(abs) {
        const watcher = watch(abs, { persistent: true, encoding: "buffer" }, onChange);
        watcher.on("error", onError);
        return watcher;
      },
    };
  }
  // One handler for every handle (fs.watch makes a closure per watcher), as fs.watch's: a
  // negative status is an error, after which the handle is closed.
  function onRawChange(this: RawHandle, status: number, type: string, name: Buffer | null) {
    if (status < 0) {
      this.onchange = null;
      this.close();
      onError.call(this, watchError(status, name === null ? "" : name.toString("utf8")));
    } else onChange.call(this, type, name);
  }
  return {
    raw: true,
    watch(abs) {
      const handle = new Raw();
      const err = handle.start(abs, true, false, "buffer");
      if (err !== 0) {
        handle.close();
        throw watchError(err, abs);
      }
      handle.onchange = onRawChange;
      return handle;
    },
  };
}
