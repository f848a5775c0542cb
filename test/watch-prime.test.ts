import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  effectiveExcludes,
  isProcessAlive,
  readConfig,
  workspacePaths,
} from "../src/core/index.ts";
import { readHookServer } from "../src/hooks/index.ts";
import {
  createSnapshot,
  initWorkspace,
  peekStatCache,
  readManifest,
  runningWatchDaemon,
  scanWorkspace,
  watchPaths,
} from "../src/store/index.ts";
import { makeTempDir, runCli } from "./helpers/cli.ts";
import { baseEnv, LAUNCHER } from "./helpers/launcher.ts";

/**
 * A new watch daemon primes the stat cache in a child process (`timewarp watch prime`): the
 * first command it serves goes by the delta path instead of walking the tree in the daemon's
 * worker (issue 22, item 5), and what changes while the prime walks still reaches the next
 * snapshot through the daemon's journal.
 */

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function waitUntil(check: () => boolean, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error("timed out waiting");
    await sleep(20);
  }
}

const cleanups: (() => void)[] = [];
beforeAll(() => {
  // vitest.config.ts turns watch daemons (and their prime) off for the other tests
  delete process.env.TIMEWARP_WATCH;
  delete process.env.TIMEWARP_WATCH_PRIME;
});
afterEach(() => {
  for (const c of cleanups.splice(0).reverse()) c();
});

/** A workspace of 4 directories × 5 files with one snapshot, taken before any daemon ran. */
function snapshotted(): string {
  const t = makeTempDir("tw-prime-");
  cleanups.push(() => {
    runCli(["watch", "stop", "-C", t.dir]);
    t.cleanup();
  });
  const root = t.dir;
  initWorkspace(root);
  for (let d = 0; d < 4; d++) {
    mkdirSync(join(root, `d${d}`));
    for (let f = 0; f < 5; f++) writeFileSync(join(root, `d${d}`, `f${f}.txt`), `${d}/${f}\n`);
  }
  const r = runCli(["snapshot", "create", "--json", "-C", root], {
    env: { TIMEWARP_WATCH: "0" },
  });
  expect(r.status, r.stderr).toBe(0);
  expect(r.json()).toMatchObject({ scan: "walk" });
  return root;
}

function startDaemon(root: string, env: NodeJS.ProcessEnv = {}): number {
  const r = runCli(["watch", "start", "--json", "-C", root], { env });
  expect(r.status, r.stderr).toBe(0);
  return (r.json() as { pid: number }).pid;
}

/**
 * The hook server's record counts `n` commands served (it counts each before writing its
 * answer); the daemon's log names each request it declined, and why.
 */
function servedCount(root: string, n: number): void {
  expect(readHookServer(root)?.served, readFileSync(watchPaths(root).log, "utf8")).toBe(n);
}

/** The stat cache holds a token of the running daemon. */
function primed(root: string): boolean {
  const info = runningWatchDaemon(root);
  const token = peekStatCache(workspacePaths(root).statCache)?.watchToken;
  return info !== null && token?.startsWith(`${info.instance}:`) === true;
}

/** The daemon's log lines about its prime: the child's pid and its JSON answer. */
function primeLines(root: string): { pid: number; answer: Record<string, unknown> }[] {
  const log = readFileSync(watchPaths(root).log, "utf8");
  return [...log.matchAll(/^timewarp watch: prime pid (\d+) ended \(exit 0\): (\{.*\})$/gm)].map(
    (m) => ({ pid: Number(m[1]), answer: JSON.parse(m[2] as string) as Record<string, unknown> }),
  );
}

/** `timewarp snapshot create --json` through bin/timewarp (served by the daemon). */
function servedSnapshot(root: string): { scan: string; snapshot_id: string } {
  const r = spawnSync("sh", [LAUNCHER, "snapshot", "create", "--json"], {
    cwd: root,
    encoding: "utf8",
    env: baseEnv(),
    timeout: 60_000,
  });
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as { scan: string; snapshot_id: string };
}

