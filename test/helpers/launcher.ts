import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { chmodSync, existsSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { readHookServer } from "../../src/hooks/index.ts";
import { makeTempDir, REPO_ROOT } from "./cli.ts";
import { cleanups } from "./scripted-hook-server.ts";

/**
 * What the tests of bin/timewarp (the shell launcher of the `timewarp` command) share: its paths,
 * the shells and awks it is run under (dash with mawk, Debian's /bin/sh; bash with gawk), the
 * CLI in its own process that each answer is compared with, and the launcher linked into a bin
 * directory as npm links it, beside a `node` that logs each start (a served command starts none).
 * The other shells and awks are bin/timewarp-hook's suite's (hook-shell-suite.ts).
 */

export const LAUNCHER = join(REPO_ROOT, "bin", "timewarp");
export const NODE_CLI = join(REPO_ROOT, "bin", "timewarp.cjs");

export const LAUNCHER_VARIANTS = [
  { name: "dash with mawk", shell: "/bin/dash", awk: "/usr/bin/mawk" },
  { name: "bash with gawk", shell: "/bin/bash", awk: "/usr/bin/gawk" },
].map((v) => ({ ...v, available: existsSync(v.shell) && existsSync(v.awk) }));
export type LauncherVariant = (typeof LAUNCHER_VARIANTS)[number];
/** What runs the same lines of shell under one variant only: the first there is. */
export const FIRST_VARIANT =
  LAUNCHER_VARIANTS.find((v) => v.available) ?? (LAUNCHER_VARIANTS[0] as LauncherVariant);

export interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** The environment both paths run under: the tests' own, without their TIMEWARP_WATCH=0. */
export function baseEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: "1" };
  delete env.TIMEWARP_WATCH;
  return env;
}

/** The CLI in its own process (the built bin, as the launcher's fall-back runs it). */
export function inProcess(
  args: string[],
  cwd: string,
  options: { env?: NodeJS.ProcessEnv; input?: string } = {},
): Run {
  const r = spawnSync(process.execPath, [NODE_CLI, ...args], {
    cwd,
    encoding: "utf8",
    env: { ...baseEnv(), ...options.env },
    input: options.input ?? "",
    timeout: 60_000,
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** The CLI in its own process, in the background: its answer once it ends. */
export function inProcessLater(args: string[], cwd: string): Promise<Run> {
  const child = spawn(process.execPath, [NODE_CLI, ...args], {
    cwd,
    env: baseEnv(),
    stdio: ["ignore", "pipe", "pipe"],
  });
  cleanups.push(() => child.kill("SIGKILL"));
  return collect(child).done;
}

export const parsed = <T>(r: Run): T => JSON.parse(r.stdout) as T;

/** A child's output as it comes, and its end (once its pipes are closed). */
export function collect(child: ChildProcess) {
  const out = { stdout: "", stderr: "" };
  child.stdout?.on("data", (b: Buffer) => {
    out.stdout += b.toString();
  });
  child.stderr?.on("data", (b: Buffer) => {
    out.stderr += b.toString();
  });
  const done = new Promise<Run>((resolve) =>
    child.once("close", (status) => resolve({ status, ...out })),
  );
  return { child, out, done };
}

/** The launcher's helpers for one shell and awk (temp dirs and children go with `cleanups`). */
export function launcherUnder(variant: LauncherVariant) {
  /** A bin directory as npm makes one: the launcher linked in, an awk, a `node` that logs. */
  function binDir(): { dir: string; nodeStarts: () => string[] } {
    const t = makeTempDir("tw-launcherbin-");
    cleanups.push(t.cleanup);
    const log = join(t.dir, "node.log");
    symlinkSync(LAUNCHER, join(t.dir, "timewarp"));
    symlinkSync(variant.awk, join(t.dir, "awk"));
    writeFileSync(
      join(t.dir, "node"),
      `#!/bin/sh\nprintf '%s\\n' "$*" >> '${log}'\nexec '${process.execPath}' "$@"\n`,
    );
    chmodSync(join(t.dir, "node"), 0o755);
    return {
      dir: t.dir,
      nodeStarts: () => (existsSync(log) ? readFileSync(log, "utf8").trim().split("\n") : []),
    };
  }
  const envFor = (bin: string, env: NodeJS.ProcessEnv) => ({
    ...baseEnv(),
    PATH: `${bin}:${process.env.PATH}`,
    ...env,
  });
  const launch = (bin: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = {}): Run => {
    const r = spawnSync(variant.shell, [join(bin, "timewarp"), ...args], {
      cwd,
      encoding: "utf8",
      env: envFor(bin, env),
      timeout: 60_000,
    });
    return { status: r.status, stdout: r.stdout, stderr: r.stderr };
  };
  /** The launcher in the background (its output collected), for what happens while it runs. */
  const start = (bin: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = {}) => {
    const child = spawn(variant.shell, [join(bin, "timewarp"), ...args], {
      cwd,
      env: envFor(bin, env),
      stdio: ["ignore", "pipe", "pipe"],
    });
    cleanups.push(() => child.kill("SIGKILL"));
    return collect(child);
  };
  /** How many requests the workspace's hook server answered (-1: none serves). */
  const served = (dir: string) => readHookServer(dir)?.served ?? -1;
  return { binDir, launch, start, served };
}
