import { mkdirSync, readdirSync, readFileSync, statSync, unlinkSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import { isTempName, writeFileAtomic } from "./atomic-write.ts";
import type { Clock } from "./clock.ts";
import { DATA_DIR } from "./paths.ts";
import { isProcessAlive, isSameProcess, processStartOf } from "./process-alive.ts";

/**
 * Progress of long work (issue 19 item 5), as the library reports it: the phase it is in and,
 * where it knows them, how many units of the phase are done of how many.
 */
export interface ProgressUpdate {
  /** What the work does now, one or two words ("scan", "restore", "check objects"). */
  phase: string;
  done?: number;
  total?: number;
  /** The line a terminal shows, when the phase and counts alone say too little. */
  message?: string;
}

/** A progress callback of a library function. */
export type OnProgress = (update: ProgressUpdate) => void;

/**
 * One record of the progress channel, `.timewarp/progress/<pid>.json`: what a running command
 * is doing, for readers outside the process (the dashboard). Written atomically, at most a few
 * times a second, removed when the work ends; a record whose process is gone is ignored.
 */
export const ProgressRecordSchema = z.object({
  schema_version: z.literal(1),
  pid: z.number().int().positive(),
  /** `processStartOf(pid)` when written: tells a reused pid from the writer. */
  process_start: z.string().nullable(),
  /** The command as typed, without options: `gc`, `snapshot create`, `skill run`. */
  command: z.string(),
  phase: z.string(),
  message: z.string().nullable(),
  done: z.number().nonnegative().nullable(),
  total: z.number().nonnegative().nullable(),
  started_at: z.string(),
  updated_at: z.string(),
});
export type ProgressRecord = z.infer<typeof ProgressRecordSchema>;

/** The channel's folder in a workspace. */
export function progressDir(root: string): string {
  return join(root, DATA_DIR, "progress");
}

export interface ProgressChannel {
  /** The latest state of the work; written now, or within `intervalMs` (throttled). */
  update(update: ProgressUpdate): void;
  /** The work is over: the record goes (a later `update` starts a new one). */
  end(): void;
}

export interface ProgressChannelOptions {
  root: string;
  command: string;
  clock: Clock;
  /** At most one write per this many ms (default 250: ~4 a second); later updates coalesce. */
  intervalMs?: number;
}

/**
 * The writer of a command's progress record. Nothing is written in a workspace without
 * `.timewarp/` (the channel never creates a store). The first update is written at once, so
 * work that blocks the event loop is visible from its start; later ones at most every
 * `intervalMs`, the last of a burst by an unref'd timer (it never keeps the process alive).
 * The record is removed by `end()`, or at process exit; after a kill -9 it stays until a
 * reader sees its pid gone. Writes are temp + rename without fsync: a reader sees the old or
 * the new record, never a torn one, and a record lost to a power cut names a dead process.
 */
export function createProgressChannel(options: ProgressChannelOptions): ProgressChannel {
  const dir = progressDir(options.root);
  const file = join(dir, `${process.pid}.json`);
  const interval = options.intervalMs ?? 250;
  const now = () => options.clock.now().getTime();
  let latest: ProgressUpdate | undefined;
  let startedAt: string | undefined;
  let lastWrite = Number.NEGATIVE_INFINITY;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let written = false;
  const removeAtExit = () => removeQuietly(file);

  const flush = () => {
    timer = undefined;
    if (latest === undefined || startedAt === undefined) return;
    lastWrite = now();
    try {
      if (!written) {
        if (
          statSync(join(options.root, DATA_DIR), { throwIfNoEntry: false })?.isDirectory() !== true
        )
          return;
        mkdirSync(dir, { recursive: true });
        sweepDeadRecords(dir);
      }
      const record = toRecord({
        command: options.command,
        update: latest,
        startedAt,
        at: options.clock.now(),
      });
      writeFileAtomic(file, `${JSON.stringify(record)}\n`, { durable: false });
      if (!written) process.once("exit", removeAtExit);
      written = true;
    } catch {
      // progress is a courtesy: a full disk or a read-only store must not fail the work
    }
  };

  return {
    update(update) {
      latest = update;
      startedAt ??= options.clock.now().toISOString();
      const wait = lastWrite + interval - now();
      if (wait <= 0) {
        if (timer !== undefined) clearTimeout(timer);
        flush();
      } else if (timer === undefined) {
        timer = setTimeout(flush, wait);
        timer.unref();
      }
    },
    end() {
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
      latest = undefined;
      startedAt = undefined;
      lastWrite = Number.NEGATIVE_INFINITY;
      if (!written) return;
      written = false;
      process.off("exit", removeAtExit);
      removeQuietly(file);
    },
  };
}

function toRecord(o: {
  command: string;
  update: ProgressUpdate;
  startedAt: string;
  at: Date;
}): ProgressRecord {
  return {
    schema_version: 1,
    pid: process.pid,
    process_start: processStartOf(process.pid),
    command: o.command,
    phase: o.update.phase,
    message: o.update.message ?? null,
    done: o.update.done ?? null,
    total: o.update.total ?? null,
    started_at: o.startedAt,
    updated_at: o.at.toISOString(),
  };
}

/**
 * The work in progress in a workspace: every record whose process still runs (a record left by
 * a kill -9, or whose pid now names another process, is not reported), oldest first. Reads
 * only; unreadable or malformed records are skipped. An empty list without `.timewarp/progress/`.
 */
export function readProgress(root: string): ProgressRecord[] {
  const out: ProgressRecord[] = [];
  for (const { record } of readRecords(progressDir(root))) {
    if (record !== null && isLive(record)) out.push(record);
  }
  return out.sort((a, b) => a.started_at.localeCompare(b.started_at) || a.pid - b.pid);
}

function isLive(record: ProgressRecord): boolean {
  return record.process_start === null
    ? isProcessAlive(record.pid)
    : isSameProcess(record.pid, record.process_start);
}

function readRecords(dir: string): { file: string; record: ProgressRecord | null }[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const out: { file: string; record: ProgressRecord | null }[] = [];
  for (const name of names) {
    if (isTempName(name) || !/^\d+\.json$/.test(name)) continue;
    const file = join(dir, name);
    out.push({ file, record: parseRecord(file) });
  }
  return out;
}

function parseRecord(file: string): ProgressRecord | null {
  try {
    const parsed = ProgressRecordSchema.safeParse(JSON.parse(readFileSync(file, "utf8")));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

/** What dead writers left: their records (or unreadable ones) and their temp files. */
function sweepDeadRecords(dir: string): void {
  for (const { file, record } of readRecords(dir)) {
    if (record === null || !isLive(record)) removeQuietly(file);
  }
  let names: string[] = [];
  try {
    names = readdirSync(dir);
  } catch {
    return;
  }
  for (const name of names) {
    const pid = /\.tw-tmp-(\d+)-/.exec(name)?.[1];
    if (pid !== undefined && !isProcessAlive(Number(pid))) removeQuietly(join(dir, name));
  }
}

function removeQuietly(file: string): void {
  try {
    unlinkSync(file);
  } catch {
    // gone already (another writer's sweep), or a read-only store: nothing to do
  }
}

/**
 * The progress of a loop over `total` items: the phase at once, then every `every`th item
 * (default 256) and the last. A callback per item would cost more than the work on a large
 * store, and a terminal line per item more still.
 */
export function createProgressTick(
  onProgress: OnProgress | undefined,
  o: { phase: string; total: number; every?: number },
): () => void {
  if (onProgress === undefined) return () => {};
  const n = o.every ?? 256;
  onProgress({ phase: o.phase, done: 0, total: o.total });
  let done = 0;
  return () => {
    done++;
    if (done % n === 0 || done === o.total) onProgress({ phase: o.phase, done, total: o.total });
  };
}

/** The line a terminal shows for an update: its message, else the phase and its counts. */
export function formatProgress(update: ProgressUpdate): string {
  if (update.message !== undefined) return update.message;
  if (update.done === undefined) return `${update.phase}…`;
  const counts = update.total === undefined ? `${update.done}` : `${update.done}/${update.total}`;
  return `${update.phase} ${counts}`;
}