/** A walk of the workspace, for comparison. */
function walked(root: string) {
  const excludes = effectiveExcludes(readConfig(workspacePaths(root).config));
  return scanWorkspace(root, { excludes }).manifest.entries;
}

/** A Claude Code hook on a Bash tool call through the CLI (served when a daemon runs); its summary. */
function shellHook(root: string, event: string, id: string, env: NodeJS.ProcessEnv = {}): string {
  const r = runCli(["hook", event, "--json", "-C", root], {
    env,
    input: JSON.stringify({
      session_id: "s1",
      cwd: root,
      hook_event_name: event,
      tool_name: "Bash",
      tool_use_id: id,
      tool_input: { command: `step ${id}` },
    }),
  });
  expect(r.status, r.stderr).toBe(0);
  return (r.json() as { summary: string }).summary;
}

/** The token the shell hooks' view holds (its overlay's, else its cache's). */
function viewToken(root: string): string | undefined {
  const dir = join(root, ".timewarp", "hooks");
  try {
    return (JSON.parse(readFileSync(join(dir, "overlay.json"), "utf8")) as { token: string }).token;
  } catch {
    return peekStatCache(join(dir, "stat-cache.bin"))?.watchToken;
  }
}

describe("the watch daemon's prime", () => {
  it("walks in a child, so the first snapshot the daemon serves goes by the delta path", async () => {
    const root = snapshotted();
    writeFileSync(join(root, "d1", "f1.txt"), "changed while no daemon ran\n");
    const daemon = startDaemon(root);
    // (the child's answer reaches the log once it has exited)
    await waitUntil(() => primeLines(root).length === 1);
    expect(primed(root)).toBe(true);
    const [line] = primeLines(root);
    expect(line?.answer).toMatchObject({ outcome: "primed", files: 20, manifest: "written" });
    expect(line?.pid).not.toBe(daemon);
    await waitUntil(() => readHookServer(root) !== null);
    const served = readHookServer(root)?.served ?? 0;
    const snap = servedSnapshot(root);
    servedCount(root, served + 1);
    expect(snap.scan).toBe("delta");
    expect(readManifest(root, snap.snapshot_id).entries).toEqual(walked(root));
    // a second daemon finds the cache's manifest file still holds the tree: it keeps it
    runCli(["watch", "stop", "-C", root]);
    startDaemon(root);
    await waitUntil(() => primeLines(root).length === 2);
    expect(primed(root)).toBe(true);
    expect(primeLines(root)[1]?.answer).toMatchObject({ outcome: "primed", manifest: "kept" });
  }, 120_000);

  it("takes its token before it walks: a change made after the walk reaches the next snapshot", async () => {
    const root = snapshotted();
    const hold = makeTempDir("tw-prime-hold-");
    cleanups.push(hold.cleanup);
    const daemon = startDaemon(root, { TIMEWARP_HOLD_AT: `prime:walked@${hold.dir}` });
    await waitUntil(() => existsSync(join(hold.dir, "held")));
    // the daemon keeps V8's young generation small; its prime, which walks, does not
    const child = Number(readFileSync(join(hold.dir, "held"), "utf8"));
    const argv = (pid: number) => readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
    if (existsSync(`/proc/${daemon}/cmdline`)) {
      expect(argv(daemon)).toContain("--max-semi-space-size=1");
      expect(argv(child)).toContain("prime");
      expect(argv(child)).not.toContain("--max-semi-space-size=1");
    }
    // the walk is over; the cache is not written yet
    writeFileSync(join(root, "d2", "f3.txt"), "written after the prime's walk, a longer line\n");
    writeFileSync(join(root, "d3", "new.txt"), "new\n");
    writeFileSync(join(hold.dir, "go"), "");
    await waitUntil(() => primed(root));
    const snap = createSnapshot(root);
    expect(snap.scan).toBe("delta");
    expect(readManifest(root, snap.id).entries).toEqual(walked(root));
    expect(readManifest(root, snap.id).entries.some((e) => e.path === "d3/new.txt")).toBe(true);
  }, 120_000);

  it("a command that comes while the prime walks runs in its client's process; the prime then writes nothing", async () => {
    const root = snapshotted();
    const hold = makeTempDir("tw-prime-hold-");
    cleanups.push(hold.cleanup);
    startDaemon(root, { TIMEWARP_HOLD_AT: `prime:walked@${hold.dir}` });
    await waitUntil(() => existsSync(join(hold.dir, "held")) && readHookServer(root) !== null);
    const served = readHookServer(root)?.served;
    writeFileSync(join(root, "d0", "f0.txt"), "changed while the prime waited\n");
    // declined by the daemon: the launcher ran it in its own process, which walked
    expect(servedSnapshot(root).scan).toBe("walk");
    expect(readHookServer(root)?.served).toBe(served);
    expect(readFileSync(watchPaths(root).log, "utf8")).toContain(
      "declined command snapshot create: the watch daemon is still priming its stat cache",
    );
    writeFileSync(join(hold.dir, "go"), "");
    await waitUntil(() => /prime pid \d+ ended/.test(readFileSync(watchPaths(root).log, "utf8")));
    expect(readFileSync(watchPaths(root).log, "utf8")).toContain(
      '"outcome":"skipped","reason":"the stat cache was written meanwhile"',
    );
    const next = servedSnapshot(root);
    servedCount(root, (served ?? 0) + 1);
    expect(next.scan).toBe("delta");
    expect(readManifest(root, next.snapshot_id).entries).toEqual(walked(root));
  }, 120_000);

  it("brings the shell hooks' view to the daemon's token too, but not while a shell command runs", async () => {
    const root = snapshotted();
    const off = { TIMEWARP_WATCH: "0" };
    // a view from before the daemon: a shell command, then one still running when it starts
    shellHook(root, "pre-tool-use", "b0", off);
    shellHook(root, "post-tool-use", "b0", off);
    shellHook(root, "pre-tool-use", "b1", off);
    writeFileSync(join(root, "d0", "f4.txt"), "written by the running command\n");
    startDaemon(root);
    await waitUntil(() => primeLines(root).length === 1);
    expect(primeLines(root)[0]?.answer).toMatchObject({
      outcome: "primed",
      shell_view: "a shell command is running",
    });
    await waitUntil(() => readHookServer(root) !== null);
    expect(shellHook(root, "post-tool-use", "b1")).toMatch(/1 file\(s\) changed/);
    // with no command running, the next daemon's prime moves the view to its token
    runCli(["watch", "stop", "-C", root]);
    startDaemon(root);
    await waitUntil(() => primeLines(root).length === 2);
    expect(primeLines(root)[1]?.answer).toMatchObject({ shell_view: "primed" });
    const instance = runningWatchDaemon(root)?.instance;
    expect(viewToken(root)?.startsWith(`${instance}:`)).toBe(true);
    await waitUntil(() => readHookServer(root) !== null);
    const served = readHookServer(root)?.served ?? 0;
    expect(shellHook(root, "pre-tool-use", "b2")).toMatch(/baseline of 20 files/);
    writeFileSync(join(root, "d1", "f0.txt"), "written by b2\n");
    expect(shellHook(root, "post-tool-use", "b2")).toMatch(/1 file\(s\) changed/);
    servedCount(root, served + 2);
  }, 120_000);

  it("a daemon stopped while its prime runs ends the prime, and the cache stays as it was", async () => {
    const root = snapshotted();
    const before = peekStatCache(workspacePaths(root).statCache);
    const hold = makeTempDir("tw-prime-hold-");
    cleanups.push(hold.cleanup);
    startDaemon(root, { TIMEWARP_HOLD_AT: `prime:walked@${hold.dir}` });
    await waitUntil(() => existsSync(join(hold.dir, "held")));
    const child = Number(readFileSync(join(hold.dir, "held"), "utf8"));
    expect(runCli(["watch", "stop", "-C", root]).status).toBe(0);
    await waitUntil(() => !isProcessAlive(child));
    expect(peekStatCache(workspacePaths(root).statCache)).toEqual(before);
    // and a snapshot by walk, as without a daemon
    expect(createSnapshot(root).scan).toBe("walk");
  }, 120_000);
});
