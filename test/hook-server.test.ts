import { spawn, spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { isProcessAlive } from "../src/core/index.ts";
import {
  callHookServer,
  type HookClientResult,
  hookServerPaths,
  readHookServer,
} from "../src/hooks/index.ts";
import { bundledSource } from "./helpers/bundle.ts";
import { cliCommand, makeTempDir, REPO_ROOT, runCli } from "./helpers/cli.ts";
import {
  cleanups,
  killAfterHangClaimed,
  leftovers,
  runCleanups,
  scriptedServer,
  sleep,
  stdoutOf,
  waitUntil,
  workspace,
} from "./helpers/scripted-hook-server.ts";

/**
 * The hook server: the watch daemon answers `timewarp hook` calls from a worker thread that
 * keeps the hook code loaded, and the bin's client hands calls to it through files claimed by
 * rename. First its machinery, with a server process whose worker is scripted
 * (helpers/hook-server-child.ts); then the real daemon running the real hooks.
 */

beforeAll(() => {
  // vitest.config.ts turns watch daemons off for the other tests; these need them
  delete process.env.TIMEWARP_WATCH;
});
afterEach(runCleanups);

/**
 * The per-hook limit where a test makes a hook run past it: long enough that the worker's start
 * and the next, quick hook fit in it on a loaded machine (300 ms did not at a load of 18).
 */
const HOOK_LIMIT = "3000";

function call(
  root: string,
  event: string,
  input: string | (() => Buffer),
  options: {
    env?: NodeJS.ProcessEnv;
    json?: boolean;
    claimTimeoutMs?: number;
    replyTimeoutMs?: number;
  } = {},
): HookClientResult {
  return callHookServer({
    args: { event, ...(options.json ? { json: true } : {}) },
    cwd: root,
    env: { ...process.env, ...options.env },
    input,
    // A claim within the client's default second is a matter of load: only the tests about
    // claiming set a short limit, the others wait as long as a loaded machine needs.
    claimTimeoutMs: options.claimTimeoutMs ?? 60_000,
    ...(options.replyTimeoutMs !== undefined ? { replyTimeoutMs: options.replyTimeoutMs } : {}),
  });
}

/** What the scripted worker saw, from its echo. */
function echoed(result: HookClientResult): {
  event: string;
  input: string;
  cwd: string;
  root: string | null;
  agent: string | null;
  json: boolean;
  reply: string | null;
  marker: string | null;
  secret: string | null;
  lc_all: string | null;
  awkpath: string | null;
} {
  if (!result.served) throw new Error(`not served: ${result.reason}`);
  return JSON.parse(result.stdout);
}

describe("the hook server's machinery (a scripted worker)", () => {
  it("without a server nothing is read or written, and the caller runs the hook", () => {
    const root = workspace();
    let read = false;
    const r = call(root, "echo", () => {
      read = true;
      return Buffer.from("{}");
    });
    expect(r).toEqual({ served: false, reason: "no hook server runs" });
    expect(read).toBe(false);
    // the opt-outs skip even a running server
    expect(call(root, "echo", "{}", { env: { TIMEWARP_HOOK_SERVER: "0" } }).served).toBe(false);
    expect(call(root, "echo", "{}", { env: { TIMEWARP_CRASH_AT: "x" } })).toMatchObject({
      served: false,
      reason: "TIMEWARP_CRASH_AT is set",
    });
  });

  it("answers under the client's cwd and environment, the payload byte for byte, exit codes kept", async () => {
    const root = workspace();
    await scriptedServer(root, "normal");
    const payload = `{"text":"${"é∑😀\\n".repeat(60_000)}"}`;
    const env = { HOOK_TEST_MARKER: "m1", HOOK_TEST_API_KEY: "sk-not-for-disk", LC_ALL: "C" };
    const seen = echoed(call(root, "echo", payload, { env, json: true }));
    // the environment, but for secret-looking names, which never reach the request file
    expect(seen).toEqual({
      event: "echo",
      input: payload,
      cwd: root,
      root: null,
      agent: null,
      json: true,
      reply: null,
      marker: "m1",
      secret: null,
      lc_all: "C",
      awkpath: null,
    });
    expect(statSync(hookServerPaths(root).dir).mode & 0o777).toBe(0o700);
    expect(call(root, "block", "{}")).toMatchObject({ served: true, exitCode: 2 });
    expect(leftovers(root)).toEqual([]);
    // counted before the answer is written
    expect(readHookServer(root)?.served).toBe(2);
  });

  it("publishes per-event counts and claim-to-reply times for `watch status`", async () => {
    const root = workspace();
    await scriptedServer(root, "normal");
    for (let i = 0; i < 3; i++) expect(call(root, "echo", "{}").served).toBe(true);
    expect(call(root, "slow", "{}").served).toBe(true);
    expect(readHookServer(root)?.served).toBe(4);
    const timings = readHookServer(root)?.timings ?? {};
    expect(Object.keys(timings).sort()).toEqual(["echo", "slow"]);
    expect(timings.echo?.count).toBe(3);
    expect(timings.slow).toMatchObject({ count: 1 });
    // a timer may fire a millisecond early; one sample is its own median and p95. Lower bounds
    // only (the slow hook sleeps 150 ms): a loaded machine can only make them longer.
    expect(timings.slow?.p50_ms).toBeGreaterThanOrEqual(140);
    expect(timings.slow?.p95_ms).toBe(timings.slow?.p50_ms);
    expect(timings.echo?.p50_ms).toBeLessThanOrEqual(timings.echo?.p95_ms ?? 0);
  });

  it("counts an answer in its record before the client has it", async () => {
    const root = workspace();
    const hold = makeTempDir("tw-hook-hold-");
    cleanups.push(hold.cleanup);
    // the server stops between counting the answer and writing it
    await scriptedServer(root, "normal", { TIMEWARP_HOLD_AT: `hooks:answering@${hold.dir}` });
    const before = readHookServer(root)?.served ?? 0;
    const file = bundledSource(`
      import { callHookServer } from ${JSON.stringify(join(REPO_ROOT, "src", "hooks", "index.ts"))};
      const r = callHookServer({ args: { event: "echo" }, cwd: process.argv[2], env: process.env, input: "counted" });
      process.stdout.write(r.served ? r.stdout : "not served: " + r.reason);`);
    const child = spawn(process.execPath, [file, root], {
      cwd: REPO_ROOT,
      stdio: ["ignore", "pipe", "inherit"],
    });
    const out = stdoutOf(child);
    await waitUntil(() => existsSync(join(hold.dir, "held")));
    expect(readHookServer(root)?.served).toBe(before + 1);
    expect(child.exitCode).toBeNull();
    writeFileSync(join(hold.dir, "go"), "");
    expect(JSON.parse(await out).input).toBe("counted");
  }, 60_000);

  it("parallel clients each get their own answer", async () => {
    const root = workspace();
    await scriptedServer(root, "normal");
    const script = `
      import { callHookServer } from ${JSON.stringify(join(REPO_ROOT, "src", "hooks", "index.ts"))};
      const r = callHookServer({ args: { event: "echo" }, cwd: process.argv[2], env: process.env, input: process.argv[3] });
      process.stdout.write(r.served ? r.stdout : "not served: " + r.reason);`;
    // (bundled: six clients through tsx's loader at once took seconds each on a loaded machine)
    const file = bundledSource(script);
    const runs = Array.from({ length: 6 }, (_, i) => {
      const child = spawn(process.execPath, [file, root, `payload ${i}`], {
        cwd: REPO_ROOT,
        stdio: ["ignore", "pipe", "inherit"],
      });
      return stdoutOf(child);
    });
    const outs = await Promise.all(runs);
    expect(outs.map((o) => JSON.parse(o).input)).toEqual(
      Array.from({ length: 6 }, (_, i) => `payload ${i}`),
    );
    expect(leftovers(root)).toEqual([]);
  }, 60_000);

  it("a stale server declines: the payload comes back to the caller, and the server is told", async () => {
    const root = workspace();
    const server = await scriptedServer(root, "stale");
    const r = call(root, "echo", () => Buffer.from("the payload"));
    expect(r).toMatchObject({ served: false, reason: "the code on disk changed" });
    expect(r.served === false && r.input?.toString()).toBe("the payload");
    await waitUntil(() => server.output().includes("stale: the code on disk changed"));
  });

  it("a server notices on its own that its code changed, without a request to decline", async () => {
    const root = workspace();
    const server = await scriptedServer(root, "stale-later", { HOOK_STALE_CHECK_MS: "50" });
    await sleep(200);
    expect(server.output()).not.toContain("stale:");
    // an upgrade's clients speak a newer protocol and never ask this server anything
    writeFileSync(join(root, ".stale"), "");
    await waitUntil(() => server.output().includes("stale: the code on disk changed"));
    expect(readHookServer(root)?.served).toBe(0);
  });

  it("a worker that cannot load declines what it was given: the hook never ran", async () => {
    const root = workspace();
    await scriptedServer(root, "broken-worker");
    const r = call(root, "echo", "{}");
    expect(r).toMatchObject({ served: false });
    expect(r.served === false && r.reason).toMatch(/does not load|exited/);
    expect(r.served === false && r.input?.toString()).toBe("{}");
  });

  it("a worker that dies mid-hook gives a failure in the hook's own form (exit 0), and the next hook a fresh worker", async () => {
    const root = workspace();
    await scriptedServer(root, "normal");
    const r = call(root, "crash", "{}", { json: true });
    expect(r.served).toBe(true);
    if (!r.served) return;
    expect(r.exitCode).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ kind: "failed", summary: "internal failure" });
    const plain = call(root, "crash", "{}");
    expect(plain).toMatchObject({ served: true, exitCode: 0, stdout: "" });
    expect(plain.served && plain.stderr).toMatch(/^timewarp hook: the hook worker exited/);
    expect(echoed(call(root, "echo", "after")).input).toBe("after");
  });

  it("a hook past its time is abandoned with a failure; the server goes on", async () => {
    const root = workspace();
    await scriptedServer(root, "normal", { HOOK_TIMEOUT_MS: HOOK_LIMIT });
    const r = call(root, "hang", "{}");
    expect(r).toMatchObject({ served: true, exitCode: 0 });
    expect(r.served && r.stderr).toMatch(new RegExp(`ran past ${HOOK_LIMIT} ms`));
    expect(echoed(call(root, "echo", "next")).input).toBe("next");
  });

  it("a live server that never replies: the client stops waiting at its limit and fails open", async () => {
    const root = workspace();
    await scriptedServer(root, "normal"); // its own limit for a hook: the default 2 minutes
    const t0 = performance.now();
    const r = call(root, "hang", "{}", { replyTimeoutMs: 600 });
    // a lower bound (it waited its limit out), which a loaded machine can only make longer
    expect(performance.now() - t0).toBeGreaterThanOrEqual(600);
    expect(r).toMatchObject({ served: true, exitCode: 0, stdout: "" });
    expect(r.served && r.stderr).toMatch(/no reply within 2 minutes/);
  });

  it("a worker stopped while it holds the workspace lock does not leave the lock to a live pid", async () => {
    const root = workspace();
    await scriptedServer(root, "normal", { HOOK_TIMEOUT_MS: HOOK_LIMIT });
    const lock = join(root, ".timewarp", "lock");
    const r = call(root, "hang-locked", "{}");
    expect(r.served && r.stderr).toMatch(new RegExp(`ran past ${HOOK_LIMIT} ms`));
    // the holder named the server's own (live) pid and the worker's thread: released for it
    await waitUntil(() => !existsSync(lock));
    expect(echoed(call(root, "echo", "next")).input).toBe("next");
  });

  it("a server that does not claim in time: the client takes its request back and runs the hook itself", async () => {
    const root = workspace();
    const { child } = await scriptedServer(root, "normal");
    child.kill("SIGSTOP"); // alive, its record in place, but deaf
    try {
      const t0 = performance.now();
      const r = call(root, "echo", "{}", { claimTimeoutMs: 300 });
      // a lower bound (it waited its limit out), which a loaded machine can only make longer
      expect(performance.now() - t0).toBeGreaterThanOrEqual(300);
      expect(r).toMatchObject({
        served: false,
        reason: "the hook server did not take the request",
      });
      expect(leftovers(root)).toEqual([]);
    } finally {
      child.kill("SIGCONT");
    }
    // woken up, it finds nothing to run: the request was taken back whole
    await sleep(200);
    expect(readHookServer(root)?.served).toBe(0);
    expect(echoed(call(root, "echo", "later")).input).toBe("later");
  });

  it("a server killed -9 after claiming: the client notices within a second, fails open, and never reruns the hook", async () => {
    const root = workspace();
    const { child } = await scriptedServer(root, "normal");
    // the client blocks this thread, so the kill comes from another process, once claimed
    killAfterHangClaimed(root, child.pid as number);
    // "is gone", not "no reply within 2 minutes": it noticed the death rather than timing out
    // (how soon is not asserted: a loaded machine may take its time)
    const r = call(root, "hang", "{}");
    expect(r).toMatchObject({ served: true, exitCode: 0 });
    expect(r.served && r.stderr).toMatch(/its process \d+ is gone/);
  });
});

