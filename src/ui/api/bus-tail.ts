import {
  closeSync,
  existsSync,
  type FSWatcher,
  openSync,
  readSync,
  statSync,
  watch,
} from "node:fs";
import { basename, dirname } from "node:path";
import { type BusEvent, errnoCode, fromSystemError, parseEventLine } from "../../core/index.ts";

/**
 * Reading the event bus (`.timewarp/events.jsonl`) from a byte offset, and noticing when it
 * grows. The bus is append-only, one line per event, so a reader keeps the offset after the last
 * whole line it read and asks again for what follows: the dashboard's timeline parses each line
 * once however often it is asked, and the stream resumes a reconnecting page where it left
 * (the offset is the SSE event id).
 */

/** An event, where its line starts, and the offset just after it (where the next read starts). */
export interface TailedEvent {
  start: number;
  end: number;
  event: BusEvent;
}

export interface BusScan {
  /** Where the next read starts: after the last whole line (a torn last line waits). */
  end: number;
  /** The bus is another file than the one read so far (shorter, or replaced): read from 0. */
  reset: boolean;
  /** The file's identity, to notice a replacement on the next read. */
  ino: number;
}

/**
 * Read in pieces of this size: a first read of a large bus never holds more than a piece and
 * the event being handled. Lines longer than this are skipped (the bus's lines are small).
 */
const CHUNK = 256 * 1024;

/**
 * Hand each event the bus holds after `offset` (whole lines only) to `handler.event`, one at a
 * time; `handler.reset` first when the bus is another file than the one read so far. A missing
 * bus is an empty one.
 */
export function scanBusFrom(
  path: string,
  from: { offset: number; ino: number },
  handler: { reset(): void; event(t: TailedEvent): void },
): BusScan {
  let size: number;
  let fileIno: number;
  try {
    const st = statSync(path);
    size = st.size;
    fileIno = st.ino;
  } catch (error) {
    if (errnoCode(error) !== "ENOENT") throw fromSystemError(error, `reading ${path}`);
    if (from.offset > 0) handler.reset();
    return { end: 0, reset: from.offset > 0, ino: 0 };
  }
  const reset = from.offset > size || (from.ino !== 0 && from.ino !== fileIno);
  if (reset) handler.reset();
  const start = reset ? 0 : from.offset;
  if (start >= size) return { end: start, reset, ino: fileIno };
  const fd = openSync(path, "r");
  try {
    return { end: scanLines(fd, start, size, handler.event), reset, ino: fileIno };
  } finally {
    closeSync(fd);
  }
}

/** The events of the whole lines in [start, size); returns the offset after the last one. */
function scanLines(fd: number, start: number, size: number, onEvent: (t: TailedEvent) => void) {
  let at = start;
  let carry = Buffer.alloc(0);
  let carryStart = start;
  while (at < size) {
    const buf = Buffer.allocUnsafe(Math.min(CHUNK, size - at));
    const n = readSync(fd, buf, 0, buf.length, at);
    if (n <= 0) break;
    at += n;
    const data =
      carry.length === 0 ? buf.subarray(0, n) : Buffer.concat([carry, buf.subarray(0, n)]);
    let lineStart = 0;
    for (let lf = data.indexOf(10); lf >= 0; lf = data.indexOf(10, lineStart)) {
      const event = parseEventLine(data.toString("utf8", lineStart, lf));
      if (event !== undefined)
        onEvent({ start: carryStart + lineStart, end: carryStart + lf + 1, event });
      lineStart = lf + 1;
    }
    // copied: a slice would keep the whole piece alive
    carry = Buffer.from(data.subarray(lineStart));
    carryStart += lineStart;
    if (carry.length > CHUNK) {
      // an absurd line: skip what we have of it, keep looking for its end
      carryStart += carry.length;
      carry = Buffer.alloc(0);
    }
  }
  return carryStart;
}

/** The bus's current end (a new stream starts there: it shows what happens from now on). */
export function busEnd(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}

interface Watch {
  listeners: Set<() => void>;
  watcher: FSWatcher | undefined;
  timer: NodeJS.Timeout;
  lastSize: number;
  lastMtime: number;
}

const watches = new Map<string, Watch>();

/** How often the bus is stat'ed when fs.watch says nothing (a network file system, a missed event). */
export const BUS_POLL_MS = 2000;

/**
 * Call `listener` (soon, coalesced) whenever the bus may have grown: fs.watch on its folder, and a
 * slow poll of its size as fallback. One watch per bus, shared by every listener; it stops with
 * the last one. Returns the unsubscribe function.
 */
export function watchBus(path: string, listener: () => void): () => void {
  let w = watches.get(path);
  if (w === undefined) {
    w = startWatch(path);
    watches.set(path, w);
  }
  w.listeners.add(listener);
  const own = w;
  return () => {
    own.listeners.delete(listener);
    if (own.listeners.size === 0 && watches.get(path) === own) {
      watches.delete(path);
      clearInterval(own.timer);
      own.watcher?.close();
    }
  };
}

function startWatch(path: string): Watch {
  let pending = false;
  const w: Watch = {
    listeners: new Set(),
    watcher: undefined,
    timer: setInterval(() => poll(), BUS_POLL_MS),
    lastSize: -1,
    lastMtime: -1,
  };
  w.timer.unref();
  const notify = () => {
    if (pending) return;
    pending = true;
    setImmediate(() => {
      pending = false;
      for (const l of [...w.listeners]) l();
    });
  };
  const poll = () => {
    let size = 0;
    let mtime = 0;
    try {
      const st = statSync(path);
      size = st.size;
      mtime = st.mtimeMs;
    } catch {
      // not there yet
    }
    if (size !== w.lastSize || mtime !== w.lastMtime) {
      const first = w.lastSize < 0;
      w.lastSize = size;
      w.lastMtime = mtime;
      if (!first) notify();
    }
    if (w.watcher === undefined) w.watcher = openWatcher(path, notify);
  };
  poll();
  return w;
}

/** fs.watch on the bus's folder (the file itself may not exist yet, or be replaced). */
function openWatcher(path: string, notify: () => void): FSWatcher | undefined {
  const dir = dirname(path);
  if (!existsSync(dir)) return undefined;
  try {
    const name = basename(path);
    const watcher = watch(dir, { persistent: false }, (_type, file) => {
      if (file === null || file === name) notify();
    });
    watcher.on("error", () => watcher.close());
    return watcher;
  } catch {
    return undefined; // the poll carries on alone
  }
}

/**
 * The text of lines of the bus, each given as its [start, end) (end after its newline); a line
 * that does not read (the bus is shorter now, or gone) is undefined.
 */
export function readBusLines(
  path: string,
  spans: readonly [number, number][],
): (string | undefined)[] {
  if (spans.length === 0) return [];
  let fd: number;
  try {
    fd = openSync(path, "r");
  } catch {
    return spans.map(() => undefined);
  }
  try {
    return spans.map(([start, end]) => {
      const buf = Buffer.allocUnsafe(Math.max(0, end - start));
      const n = readSync(fd, buf, 0, buf.length, start);
      if (n !== buf.length || buf[n - 1] !== 10) return undefined;
      return buf.toString("utf8", 0, n - 1);
    });
  } finally {
    closeSync(fd);
  }
}
