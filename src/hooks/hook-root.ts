import { existsSync } from "node:fs";
import { dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { DATA_DIR } from "../core/index.ts";

/**
 * The workspace a hook works on, from the agent's working directory: the agent's own project
 * directory (`CLAUDE_PROJECT_DIR`, `GEMINI_PROJECT_DIR`) when the cwd lies inside it, else the
 * nearest directory at or above the cwd that holds a `.timewarp/`, else the nearest holding a
 * `.git`, else the cwd itself. (An agent may run from a subdirectory of its project.)
 */
export function resolveRoot(cwd: string, env: NodeJS.ProcessEnv): string {
  const start = resolve(cwd);
  for (const name of ["CLAUDE_PROJECT_DIR", "GEMINI_PROJECT_DIR"]) {
    const dir = env[name];
    if (dir === undefined || dir === "") continue;
    const rel = relative(resolve(dir), start);
    // inside: not above it (`..`, `../…`; a child named `..x` is inside) nor on another root
    if (rel !== ".." && !rel.startsWith(`..${sep}`) && !isAbsolute(rel)) return resolve(dir);
  }
  return findWorkspaceRoot(start);
}

/** The nearest directory at or above `start` holding `.timewarp/`, else `.git`, else `start`. */
export function findWorkspaceRoot(start: string): string {
  const first = resolve(start);
  for (const marker of [DATA_DIR, ".git"]) {
    let dir = first;
    for (;;) {
      if (existsSync(join(dir, marker))) return dir;
      const parent = dirname(dir);
      if (parent === dir) break;
      dir = parent;
    }
  }
  return first;
}
