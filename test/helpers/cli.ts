import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

export const REPO_ROOT = resolve(import.meta.dirname, "..", "..");
const TSX = join(REPO_ROOT, "node_modules", ".bin", "tsx");
const CLI = join(REPO_ROOT, "src", "cli", "entry.ts");
/**
 * TIMEWARP_TEST_CLI=bin runs every CLI test against the built bin (`npm run build` first), the
 * bundle agents really start; the default runs the sources through tsx.
 */
const VIA_BIN = process.env.TIMEWARP_TEST_CLI === "bin";
const COMMAND = VIA_BIN
  ? { command: process.execPath, args: [join(REPO_ROOT, "bin", "timewarp.cjs")] }
  : { command: TSX, args: [CLI] };

export interface CliRun {
  status: number | null;
  stdout: string;
  stderr: string;
  /** stdout parsed as the one JSON document `--json` promises (throws if it is not). */
  json: () => unknown;
}

/** Run the real CLI as a child process (through tsx, from source; see TIMEWARP_TEST_CLI). */
export function runCli(
  args: string[],
  options: { cwd?: string; input?: string; env?: NodeJS.ProcessEnv } = {},
): CliRun {
  const result = spawnSync(COMMAND.command, [...COMMAND.args, ...args], {
    cwd: options.cwd ?? REPO_ROOT,
    input: options.input ?? "",
    encoding: "utf8",
    env: { ...process.env, NO_COLOR: "1", ...options.env },
    timeout: 60_000,
  });
  return {
    status: result.status,
    stdout: result.stdout,
    stderr: result.stderr,
    json: () => JSON.parse(result.stdout),
  };
}

/** A fresh temp directory, removed by the returned cleanup. */
export function makeTempDir(prefix = "tw-test-"): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  // retried: a daemon or tool still writing into the tree (being stopped by its removal) can
  // add a file between the listing and the rmdir (ENOTEMPTY)
  return {
    dir,
    cleanup: () => rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 50 }),
  };
}

/** The command line that starts the CLI from source, for spawning it (e.g. an MCP server). */
export function cliCommand(): { command: string; args: string[] } {
  return { command: COMMAND.command, args: [...COMMAND.args] };
}
