import { readFileSync } from "node:fs";
import { errnoCode } from "./errors.ts";

/**
 * True unless the process is provably gone: no such pid (ESRCH), or on Linux a zombie (it has
 * exited and only waits for its parent to reap it, which a detached daemon's adopter may do
 * late or never). EPERM means it exists under another user.
 */
export function isProcessAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
  } catch (error) {
    return errnoCode(error) !== "ESRCH";
  }
  if (process.platform !== "linux") return true;
  const fields = statFields(pid);
  return fields === null || fields[0] !== "Z";
}

/**
 * The fields of `/proc/<pid>/stat` from field 3 (the state) on, or null (not Linux, no such
 * process). They follow the last ')': the command name before it may hold spaces and parens.
 */
function statFields(pid: number): string[] | null {
  if (process.platform !== "linux") return null;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "latin1");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  } catch {
    return null;
  }
}

/** The parent of `pid` (field 4 of `/proc/<pid>/stat`), or null where that cannot be read. */
export function parentPidOf(pid: number): number | null {
  const ppid = Number(statFields(pid)?.[4 - 3]);
  return Number.isInteger(ppid) && ppid > 0 ? ppid : null;
}

/** How a caller tells whether a process runs, and when it started (injectable for tests). */
export interface Liveness {
  isAlive: (pid: number) => boolean;
  startOf: (pid: number) => string | null;
}

const systemLiveness: Liveness = { isAlive: isProcessAlive, startOf: processStartOf };

/**
 * Whether `pid` still names the process that started at `start` (`processStartOf`): false when
 * it is gone, or when the pid now belongs to a process that started at another time (reused);
 * true when it runs and its start matches or cannot be read.
 */
export function isSameProcess(pid: number, start: string, live = systemLiveness): boolean {
  if (!live.isAlive(pid)) return false;
  const current = live.startOf(pid);
  return current === null || current === start;
}

let bootId: string | null | undefined;

/**
 * When the process `pid` started, as an opaque token that differs between two processes that
 * had the same pid (on Linux: this boot's id and field 22 of `/proc/<pid>/stat`, the start time
 * in clock ticks since boot). Null where that cannot be read (another OS, no such process):
 * callers then fall back to the pid alone. A pid outlives its process: the kernel hands it to
 * the next one after a wrap-around or a reboot, so a lock naming only a pid could be held
 * forever by an unrelated process (issue 16, class 5).
 */
export function processStartOf(pid: number): string | null {
  if (process.platform !== "linux" || !Number.isInteger(pid) || pid <= 0) return null;
  if (bootId === undefined) {
    try {
      bootId = readFileSync("/proc/sys/kernel/random/boot_id", "latin1").trim();
    } catch {
      bootId = null;
    }
  }
  const ticks = statFields(pid)?.[22 - 3];
  if (ticks === undefined || !/^\d+$/.test(ticks)) return null;
  return `${bootId ?? "?"}:${ticks}`;
}
