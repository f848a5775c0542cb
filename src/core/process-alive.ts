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
