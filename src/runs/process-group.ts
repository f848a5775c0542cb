import { existsSync, readdirSync, readFileSync } from "node:fs";
import { errnoCode } from "../core/index.ts";

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * True while any live process of the group exists. On Linux, zombies do not count: a killed tool
 * orphaned by its launcher waits for PID 1 to reap it, which in containers may take a while.
 */
export function processGroupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
  } catch (error) {
    return errnoCode(error) === "EPERM";
  }
  if (!existsSync("/proc/self/stat")) return true;
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${name}/stat`, "utf8");
    } catch {
      continue;
    }
    // "pid (comm) state ppid pgrp …" — comm may hold spaces and parentheses
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (Number(fields[2]) === pgid && fields[0] !== "Z" && fields[0] !== "X") return true;
  }
  return false;
}

function killGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // already gone
  }
}

/** End a process group: TERM, a short grace, then KILL; resolves when no member is left. */
export async function endProcessGroup(pgid: number, graceMs = 300): Promise<void> {
  if (!processGroupAlive(pgid)) return;
  killGroup(pgid, "SIGTERM");
  const until = performance.now() + graceMs;
  while (processGroupAlive(pgid) && performance.now() < until) await sleep(10);
  for (let i = 0; i < 300 && processGroupAlive(pgid); i++) {
    killGroup(pgid, "SIGKILL");
    await sleep(10);
  }
}
