import { existsSync, lstatSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { errnoCode } from "../core/index.ts";
import { decodeName } from "./entry-path.ts";
import { createDirWatcher, type DirWatch } from "./watch-handle.ts";
import type { WatchJournal } from "./watch-journal.ts";

/** The inotify watches of a workspace: one per non-excluded directory, kept in step with it. */
export interface TreeWatcher {
  /** Watch `top` and every non-excluded directory below it. */
  watchTree(top: string): void;
  /** Stop watching `rel` and everything below it (`""`: everything). */
  unwatchTree(rel: string): void;
  /** How many directories are watched. */
  readonly size: number;
  /** Whether the watches are Node's raw handles (watch-handle.ts). */
  readonly raw: boolean;
}

export interface TreeWatcherOptions {
  root: string;
  excluded: (rel: string, name: string, isDir: boolean) => boolean;
  /** Past this many watched directories, give up (`fail`): scans walk instead. */
  maxWatches: number;
  /** Events in one turn of the event loop past which the kernel's queue may have overflowed. */
  overflowAt: number;
  journal: WatchJournal;
  /** The watcher cannot vouch for the journal any more: stop the daemon. */
  fail: (reason: string) => void;
}

/**
 * The kernel queues at most `max_queued_events` inotify events and, past that, drops the rest
 * with one overflow notice that Node's fs.watch does not pass on. Events are read in one go
 * per turn of the event loop, so a turn that delivers a large part of the queue's capacity
 * may have lost some: say `F` (clients walk once) rather than trust the journal. What was lost
 * may be a directory's creation, so the watches are then renewed too (`onOverflow`).
 */
function createBurstCounter(
  overflowAt: number,
  journal: WatchJournal,
  onOverflow: () => void,
): () => void {
  let burst = 0;
  let resetQueued = false;
  let reported = false;
  return () => {
    burst++;
    if (!resetQueued) {
      resetQueued = true;
      setImmediate(() => {
        burst = 0;
        resetQueued = false;
        reported = false;
      });
    }
    if (burst >= overflowAt && !reported) {
      reported = true;
      journal.unsure(`${burst} events in one burst: the inotify queue may have overflowed`);
      onOverflow();
    }
  };
}

/** An entry's name as the kernel gave it, or null when it is not UTF-8. */
function utf8Name(name: Buffer): string | null {
  const { text, exact } = decodeName(name);
  return exact ? text : null;
}

/** The path of `name` in the directory `dirRel` (`""`: the root). */
const childOf = (dirRel: string, name: string): string =>
  dirRel === "" ? name : `${dirRel}/${name}`;

export function createTreeWatcher(options: TreeWatcherOptions): TreeWatcher {
  const { root, excluded, maxWatches, journal, fail } = options;
  // Per directory only its watcher, its inode and its path, in three maps: one listener for all
  // watchers (finding the directory by its watcher) instead of two closures and a context per
  // directory, ~150 bytes each (24.8k directories at 100k files; issue 22, item 5).
  const watchers = new Map<string, DirWatch>();
  const inodes = new Map<string, number>();
  const dirOf = new Map<DirWatch, string>();
  // After a possible overflow the watches are renewed once the read is over: a directory made
  // meanwhile has none, and every edit below it would be missed after the clients' one walk.
  let renewalQueued = false;
  const countEvent = createBurstCounter(options.overflowAt, journal, () => {
    if (renewalQueued) return;
    renewalQueued = true;
    setImmediate(() => {
      renewalQueued = false;
      if (watchers.has("")) watchTree(""); // (not once the watcher was stopped)
    });
  });

  // Watches given up or renewed while events were being read are closed once the read is over.
  // Until then what the kernel queued for them still reaches `onChange` (`draining`: the
  // directory each stood for): counted towards the burst, and a rename among them looked at
  // again once the read is over (`recheck`). Closed at once, libuv would drop those
  // events unseen: an overflow behind a directory moved away would go unnoticed, and a
  // subdirectory removed from a directory made again would keep its watch.
  const draining = new Map<DirWatch, string>();
  const closeLater = (watcher: DirWatch, rel: string): void => {
    if (draining.size === 0)
      setImmediate(() => {
        for (const w of draining.keys()) w.close();
        draining.clear();
      });
    draining.set(watcher, rel);
  };
  // Paths a closing watch heard renamed, brought in step once the read is over (one look each;
  // done during the read, a renewal would add yet another watch hearing the same events).
  const rechecks = new Set<string>();
  const recheck = (rel: string): void => {
    if (rechecks.size === 0)
      setImmediate(() => {
        const due = [...rechecks];
        rechecks.clear();
        if (!watchers.has("")) return; // (the watcher was stopped)
        for (const r of due) syncWatches(r, r.slice(r.lastIndexOf("/") + 1));
      });
    rechecks.add(rel);
  };

  const forget = (dir: string, watcher: DirWatch): void => {
    watchers.delete(dir);
    inodes.delete(dir);
    dirOf.delete(watcher);
  };

  /** Stop watching `rel` and below; from an event, the handles close once the read is over. */
  const unwatchBelow = (rel: string, later: boolean): void => {
    for (const [dir, watcher] of watchers) {
      if (dir === rel || (rel === "" ? true : dir.startsWith(`${rel}/`))) {
        forget(dir, watcher);
        if (later) closeLater(watcher, dir);
        else watcher.close();
      }
    }
  };
  const unwatchTree = (rel: string): void => unwatchBelow(rel, false);

  /**
   * A watch's event (`this` is the watch), or a closing watch's (see `draining`): that one is
   * counted and a rename looked at again, but not journaled (the event that closed the watch
   * journaled its directory, which clients revisit whole).
   */
  function onChange(this: DirWatch, type: string, name: Buffer | null): void {
    const dirRel = dirOf.get(this);
    if (dirRel !== undefined) {
      onEvent(dirRel, type, name);
      return;
    }
    const was = draining.get(this);
    if (was === undefined) return;
    countEvent();
    const text = name === null ? null : utf8Name(name);
    if (type === "rename" && text !== null && !(was === "" && text === ".timewarp"))
      recheck(childOf(was, text));
  }

  /**
   * A watched directory removed under us reports an error on some kernels: its parent's event
   * already said so; anything else leaves the watcher unsure.
   */
  function onError(this: DirWatch, error: Error): void {
    const rel = dirOf.get(this);
    if (rel === undefined) return;
    if (existsSync(rel === "" ? root : join(root, rel)))
      fail(`watcher error on ${rel || "."}: ${String(error)}`);
  }
  const dirs = createDirWatcher(onChange, onError);

  const onEvent = (dirRel: string, type: string, name: Buffer | null): void => {
    countEvent();
    if (name === null) {
      if (dirRel === "") fail("an event on the workspace root without a name");
      else journal.path(dirRel);
      return;
    }
    const text = utf8Name(name);
    // A name that is not UTF-8: report its directory (scans walk such trees byte-exactly).
    if (text === null) {
      if (dirRel === "") fail("a name that is not UTF-8 in the workspace root");
      else journal.path(dirRel);
      return;
    }
    if (dirRel === "" && text === ".timewarp") return;
    const rel = childOf(dirRel, text);
    journal.path(rel);
    if (type === "rename") syncWatches(rel, text);
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
    const have = inodes.get(rel);
    if (have === undefined && ino === undefined) return; // a file: nothing was or is watched
    // The same inode number is not the same directory: one deleted and made again before its
    // events were read often gets its number back (ext4), and the kernel dropped the watch
    // with the old one. So it is watched anew (a directory moved out and back, or chmodded,
    // costs that one watch and a listing).
    if (have !== undefined && have === ino) renewOne(rel);
    else {
      if (have !== undefined) unwatchBelow(rel, true);
      if (ino !== undefined) watchTree(rel);
    }
  };

  /**
   * A new watch on `rel` (the old one closing), and watches on its subdirectories that have
   * none. A subdirectory watched already is left to its own events: if the directory was made
   * again, each of its old subdirectories went with an event its old watch heard, and that
   * brings the one there now in step the same way.
   */
  const renewOne = (rel: string): void => {
    const children = watchOne(rel);
    if (children === null) return;
    for (const child of children) if (!watchers.has(child)) watchTree(child);
  };

  /** Watch one directory; its subdirectories to watch next, or null when it is not watched. */
  const watchOne = (rel: string): string[] | null => {
    const abs = rel === "" ? root : join(root, rel);
    const prev = watchers.get(rel);
    let watcher: DirWatch;
    let ino: number;
    try {
      ino = lstatSync(abs).ino;
      watcher = dirs.watch(abs);
    } catch (error) {
      const code = errnoCode(error);
      // Gone meanwhile (its parent saw it), or unreadable (a scan lists it as skipped and
      // revisits it every time): nothing to watch, and no watch kept from before, nor below it.
      if (code === "ENOENT" || code === "ENOTDIR" || code === "EACCES" || code === "EPERM") {
        if (prev !== undefined) unwatchBelow(rel, true);
        return [];
      }
      if (code === "ENOSPC") {
        fail(
          `the inotify watch limit is reached (${watchers.size} directories watched; raise fs.inotify.max_user_watches)`,
        );
      } else fail(`cannot watch ${rel === "" ? "the workspace root" : rel}: ${code ?? error}`);
      return null;
    }
    watchers.set(rel, watcher);
    inodes.set(rel, ino);
    dirOf.set(watcher, rel);
    // A watch renewed: the new one is started before the old one closes (on the same
    // directory both are the kernel's one watch, so nothing is missed between them).
    if (prev !== undefined) {
      dirOf.delete(prev);
      closeLater(prev, rel);
    }
    let names: string[];
    try {
      names = readdirSync(abs, { withFileTypes: true })
        .filter((d) => d.isDirectory())
        .map((d) => d.name);
    } catch {
      return [];
    }
    const children: string[] = [];
    for (const name of names) {
      if (rel === "" && name === ".timewarp") continue;
      if (name.includes("\uFFFD")) continue; // scans walk such trees; see onEvent
      const child = childOf(rel, name);
      if (!excluded(child, name, true)) children.push(child);
    }
    return children;
  };

  /**
   * Watch `top` and the directories below it, renewing any watch already there. A subdirectory
   * gone since has its watch dropped by the event that says so, which its directory's watch
   * hears (closing or not); after a possible overflow some such events are lost, so the renewal
   * of the whole tree then (`watchTree("")`) also drops what it no longer finds.
   */
  const watchTree = (top: string): void => {
    const seen = top === "" && watchers.has("") ? new Set<string>() : null;
    const stack = [top];
    while (stack.length > 0) {
      const rel = stack.pop() as string;
      if (!watchers.has(rel) && watchers.size >= maxWatches) {
        fail(
          `the workspace has more directories than this daemon's share of inotify watches (${maxWatches}, a quarter of fs.inotify.max_user_watches); scans walk instead`,
        );
        return;
      }
      const children = watchOne(rel);
      if (children === null) return;
      seen?.add(rel);
      stack.push(...children);
    }
    if (seen === null) return;
    for (const [dir, watcher] of watchers) {
      if (!seen.has(dir)) {
        forget(dir, watcher);
        closeLater(watcher, dir);
      }
    }
  };

  return {
    watchTree,
    unwatchTree,
    get size() {
      return watchers.size;
    },
    raw: dirs.raw,
  };
}
