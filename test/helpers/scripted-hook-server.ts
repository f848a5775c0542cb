import { type ChildProcess, spawn } from "node:child_process";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { hookServerPaths, readHookServer } from "../../src/hooks/index.ts";
import { initWorkspace } from "../../src/store/index.ts";
import { bundledScript } from "./bundle.ts";
import { makeTempDir, REPO_ROOT } from "./cli.ts";

/**
 * What the hook-server tests share: temp workspaces, a scripted hook server in its own process
 * (hook-server-child.ts), and the check that no request, claim or reply file was left behind.
 * Each test file runs `cleanups` after each test.
 */

const CHILD = join(REPO_ROOT, "test", "helpers", "hook-server-child.ts");
export const cleanups: (() => void)[] = [];

/** Run (last first) and forget the cleanups registered since the last call. */
export function runCleanups(): void {
  for (const c of cleanups.splice(0).reverse()) c();
}

/** A fresh initialized workspace in a temp dir. */
export function workspace(): string {
  const t = makeTempDir("tw-hooksrv-");
  cleanups.push(t.cleanup);
  initWorkspace(t.dir);
  return t.dir;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function waitUntil(check: () => boolean, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error("timed out waiting");
    await sleep(20);
  }
}

/** A scripted hook server for `root` in its own process; resolves once it serves. */
export async function scriptedServer(
  root: string,
  mode: "normal" | "stale" | "stale-later" | "broken-worker",
  env: NodeJS.ProcessEnv = {},
): Promise<{ child: ChildProcess; output: () => string }> {
  // node itself, not a launcher: signals must reach the server (bundled: a start through tsx's
  // loader took seconds more on a loaded machine, and each test file starts a dozen servers)
  const child = spawn(process.execPath, [bundledScript(CHILD), root, mode], {
    cwd: REPO_ROOT,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, ...env },
  });
  cleanups.push(() => child.kill("SIGKILL"));
  let out = "";
  child.stdout?.on("data", (b: Buffer) => {
    out += b.toString();
  });
  child.stderr?.on("data", (b: Buffer) => {
    out += b.toString();
  });
  await waitUntil(() => out.includes("ready\n") && readHookServer(root) !== null);
  return { child, output: () => out };
}

/**
 * Files of requests, claims, replies and output left in the hook directory (the server's record
 * and its atomic rewrite in flight after each answer are not leftovers).
 */
export function leftovers(root: string): string[] {
  return readdirSync(hookServerPaths(root).dir).filter(
    (n) => n !== "server.json" && !n.startsWith(".server.json."),
  );
}

/**
 * What a child process prints on stdout, once it exits and its output is read: on "close", not
 * "exit", which can come while the pipe still holds the last of it (on a loaded machine, a
 * parallel hook's whole answer: it then looked as if the call printed nothing).
 */
export function stdoutOf(child: ChildProcess): Promise<string> {
  let out = "";
  child.stdout?.on("data", (b: Buffer) => {
    out += b.toString();
  });
  return new Promise<string>((done) => child.on("close", () => done(out)));
}

/**
 * SIGKILL `pid` from another process (the clients block their thread) once the scripted worker
 * has the "hang" hook in hand, i.e. after the server claimed it; never after a fixed delay.
 */
export function killAfterHangClaimed(root: string, pid: number): void {
  const marker = join(root, ".hang-claimed");
  spawn(
    "sh",
    // bounded (a minute), so a hook never claimed leaves no shell behind
    [
      "-c",
      `i=0; while [ ! -e "$1" ] && [ $i -lt 3000 ]; do sleep 0.02; i=$((i+1)); done; rm -f "$1"; kill -9 ${pid}`,
      "sh",
      marker,
    ],
    { stdio: "ignore" },
  );
}
