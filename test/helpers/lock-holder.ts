import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { bundledSource } from "./bundle.ts";

/**
 * Another process holding the lock file `lock` (as a command or an edit does), for `holdMs`
 * (default: until killed). Resolves once the lock is held; `cleanups` gets its kill.
 */
export async function holdLockInChild(
  lock: string,
  command: string,
  cleanups: (() => void)[],
  holdMs = 120_000,
): Promise<ChildProcess> {
  const lockModule = join(import.meta.dirname, "..", "..", "src", "core", "lock.ts");
  mkdirSync(dirname(lock), { recursive: true });
  // one bundle for every holder (a start through tsx's loader took seconds on a loaded machine)
  const script = bundledSource(`import { acquireLock } from ${JSON.stringify(lockModule)};
    const [lock, command, holdMs] = process.argv.slice(2);
    const h = acquireLock(lock, { command });
    console.log("held");
    setTimeout(() => h.release(), Number(holdMs));`);
  const holder = spawn(process.execPath, [script, lock, command, String(holdMs)], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  cleanups.push(() => holder.kill("SIGKILL"));
  await new Promise<void>((resolve, reject) => {
    holder.stdout?.once("data", () => resolve());
    holder.once("exit", (code) => reject(new Error(`lock holder exited ${code}`)));
  });
  return holder;
}
