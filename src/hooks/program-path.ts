import { accessSync, constants, statSync } from "node:fs";
import { delimiter, join } from "node:path";

/** How a program file wired into an agent's config stands: only "ok" can be started. */
export type ProgramState = "ok" | "missing" | "not a file" | "not executable";

/** Whether `file` is an executable file (what an agent needs to start a hook). */
export function programState(file: string): ProgramState {
  let isFile: boolean;
  try {
    isFile = statSync(file).isFile();
  } catch {
    return "missing";
  }
  if (!isFile) return "not a file";
  try {
    accessSync(file, constants.X_OK);
    return "ok";
  } catch {
    return "not executable";
  }
}

/** Where a bare program name is found on `path` (a PATH value), or null. */
export function findOnPath(program: string, path: string): string | null {
  for (const dir of path.split(delimiter)) {
    if (dir === "") continue;
    const candidate = join(dir, program);
    if (programState(candidate) === "ok") return candidate;
  }
  return null;
}
