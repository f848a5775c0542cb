import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import {
  chmodSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join, relative } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { workspacePaths } from "../src/core/index.ts";
import { hookServerPaths, readHookServer } from "../src/hooks/index.ts";
import { makeTempDir, REPO_ROOT } from "./helpers/cli.ts";
import { holdLockInChild } from "./helpers/lock-holder.ts";
import {
  cleanups,
  leftovers,
  runCleanups,
  scriptedServer,
  waitUntil,
} from "./helpers/scripted-hook-server.ts";

/**
 * bin/timewarp's write commands (`snapshot create`, `travel`, `return`, `revert`) against a real
 * watch daemon. Two workspaces made alike go through the same commands, one in the CLI's own
 * process and one through the launcher: each answer equals the other's (stdout, stderr, exit
 * code; new ids, times and durations aside) and so do the trees after it, refusals included
 * (checked under dash with mawk and bash with gawk). Then, under the first of them: progress
 * reaches the terminal while the command runs; a held lock and a second command meet the same
 * refusal as in-process; Ctrl-C leaves the command to finish in the daemon; and a daemon killed
 * -9 mid-travel is reported as COMMAND_LOST and never runs the travel a second time.
 */

const SCRIPT = join(REPO_ROOT, "bin", "timewarp");
const NODE_CLI = join(REPO_ROOT, "bin", "timewarp.cjs");
const SLOW_TEST_MS = 120_000;

const VARIANTS = [
  { name: "dash with mawk", shell: "/bin/dash", awk: "/usr/bin/mawk" },
  { name: "bash with gawk", shell: "/bin/bash", awk: "/usr/bin/gawk" },
].map((v) => ({ ...v, available: existsSync(v.shell) && existsSync(v.awk) }));
type Variant = (typeof VARIANTS)[number];
const FIRST = VARIANTS.find((v) => v.available) ?? (VARIANTS[0] as Variant);

interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

function baseEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: "1" };
  delete env.TIMEWARP_WATCH;
  return env;
}

/** The CLI in its own process. */
function inProcess(args: string[], cwd: string, env: NodeJS.ProcessEnv = {}): Run {
  const r = spawnSync(process.execPath, [NODE_CLI, ...args], {
    cwd,
    encoding: "utf8",
    env: { ...baseEnv(), ...env },
    timeout: 60_000,
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}
const json = <T>(r: Run): T => JSON.parse(r.stdout) as T;

/** A workspace with two snapshots, three ledger edits and a change made outside them. */
function workspace(): { root: string; first: string; ops: string[] } {
  const t = makeTempDir("tw-cliwrite-");
  const root = t.dir;
  spawnSync("git", ["init", "-q"], { cwd: root });
  mkdirSync(join(root, "src"));
  for (let i = 0; i < 20; i++)
    writeFileSync(join(root, "src", `f${i}.ts`), `export const v${i} = ${i};\n`);
  const ok = (args: string[]) => {
    const r = inProcess(args, root);
    expect(r.status, `${args.join(" ")}: ${r.stderr}`).toBe(0);
    return r;
  };
  ok(["init"]);
  ok(["watch", "start", "--json"]);
  const first = json<{ snapshot_id: string }>(ok(["snapshot", "create", "--json"])).snapshot_id;
  const ops: string[] = [];
  for (const f of ["f0", "f2", "f3"]) {
    writeFileSync(join(root, "draft.txt"), `export const ${f} = 'changed';\n`);
    const edit = ok(["edit", "whole", `src/${f}.ts`, "--content-file", "draft.txt", "--json"]);
    ops.push(json<{ snapshotId: string }>(edit).snapshotId);
  }
  ok(["snapshot", "create"]);
  writeFileSync(join(root, "src", "f1.ts"), "export const v1 = 'edited outside';\n");
  writeFileSync(join(root, "src", "f3.ts"), "export const f3 = 'changed again';\n");
  afterAllCleanups.push(() => {
    inProcess(["watch", "stop", "-C", root], REPO_ROOT);
    t.cleanup();
  });
  return { root, first, ops };
}
const afterAllCleanups: (() => void)[] = [];
/** Two workspaces made alike: `a` for the CLI in its own process, `b` for the launcher. */
let made: { a: ReturnType<typeof workspace>; b: ReturnType<typeof workspace> } | undefined;
const pair = () => {
  made ??= { a: workspace(), b: workspace() };
  return made;
};
afterEach(runCleanups);
afterAll(() => {
  for (const c of afterAllCleanups.splice(0).reverse()) c();
});

/** The workspace's files (not .timewarp/ or .git/): path → mode and content. */
function tree(root: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, e.name);
      if (e.name === ".timewarp" || e.name === ".git") continue;
      if (e.isDirectory()) walk(path);
      else out[relative(root, path)] = readFileSync(path, "utf8");
    }
  };
  walk(root);
  return out;
}

