/**
 * One child process timed as the hook benches measure it: wall time, and peak RSS from GNU
 * `/usr/bin/time -f %M` when the machine has it (else `rssKiB` is null). A child that exits
 * non-zero ends the bench: its numbers would describe a failure.
 */
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";

const TIME = existsSync("/usr/bin/time") ? "/usr/bin/time" : null;

export interface ProcessSample {
  ms: number;
  rssKiB: number | null;
  stdout: string;
}

export function timeProcess(
  cmd: string,
  args: string[],
  options: { cwd: string; input?: string; env?: NodeJS.ProcessEnv },
): ProcessSample {
  const argv = TIME ? ["-f", "%M", cmd, ...args] : args;
  const t0 = performance.now();
  const r = spawnSync(TIME ?? cmd, argv, {
    cwd: options.cwd,
    input: options.input ?? "",
    encoding: "utf8",
    env: { ...process.env, ...options.env },
  });
  const ms = performance.now() - t0;
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(" ")} exited ${r.status}: ${r.stderr}`);
  const last = TIME ? r.stderr.trim().split("\n").pop() : undefined;
  return {
    ms,
    rssKiB: last !== undefined && /^\d+$/.test(last) ? Number(last) : null,
    stdout: r.stdout,
  };
}

/** The p-th percentile (nearest rank) of xs; NaN when xs is empty. */
export function percentile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] ?? Number.NaN;
}
