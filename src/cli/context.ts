import { isAbsolute, relative, resolve, sep } from "node:path";
import type { Clock, Random } from "../core/index.ts";
import { resolveWorkspaceRoot, systemClock, systemRandom } from "../core/index.ts";
import { createProgressLine } from "./progress.ts";

/** What every command handler receives: where it works, how it prints, and the injected sources. */
export interface CommandContext {
  /**
   * The workspace root, found from `cwd` as the hooks find it (`resolveWorkspaceRoot`: the
   * agent's project directory, else the nearest `.timewarp/`, else the nearest `.git`, else
   * `cwd`), so a command run from a subdirectory never makes a nested store.
   */
  root: string;
  /** Where the command was started (`--cwd`, default the process's working directory). */
  cwd: string;
  json: boolean;
  clock: Clock;
  random: Random;
  /**
   * Progress for long work: one line on stderr on a TTY without `--json`, once the command has
   * run ~1 s (`progress.ts`); silent otherwise. `""` clears it.
   */
  progress: (message: string) => void;
  /**
   * A path the user typed, relative to `cwd` as a shell means it, made workspace-relative for
   * the ledger (`a.ts` typed in `proj/lib` is `lib/a.ts`). A path outside the workspace stays
   * absolute, so the ledger names the escape.
   */
  workspacePath: (path: string) => string;
}

export interface GlobalOptions {
  json?: boolean;
  cwd?: string;
}

export function createCommandContext(options: GlobalOptions): CommandContext {
  const json = options.json === true;
  const showProgress = !json && process.stderr.isTTY === true;
  const cwd = resolve(options.cwd ?? process.cwd());
  const root = resolveWorkspaceRoot(cwd, process.env);
  return {
    root,
    cwd,
    json,
    clock: systemClock,
    random: systemRandom,
    progress: createProgressLine({
      enabled: showProgress,
      write: (text) => process.stderr.write(text),
      now: () => systemClock.now().getTime(),
    }),
    workspacePath: (path) => toWorkspacePath(root, cwd, path),
  };
}

function toWorkspacePath(root: string, cwd: string, path: string): string {
  if (path === "" || path.includes("\0")) return path; // the ledger's own message says why
  const abs = resolve(cwd, path);
  const rel = relative(root, abs);
  if (rel === "" || rel === ".." || rel.startsWith(`..${sep}`) || isAbsolute(rel)) return abs;
  return rel.split(sep).join("/");
}
