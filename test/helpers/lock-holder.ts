import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";

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
  const lockModule = pathToFileURL(
    join(import.meta.dirname, "..", "..", "src", "core", "lock.ts"),
  ).href;
  mkdirSync(dirname(lock), { recursive: true });
  const holder = spawn(
    process.execPath,
    [
      "--import",
      "tsx",
      "--input-type=module",
      "-e",
      `const l = await import(${JSON.stringify(lockModule)});
       const h = l.acquireLock(${JSON.stringify(lock)}, { command: ${JSON.stringify(command)} });
       console.log("held");
       setTimeout(() => h.release(), ${holdMs});`,
    ],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  cleanups.push(() => holder.kill("SIGKILL"));
  await new Promise<void>((resolve, reject) => {
    holder.stdout?.once("data", () => resolve());
    holder.once("exit", (code) => reject(new Error(`lock holder exited ${code}`)));
  });
  return holder;
}
