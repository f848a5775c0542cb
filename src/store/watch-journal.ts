import { randomBytes } from "node:crypto";
import { closeSync, openSync, rmSync, writeSync } from "node:fs";
import { join } from "node:path";

/** JSON with every non-ASCII character escaped: the journal stays ASCII (see `watch.ts`). */
function asciiJson(text: string): string {
  return JSON.stringify(text).replace(
    /[\u007f-\uffff]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}

/**
 * The watch daemon's journal (`watch/journal-<instance>.log`, lines as `watch.ts` describes):
 * lines are batched per turn of the event loop, and a path is written once per cookie (the
 * tokens clients hold sit right after cookies, so one line each suffices).
 */
export interface WatchJournal {
  /** The current instance (a new one each time the journal is replaced). */
  readonly instance: string;
  /** The current journal's file name inside the watch directory. */
  readonly name: string;
  /** `P`: `rel` may have changed. */
  path(rel: string): void;
  /** `F`: anything may have changed; clients walk once. Queued like any line. */
  unsure(reason: string): void;
  /** `C`: a client's cookie, written at once; every event heard before it is above it. */
  cookie(name: string): void;
  /** Write the queued lines now. */
  flush(): void;
  /** Close and delete the journal. */
  close(): void;
}

export interface WatchJournalOptions {
  /** The watch directory the journal lives in. */
  dir: string;
  /** Past this size the journal is replaced (a new instance): tokens of the old one walk once. */
  maxBytes: number;
  /** Called after the journal was replaced by size, to publish its new name. */
  onReplaced: () => void;
}

export function openWatchJournal(options: WatchJournalOptions): WatchJournal {
  let instance = "";
  let name = "";
  let fd = -1;
  let bytes = 0;
  let lines: string[] = [];
  let flushQueued = false;
  let recent = new Set<string>();

  const open = (): void => {
    const old = name;
    if (fd >= 0) closeSync(fd);
    instance = randomBytes(6).toString("hex");
    name = `journal-${instance}.log`;
    fd = openSync(join(options.dir, name), "a");
    bytes = 0;
    recent = new Set();
    if (old !== "") rmSync(join(options.dir, old), { force: true });
  };

  const flush = (): void => {
    flushQueued = false;
    if (lines.length === 0 || fd < 0) return;
    const text = `${lines.join("\n")}\n`;
    lines = [];
    writeSync(fd, text);
    bytes += text.length;
    // Checked here, not only when a client asks, so hours of churn cannot fill the disk.
    if (bytes > options.maxBytes) {
      open();
      options.onReplaced();
    }
  };

  const append = (line: string): void => {
    lines.push(line);
    if (!flushQueued) {
      flushQueued = true;
      setImmediate(flush);
    }
  };

  open();
  return {
    get instance() {
      return instance;
    },
    get name() {
      return name;
    },
    path(rel) {
      if (recent.has(rel)) return;
      recent.add(rel);
      append(`P ${asciiJson(rel)}`);
    },
    unsure(reason) {
      append(`F ${asciiJson(reason)}`);
    },
    cookie(cookieName) {
      lines.push(`C ${cookieName}`);
      flush();
      recent = new Set();
    },
    flush,
    close() {
      flush();
      if (fd >= 0) closeSync(fd);
      fd = -1;
      rmSync(join(options.dir, name), { force: true });
    },
  };
}
