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
  try {
    // "pid (comm) S …": the state follows the last ')' (comm may hold spaces and parens).
    const stat = readFileSync(`/proc/${pid}/stat`, "latin1");
    return stat.charAt(stat.lastIndexOf(")") + 2) !== "Z";
  } catch {
    return true;
  }
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
  try {
    if (bootId === undefined) {
      try {
        bootId = readFileSync("/proc/sys/kernel/random/boot_id", "latin1").trim();
      } catch {
        bootId = null;
      }
    }
    const stat = readFileSync(`/proc/${pid}/stat`, "latin1");
    // The fields after "(comm)" start at field 3 (state); the start time is field 22.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const ticks = fields[22 - 3];
    if (ticks === undefined || !/^\d+$/.test(ticks)) return null;
    return `${bootId ?? "?"}:${ticks}`;
  } catch {
    return null;
  }
}