/**
 * An answer with what differs between two workspaces by nature made alike: the root's path, ids
 * (snapshots, backups, operations: numbered in order of appearance), times, durations, hashes.
 */
function normalized(run: Run, root: string, ops: string[]): Run {
  const seen = new Map<string, string>();
  const number = (kind: string) => (id: string) => {
    if (!seen.has(id)) seen.set(id, `<${kind}${seen.size}>`);
    return seen.get(id) as string;
  };
  const clean = (text: string) => {
    let t = text.split(root).join("<root>");
    for (const op of ops) t = t.split(op).join(number("op")(op));
    return t
      .replace(/\b[sb]_\d{8}_\d{6}_[0-9a-z]{6}\b/g, number("id"))
      .replace(/"(newSnapshotId|snapshotId)":"[0-9a-z]{10}"/g, (m) => number("op")(m))
      .replace(/\(operation [0-9a-z]{10}\)/g, (m) => number("op")(m))
      .replace(/\b[0-9a-f]{40}\b/g, number("hash"))
      .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z/g, "<time>")
      .replace(/"duration_ms":\d+/g, '"duration_ms":<ms>')
      .replace(/\(\d+ ms by/g, "(<ms> by");
  };
  return { status: run.status, stdout: clean(run.stdout), stderr: clean(run.stderr) };
}

/** The backups travel made (`b_…`; an older one may go when a newer comes). */
function backups(root: string): string[] {
  const dir = join(root, ".timewarp", "present_backup");
  return existsSync(dir) ? readdirSync(dir) : [];
}
const added = (before: string[], after: string[]) => after.filter((b) => !before.includes(b));
/** How many travels completed, by the event bus. */
function travelsCompleted(root: string): number {
  const bus = readFileSync(join(root, ".timewarp", "events.jsonl"), "utf8");
  return bus.split("\n").filter((l) => l.includes('"type":"travel.completed"')).length;
}