describe("the watch daemon serves the real hooks", () => {
  function hookCall(root: string, event: string, payload: object, env: NodeJS.ProcessEnv = {}) {
    const r = runCli(["hook", event, "--json", "-C", root], {
      input: JSON.stringify({ session_id: "s1", cwd: root, hook_event_name: event, ...payload }),
      env,
    });
    expect(r.status, r.stderr).toBe(0);
    return r.json() as { kind: string; summary: string };
  }
  /** `watch status`: hooks answered, and per event how many. */
  function served(root: string): { served: number; byEvent: Record<string, number> } {
    const s = runCli(["watch", "status", "--json", "-C", root]).json() as {
      hooks: { served: number; timings: Record<string, { count: number }> } | null;
    };
    return {
      served: s.hooks?.served ?? -1,
      byEvent: Object.fromEntries(
        Object.entries(s.hooks?.timings ?? {}).map(([event, t]) => [event, t.count]),
      ),
    };
  }

  it("edit and shell hooks through the CLI are answered by the daemon and record what the in-process hooks record", async () => {
    const run = (root: string, env: NodeJS.ProcessEnv) => {
      const file = join(root, "src", "a.ts");
      const pre = hookCall(
        root,
        "pre-tool-use",
        { tool_name: "Edit", tool_use_id: "e1", tool_input: { file_path: file } },
        env,
      );
      writeFileSync(file, "export const a = 2;\n");
      const post = hookCall(
        root,
        "post-tool-use",
        { tool_name: "Edit", tool_use_id: "e1", tool_input: { file_path: file } },
        env,
      );
      const bash = { tool_name: "Bash", tool_use_id: "b1", tool_input: { command: "gen" } };
      const shellPre = hookCall(root, "pre-tool-use", bash, env);
      writeFileSync(join(root, "src", "gen.ts"), "export const generated = true;\n");
      const shellPost = hookCall(root, "post-tool-use", bash, env);
      const history = runCli(["history", "--json", "-C", root]).json() as {
        history: { tool: string; affectedFiles: string[] }[];
      };
      return {
        // (record ids are random)
        outcomes: [pre, post, shellPre, shellPost].map((o) =>
          `${o.kind}: ${o.summary}`.replace(/(record\(s\)) [0-9a-z]{10}\b/, "$1 <id>"),
        ),
        history: history.history.map((h) => `${h.tool} ${h.affectedFiles.join(",")}`).sort(),
      };
    };
    // Both with a watch daemon (shell hooks ask it what changed); one serves no hooks.
    const setup = (env: NodeJS.ProcessEnv): string => {
      const root = workspace();
      mkdirSync(join(root, "src"));
      writeFileSync(join(root, "src", "a.ts"), "export const a = 1;\n");
      const started = runCli(["watch", "start", "--json", "-C", root], { env });
      expect(started.status, started.stderr).toBe(0);
      cleanups.push(() => runCli(["watch", "stop", "-C", root]));
      return root;
    };
    const daemonRoot = setup({});
    await waitUntil(() => readHookServer(daemonRoot) !== null);
    const viaDaemon = run(daemonRoot, {});
    expect(readHookServer(daemonRoot)?.served).toBe(4);
    // and `watch status` says so, per event
    expect(served(daemonRoot)).toEqual({
      served: 4,
      byEvent: { "pre-tool-use": 2, "post-tool-use": 2 },
    });
    const plainRoot = setup({ TIMEWARP_HOOK_SERVER: "0" });
    expect(readHookServer(plainRoot)).toBeNull();
    const inProcess = run(plainRoot, { TIMEWARP_HOOK_SERVER: "0" });
    expect(viaDaemon).toEqual(inProcess);
    expect(viaDaemon.history).toEqual(["Edit src/a.ts", "shell src/gen.ts"]);
  }, 120_000);

  it("a session start through the daemon is bound to the agent's process: killed before its SessionEnd, the next start cleans it up", async () => {
    const root = workspace();
    const started = runCli(["watch", "start", "--json", "-C", root]);
    expect(started.status, started.stderr).toBe(0);
    cleanups.push(() => runCli(["watch", "stop", "-C", root]));
    await waitUntil(() => readHookServer(root) !== null);
    // An "agent": a process that runs the hook command and then is gone (no SessionEnd).
    const cli = cliCommand();
    const agent = spawnSync(
      process.execPath,
      [
        "-e",
        `const r = require("node:child_process").spawnSync(process.argv[1], process.argv.slice(2), { input: process.env.TW_PAYLOAD, stdio: ["pipe", "inherit", "inherit"] });
         process.exit(r.status ?? 1);`,
        cli.command,
        ...cli.args,
        "hook",
        "session-start",
        "--json",
        "-C",
        root,
      ],
      {
        encoding: "utf8",
        env: {
          ...process.env,
          TW_PAYLOAD: JSON.stringify({ session_id: "killed", cwd: root, source: "startup" }),
        },
      },
    );
    expect(agent.status, agent.stderr).toBe(0);
    expect(readHookServer(root)?.served).toBe(1);
    const first = /snapshot (\S+)/.exec(
      (JSON.parse(agent.stdout) as { summary: string }).summary,
    )?.[1] as string;
    const session = JSON.parse(
      readFileSync(join(root, ".timewarp", "sessions", "killed.json"), "utf8"),
    ) as { pid: number | null; process_start: string | null };
    // the agent's (or its launcher's), never the daemon's parent, which outlives every agent
    expect(session.pid).not.toBeNull();
    expect(session.pid).toBeGreaterThan(1);
    expect(session.process_start).toEqual(expect.any(String));
    expect(isProcessAlive(session.pid as number)).toBe(false);
    // a tool call's scratch left behind by the killed agent
    const scratch = join(root, ".timewarp", "hooks", "pending", "killed");
    mkdirSync(scratch, { recursive: true });
    writeFileSync(join(scratch, "t1.json"), "{}");
    writeFileSync(join(root, "after.txt"), "the workspace moved on\n");
    // the next session start (served too) drops the dead session, its snapshot and its scratch
    hookCall(root, "session-start", { session_id: "next", source: "startup" });
    await waitUntil(() => !existsSync(join(root, ".timewarp", "sessions", "killed.json")));
    await waitUntil(() => !existsSync(scratch));
    await waitUntil(() => !existsSync(join(root, ".timewarp", "snapshots", first)));
  }, 120_000);

  it("a session start through the daemon probes the client's PATH, not the daemon's", async () => {
    const root = workspace();
    const started = runCli(["watch", "start", "--json", "-C", root]);
    expect(started.status, started.stderr).toBe(0);
    cleanups.push(() => runCli(["watch", "stop", "-C", root]));
    await waitUntil(() => readHookServer(root) !== null);
    const bin = join(root, "..", `${root.split("/").pop()}-bin`);
    mkdirSync(bin);
    cleanups.push(() => spawnSync("rm", ["-rf", bin]));
    writeFileSync(join(bin, "python3"), "#!/bin/sh\necho 'Python 3.99.7'\n");
    chmodSync(join(bin, "python3"), 0o755);
    const out = hookCall(
      root,
      "session-start",
      { source: "startup" },
      {
        PATH: `${bin}:${process.env.PATH}`,
      },
    );
    expect(out.kind).toBe("ok");
    expect(readHookServer(root)?.served).toBe(1);
    expect(served(root)).toEqual({ served: 1, byEvent: { "session-start": 1 } });
    const id = /snapshot (\S+)/.exec(out.summary)?.[1] as string;
    const record = JSON.parse(
      readFileSync(join(root, ".timewarp", "snapshots", id, "snapshot.json"), "utf8"),
    ) as { env_fingerprint: { python?: string } };
    expect(record.env_fingerprint.python).toBe("3.99.7");
    expect(existsSync(hookServerPaths(root).record)).toBe(true);
  }, 60_000);
});
