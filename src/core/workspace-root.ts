import { existsSync, lstatSync, mkdirSync } from "node:fs";
import { dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { writeFileAtomic } from "./atomic-write.ts";
import { DATA_DIR } from "./paths.ts";

/**
 * The one home of "which workspace is this?" — the CLI, the MCP server (started by the CLI) and
 * the hooks all ask it, so an agent's own edit tools (seen by hooks) and its `timewarp` calls
 * from a subdirectory land in the same `.timewarp/` (issue 16, class 9: from `proj/lib` the CLI
 * once reported "not initialized" and an edit there created a nested `lib/.timewarp/`).
 *
 * The agent's project directory (`CLAUDE_PROJECT_DIR`, `GEMINI_PROJECT_DIR`) when `cwd` lies
 * inside it, else the nearest directory at or above `cwd` holding a `.timewarp/`, else the
 * nearest holding a `.git`, else `cwd` itself.
 */
export function resolveWorkspaceRoot(cwd: string, env: NodeJS.ProcessEnv): string {
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

/**
 * What `.timewarp/.gitignore` holds: everything. The store is hundreds of files (objects,
 * records, caches) that `git add -A` would otherwise commit (issue 16, class 9).
 */
const STORE_GITIGNORE = "*\n";

/**
 * Create `<root>/.timewarp/` when absent, and make sure git ignores it (see
 * `ensureStoreIgnored`). Callers that create the store use this instead of a bare mkdir.
 */
export function ensureDataDir(root: string): void {
  mkdirSync(join(resolve(root), DATA_DIR), { recursive: true });
  ensureStoreIgnored(root);
}

/**
 * Write `.timewarp/.gitignore` (`*`) when the store exists without one: on creation, and on any
 * open of a store made by an older version. Best effort: a read-only workspace is no reason to
 * fail a command, and a user's own `.gitignore` there is never replaced.
 */
export function ensureStoreIgnored(root: string): void {
  const data = join(resolve(root), DATA_DIR);
  const file = join(data, ".gitignore");
  try {
    if (!lstatSync(data).isDirectory()) return;
    if (existsSync(file)) return;
    writeFileAtomic(file, STORE_GITIGNORE, { durable: false });
  } catch {
    // no store, or not writable: nothing to ignore, or nothing we may write
  }
}
