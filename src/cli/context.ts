import { isAbsolute, relative, resolve, sep } from "node:path";
import type { Clock, ProgressUpdate, Random } from "../core/index.ts";
import {
  createProgressChannel,
  formatProgress,
  resolveWorkspaceRoot,
  systemClock,
  systemRandom,
} from "../core/index.ts";
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
   * run ~1 s (`progress.ts`), silent otherwise; and, whatever the output, the command's record
   * in the progress channel (`.timewarp/progress/<pid>.json`, which the dashboard shows). A
   * string is a phase in words; `""` ends it all (the line cleared, the record removed).
   */
  progress: (update: string | ProgressUpdate) => void;
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

/**
 * `command` names the command in the progress channel (`gc`, `snapshot create`); without it
 * (the hooks, the MCP server, the dashboard's own process) no record is written.
 */
export function createCommandContext(options: GlobalOptions, command?: string): CommandContext {
  const json = options.json === true;
  const cwd = resolve(options.cwd ?? process.cwd());
  const root = resolveWorkspaceRoot(cwd, process.env);
  return {
    root,
    cwd,
    json,
    clock: systemClock,
    random: systemRandom,
    progress: createProgress({ root, json, command }),
    workspacePath: (path) => toWorkspacePath(root, cwd, path),
  };
}

function createProgress(o: {
  root: string;
  json: boolean;
  command: string | undefined;
}): CommandContext["progress"] {
  const line = createProgressLine({
    enabled: !o.json && process.stderr.isTTY === true,
    write: (text) => process.stderr.write(text),
    now: () => systemClock.now().getTime(),
  });
  const channel =
    o.command === undefined
      ? undefined
      : createProgressChannel({ root: o.root, command: o.command, clock: systemClock });
  return (update) => {
    if (update === "") {
      line("");
      channel?.end();
      return;
    }
    const u = typeof update === "string" ? { phase: update } : update;
    line(typeof update === "string" ? update : formatProgress(u));
    channel?.update(u);
  };
}

function toWorkspacePath(root: string, cwd: string, path: string): string {
  if (path === "" || path.includes("\0")) return path; // the ledger's own message says why
  const abs = resolve(cwd, path);
  const rel = relative(root, abs);
  if (rel === "" || rel === ".." || rel.startsWith(`..${sep}`) || isAbsolute(rel)) return abs;
  return rel.split(sep).join("/");
}