/** The launcher's helpers for one shell and awk. */
function under(variant: Variant) {
  /** A bin directory as npm makes one: the launcher linked in, an awk, a `node` that logs. */
  function binDir(): { dir: string; nodeStarts: () => string[] } {
    const t = makeTempDir("tw-cliwbin-");
    cleanups.push(t.cleanup);
    const log = join(t.dir, "node.log");
    symlinkSync(SCRIPT, join(t.dir, "timewarp"));
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
  const served = (dir: string) => readHookServer(dir)?.served ?? -1;
  return { binDir, launch, start, served };
}

/** A child's output as it comes, and its end (once its pipes are closed). */
function collect(child: ChildProcess) {
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

describe.each(VARIANTS)("bin/timewarp's write commands under $name", (variant) => {
  const { binDir, launch, served } = under(variant);

  it.runIf(variant.available)(
    "answer as the CLI in its own process and leave the same workspace, refusals included",
    async () => {
      const bin = binDir();
      // (the second shell runs its steps on from where the first left both workspaces)
      const { a, b } = pair();
      const steps: ((w: typeof a) => string[])[] = [
        () => ["snapshot", "create", "--json"],
        () => ["snapshot", "create"],
        (w) => ["travel", w.first],
        (w) => ["travel", w.first, "--json"], // NESTED_TRAVEL
        () => ["--json", "return"],
        () => ["travel", "s_20200101_000000_nope00", "--json"], // SNAPSHOT_NOT_FOUND
        () => ["travel", "s_20200101_000000_nope00"],
        () => ["return"],
        () => ["return", "--json"], // NOT_IN_PAST
        (w) => ["revert", w.ops[0] as string, "--json"],
        (w) => ["revert", w.ops[1] as string],
        (w) => ["revert", w.ops[1] as string, "--json"], // reverted already
        (w) => ["revert", w.ops[2] as string], // REVERT_CONFLICT: changed since
        (w) => ["revert", w.ops[2] as string, "--dry-run", "--json"],
        () => ["revert", "nope0nope0", "--json"], // OPERATION_NOT_FOUND
        () => ["travel", "--json"], // usage: left to the CLI in its own process
      ];
      // (the second shell and awk: each command once, text and JSON; the lines are the same)
      const chosen = variant === FIRST ? steps : [0, 2, 4, 9, 10, 15].map((i) => steps[i]);
      const opsOf = (w: typeof a) => [
        ...w.ops,
        ...json<{ history: { snapshotId: string }[] }>(
          inProcess(["history", "--json", "--limit", "100"], w.root),
        ).history.map((o) => o.snapshotId),
      ];
      let ops = { a: opsOf(a), b: opsOf(b) };
      for (const step of chosen as typeof steps) {
        const before = served(b.root);
        const want = inProcess(step(a), a.root);
        const got = launch(bin.dir, step(b), b.root);
        const label = step(b).join(" ");
        if (label.startsWith("revert") && got.status === 0 && !label.includes("--dry-run"))
          ops = { a: opsOf(a), b: opsOf(b) };
        expect(normalized(got, b.root, ops.b), label).toEqual(normalized(want, a.root, ops.a));
        expect(tree(b.root), label).toEqual(tree(a.root));
        if (label !== "travel --json") {
          await waitUntil(() => served(b.root) > before);
          expect(served(b.root), label).toBe(before + 1);
        }
      }
      // only the usage error started a Node (the history calls above are in-process)
      expect(bin.nodeStarts()).toEqual([`${NODE_CLI} travel --json`]);
      expect(leftovers(b.root)).toEqual([]);
    },
    SLOW_TEST_MS,
  );
});

describe(`bin/timewarp's write commands, while they run, under ${FIRST.name}`, () => {
  const variant = FIRST;
  const { binDir, launch, start, served } = under(variant);
  let w: ReturnType<typeof workspace>;
  beforeAll(() => {
    w = pair().b; // its daemon is killed last
  }, SLOW_TEST_MS);

  it.runIf(variant.available && existsSync("/usr/bin/script"))(
    "progress reaches the terminal while the travel runs in the daemon",
    async () => {
      const bin = binDir();
      const before = served(w.root);
      // each state write sleeps 1.5 s in the worker: the line (shown after ~1 s) comes before the end
      const child = spawn(
        "/usr/bin/script",
        ["-qc", `${variant.shell} ${join(bin.dir, "timewarp")} travel ${w.first}`, "/dev/null"],
        {
          cwd: w.root,
          env: {
            ...baseEnv(),
            NO_COLOR: undefined,
            PATH: `${bin.dir}:${process.env.PATH}`,
            TIMEWARP_PAUSE_AT: "state-write:1500",
          },
          stdio: ["ignore", "pipe", "pipe"],
        },
      );
      cleanups.push(() => child.kill("SIGKILL"));
      const run = collect(child);
      await waitUntil(() => run.out.stdout.includes("\r\x1b[2Krestore"), 60_000);
      expect(child.exitCode).toBeNull();
      expect(run.out.stdout).not.toContain("past");
      const end = await run.done;
      expect(end.status).toBe(0);
      expect(end.stdout).toContain("\x1b[33mpast\x1b[39m: workspace at");
      expect(served(w.root)).toBe(before + 1);
      expect(bin.nodeStarts()).toEqual([]);
      expect(launch(bin.dir, ["return", "--json"], w.root).status).toBe(0);
    },
    SLOW_TEST_MS,
  );

  it.runIf(variant.available)(
    "a held lock, a second command, and Ctrl-C: refused as in-process; the first goes on",
    async () => {
      const bin = binDir();
      const lock = workspacePaths(w.root).lock;
      const holder = await holdLockInChild(lock, "test holder", cleanups);
      for (const args of [
        ["travel", w.first, "--json"],
        ["snapshot", "create"],
      ]) {
        const got = launch(bin.dir, args, w.root);
        expect(got.stdout + got.stderr).toContain("LOCKED");
        expect(got, args.join(" ")).toEqual(inProcess(args, w.root));
      }
      holder.kill("SIGKILL");
      await waitUntil(() => holder.exitCode !== null || holder.signalCode !== null);
      expect(bin.nodeStarts()).toEqual([]);

      const had = backups(w.root);
      const first = start(bin.dir, ["travel", w.first, "--json"], w.root, {
        TIMEWARP_PAUSE_AT: "travel:restore:4000",
      });
      // started: the worker holds the lock (the killed holder's stale one is taken over)
      const daemon = readHookServer(w.root)?.pid;
      const holderPid = () => {
        try {
          return (JSON.parse(readFileSync(lock, "utf8")) as { pid: number }).pid;
        } catch {
          return undefined;
        }
      };
      await waitUntil(() => holderPid() === daemon, 60_000);
      expect(first.child.exitCode).toBeNull();
      // a second write command meanwhile: the worker is busy, so it runs in its own process,
      // and meets the lock as the CLI does
      const second = launch(bin.dir, ["snapshot", "create", "--json"], w.root);
      expect(json<{ error: { code: string } }>(second).error.code).toBe("LOCKED");
      expect(second).toEqual(inProcess(["snapshot", "create", "--json"], w.root));
      expect(bin.nodeStarts()).toEqual([`${NODE_CLI} snapshot create --json`]);
      // Ctrl-C: the launcher leaves, saying so; the travel goes on in the daemon
      first.child.kill("SIGINT");
      const ended = await first.done;
      expect(ended.status).toBe(130);
      expect(ended.stdout).toBe("");
      expect(ended.stderr).toMatch(/goes on with this command; `timewarp status` shows/);
      await waitUntil(() => !existsSync(lock), 60_000);
      const status = json<{ mode: string }>(inProcess(["status", "--json"], w.root));
      expect(status.mode).toBe("past");
      expect(added(had, backups(w.root))).toHaveLength(1);
      expect(launch(bin.dir, ["return"], w.root).status).toBe(0);
      // what the launcher left (the travel's reply, nobody to read it) the server sweeps later
      await waitUntil(() => leftovers(w.root).some((n) => n.startsWith("res-")));
    },
    SLOW_TEST_MS,
  );

  it.runIf(variant.available)(
    "a daemon killed -9 mid-travel: COMMAND_LOST, the travel not run again, recover mends it",
    async () => {
      const bin = binDir();
      const before = tree(w.root);
      const had = backups(w.root);
      const travels = travelsCompleted(w.root);
      const daemon = readHookServer(w.root)?.pid as number;
      const run = start(bin.dir, ["travel", w.first, "--json"], w.root, {
        TIMEWARP_PAUSE_AT: "travel:restore:30000",
      });
      // the worker started the travel (its stderr file) and backed the present up
      const hooks = hookServerPaths(w.root).dir;
      await waitUntil(
        () =>
          readdirSync(hooks).some((n) => n.startsWith("err-")) &&
          added(had, backups(w.root)).length > 0,
        60_000,
      );
      process.kill(daemon, "SIGKILL");
      const end = await run.done;
      expect(end.status).toBe(1);
      expect(end.stderr).toBe("");
      const error = json<{
        error: { code: string; message: string; data: { daemon_pid: number; status: unknown } };
      }>(end).error;
      expect(error.code).toBe("COMMAND_LOST");
      expect(error.message).toContain("not run again");
      expect(error.data.daemon_pid).toBe(daemon);
      expect(error.data.status).toMatchObject({ mode: expect.any(String) });
      // the one Node started was that status, not the travel a second time
      expect(bin.nodeStarts()).toEqual([`${NODE_CLI} -C ${w.root} status --json`]);
      expect(added(had, backups(w.root))).toHaveLength(1);
      expect(travelsCompleted(w.root)).toBe(travels);
      const recovered = inProcess(["recover", "--json"], w.root);
      expect(recovered.status, recovered.stdout).toBe(0);
      expect(added(had, backups(w.root)).length).toBeLessThanOrEqual(1);
      const mode = json<{ mode: string }>(inProcess(["status", "--json"], w.root)).mode;
      if (mode === "past") expect(inProcess(["return"], w.root).status).toBe(0);
      expect(tree(w.root)).toEqual(before);
    },
    SLOW_TEST_MS,
  );
});

describe(`bin/timewarp's write commands and a scripted server, under ${FIRST.name}`, () => {
  const { binDir, launch } = under(FIRST);

  it.runIf(FIRST.available)(
    "a worker that dies after starting one: COMMAND_LOST, not run again; a decline: run once here",
    async () => {
      const bin = binDir();
      const t = makeTempDir("tw-cliwscript-");
      cleanups.push(t.cleanup);
      expect(inProcess(["init"], t.dir).status).toBe(0);
      await scriptedServer(t.dir, "normal");
      const lost = launch(bin.dir, ["revert", "k3v9q2m1xa"], t.dir, {
        HOOK_TEST_COMMAND: "crash-started",
      });
      expect(lost.status).toBe(1);
      expect(lost.stdout).toBe("");
      expect(lost.stderr).toMatch(/^error COMMAND_LOST: the watch daemon \(pid \d+\) took this/);
      expect(lost.stderr).toContain("the workspace now (timewarp status):\nworkspace ");
      expect(bin.nodeStarts()).toEqual([`${NODE_CLI} -C ${t.dir} status`]);
      expect(leftovers(t.dir)).toEqual([]);

      // a server that declines (its code changed): nothing started, so the CLI runs it here, once
      const u = makeTempDir("tw-cliwstale-");
      cleanups.push(u.cleanup);
      expect(inProcess(["init"], u.dir).status).toBe(0);
      await scriptedServer(u.dir, "stale");
      const args = ["revert", "nope0nope0", "--json"];
      expect(launch(bin.dir, args, u.dir)).toEqual(inProcess(args, u.dir));
      expect(bin.nodeStarts().slice(1)).toEqual([`${NODE_CLI} ${args.join(" ")}`]);
      expect(leftovers(u.dir)).toEqual([]);
    },
    SLOW_TEST_MS,
  );
});
