import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { isProcessAlive, workspacePaths } from "../src/core/index.ts";
import { hookServerPaths, readHookServer } from "../src/hooks/index.ts";
import { makeTempDir } from "./helpers/cli.ts";
import {
  baseEnv,
  collect,
  FIRST_VARIANT,
  inProcess,
  inProcessLater,
  parsed as json,
  LAUNCHER_VARIANTS,
  launcherUnder,
  NODE_CLI,
  type Run,
} from "./helpers/launcher.ts";
import { holdLockInChild } from "./helpers/lock-holder.ts";
import {
  cleanups,
  leftovers,
  runCleanups,
  scriptedServer,
  waitUntil,
} from "./helpers/scripted-hook-server.ts";

/**
 * bin/timewarp's write commands (`snapshot create`, `travel`, `return`, `revert`, `rewind`)
 * against a real watch daemon. One workspace is made once, in the CLI's own process, and copied:
 * the steps run on one copy in the CLI's own process, and on another copy per shell through the
 * launcher; each answer equals the in-process one (stdout, stderr, exit code; new ids, times and
 * durations aside) and so do the trees after it, refusals included (under dash with mawk and
 * bash with gawk). Then, under the first of them: progress reaches the terminal while the
 * command runs; a held lock and a second command meet the same refusal as in-process; Ctrl-C
 * leaves the command to finish in the daemon; a daemon stopped mid-travel lets it finish and
 * answer; and a daemon killed -9 mid-travel is reported as COMMAND_LOST and never runs the
 * travel a second time.
 */

const SLOW_TEST_MS = 120_000;
const VARIANTS = LAUNCHER_VARIANTS;
const FIRST = FIRST_VARIANT;

/** The source files as the workspace starts (and as its first snapshot has them). */
const initialTree = (): Record<string, string> =>
  Object.fromEntries(
    Array.from({ length: 20 }, (_, i) => [join("src", `f${i}.ts`), `export const v${i} = ${i};\n`]),
  );

interface Base {
  root: string;
  /** The first snapshot (the files as `initialTree`). */
  first: string;
  /** The three ledger edits. */
  ops: string[];
}

/**
 * The workspace every test copies, made in the CLI's own process without a daemon: two snapshots,
 * three ledger edits, a session with two turns (checkpoints for `rewind`), and changes made
 * outside the ledger after them.
 */
let base: Base | undefined;
function baseWorkspace(): Base {
  if (base !== undefined) return base;
  const t = makeTempDir("tw-cliwbase-");
  afterAllCleanups.push(t.cleanup);
  const root = t.dir;
  spawnSync("git", ["init", "-q"], { cwd: root });
  mkdirSync(join(root, "src"));
  for (const [path, text] of Object.entries(initialTree())) writeFileSync(join(root, path), text);
  const ok = (args: string[], input?: string) => {
    const r = inProcess(args, root, { env: { TIMEWARP_WATCH: "0" }, ...(input ? { input } : {}) });
    expect(r.status, `${args.join(" ")}: ${r.stderr}`).toBe(0);
    return r;
  };
  ok(["init"]);
  const first = json<{ snapshot_id: string }>(ok(["snapshot", "create", "--json"])).snapshot_id;
  const ops: string[] = [];
  for (const f of ["f0", "f2", "f3"]) {
    writeFileSync(join(root, "draft.txt"), `export const ${f} = 'changed';\n`);
    const edit = ok(["edit", "whole", `src/${f}.ts`, "--content-file", "draft.txt", "--json"]);
    ops.push(json<{ snapshotId: string }>(edit).snapshotId);
  }
  ok(["snapshot", "create"]);
  const hook = (event: string, payload: object) =>
    ok(
      ["hook", event, "--agent", "claude-code"],
      JSON.stringify({ session_id: "s1", cwd: root, ...payload }),
    );
  hook("session-start", { hook_event_name: "SessionStart", source: "startup" });
  hook("user-prompt-submit", { hook_event_name: "UserPromptSubmit", prompt: "first" });
  writeFileSync(join(root, "src", "f5.ts"), "export const v5 = 'by the agent';\n");
  hook("user-prompt-submit", { hook_event_name: "UserPromptSubmit", prompt: "second" });
  writeFileSync(join(root, "src", "f6.ts"), "export const v6 = 'by the agent';\n");
  writeFileSync(join(root, "src", "f1.ts"), "export const v1 = 'edited outside';\n");
  writeFileSync(join(root, "src", "f3.ts"), "export const f3 = 'changed again';\n");
  base = { root, first, ops };
  return base;
}

/** A copy of the base workspace with a watch daemon of its own (stopped after the file). */
function daemonCopy(): Base {
  const from = baseWorkspace();
  const t = makeTempDir("tw-cliwrite-");
  const cp = spawnSync("cp", ["-a", `${from.root}/.`, t.dir], { encoding: "utf8" });
  expect(cp.status, cp.stderr).toBe(0);
  const started = inProcess(["watch", "start", "--json"], t.dir);
  expect(started.status, started.stderr).toBe(0);
  // (`watch start` returns once the daemon watches; its hook server publishes its record after)
  const deadline = Date.now() + 30_000;
  while (readHookServer(t.dir) === null && Date.now() < deadline)
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20);
  afterAllCleanups.push(() => {
    inProcess(["watch", "stop", "-C", t.dir], t.dir);
    t.cleanup();
  });
  return { ...from, root: t.dir };
}
const afterAllCleanups: (() => void)[] = [];
afterEach(runCleanups);
afterAll(() => {
  for (const c of afterAllCleanups.splice(0).reverse()) c();
});

/** The workspace's files (not .timewarp/ or .git/): path → content. */
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

/** The ledger's operation ids (from its record names, `HHMMSS_<id>.json`). */
function ledgerOps(root: string): string[] {
  const dir = join(root, ".timewarp", "history", "snapshots");
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true })
    .map((n) => /_([0-9a-z]{10})\.json$/.exec(String(n))?.[1])
    .filter((id): id is string => id !== undefined);
}

/**
 * An answer with what differs between copies of one workspace: the root's path, new ids
 * (snapshots, backups, operations: numbered in order of appearance), times, durations, hashes.
 */
function normalized(run: Run, root: string): Run {
  const had = new Set(ledgerOps(baseWorkspace().root));
  const fresh = ledgerOps(root).filter((op) => !had.has(op));
  const seen = new Map<string, string>();
  const number = (kind: string) => (id: string) => {
    if (!seen.has(id)) seen.set(id, `<${kind}${seen.size}>`);
    return seen.get(id) as string;
  };
  const clean = (text: string) => {
    let t = text.split(root).join("<root>");
    // (numbered in order of appearance, not of the ledger's listing, which differs by copy)
    if (fresh.length > 0) t = t.replace(new RegExp(fresh.join("|"), "g"), number("op"));
    return t
      .replace(/\b[sb]_\d{8}_\d{6}_[0-9a-z]{6}\b/g, number("id"))
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

/**
 * The steps both paths take, in order: each kind of answer (text and JSON, success and refusal)
 * of each write command once, and a usage error the launcher leaves to the CLI.
 */
const STEPS: ((w: Base) => string[])[] = [
  () => ["snapshot", "create", "--json"],
  (w) => ["travel", w.first],
  (w) => ["travel", w.first, "--json"], // NESTED_TRAVEL
  () => ["--json", "return"],
  () => ["return"], // NOT_IN_PAST
  (w) => ["revert", w.ops[0] as string, "--json"],
  (w) => ["revert", w.ops[1] as string],
  (w) => ["revert", w.ops[2] as string], // REVERT_CONFLICT: changed since
  (w) => ["revert", w.ops[2] as string, "--dry-run", "--json"],
  () => ["travel", "--json"], // usage: left to the CLI in its own process
  () => ["rewind"],
  () => ["rewind", "2", "--dry-run", "--json"],
  () => ["rewind", "2"],
  () => ["rewind", "--undo", "--json"],
  () => ["rewind", "9", "--json"], // no such turn
];
const UNSERVED = "travel --json";

/** The steps in the CLI's own process, once for every shell: each answer and the tree after it. */
let reference: { answers: Run[]; trees: Record<string, string>[] } | undefined;
function referenceRun(): NonNullable<typeof reference> {
  if (reference !== undefined) return reference;
  const w = daemonCopy();
  const answers: Run[] = [];
  const trees: Record<string, string>[] = [];
  for (const step of STEPS) {
    answers.push(normalized(inProcess(step(w), w.root), w.root));
    trees.push(tree(w.root));
  }
  reference = { answers, trees };
  return reference;
}

describe.each(VARIANTS)("bin/timewarp's write commands under $name", (variant) => {
  const { binDir, launch, served } = launcherUnder(variant);

  it.runIf(variant.available)(
    "answer as the CLI in its own process and leave the same workspace, refusals included",
    async () => {
      const want = referenceRun();
      const bin = binDir();
      const w = daemonCopy();
      for (const [i, step] of STEPS.entries()) {
        const before = served(w.root);
        const label = step(w).join(" ");
        const got = launch(bin.dir, step(w), w.root);
        expect(normalized(got, w.root), label).toEqual(want.answers[i]);
        expect(tree(w.root), label).toEqual(want.trees[i]);
        if (label !== UNSERVED) {
          await waitUntil(() => served(w.root) > before);
          expect(served(w.root), label).toBe(before + 1);
        }
      }
      // only the usage error started a Node
      expect(bin.nodeStarts()).toEqual([`${NODE_CLI} ${UNSERVED}`]);
      expect(leftovers(w.root)).toEqual([]);
    },
    SLOW_TEST_MS,
  );
});

describe(`bin/timewarp's write commands, while they run, under ${FIRST.name}`, () => {
  const variant = FIRST;
  const { binDir, launch, start, served } = launcherUnder(variant);
  /**
   * A travel to the first snapshot through the launcher, held at its restore (the worker has
   * claimed it, its stderr file is there, the present is backed up) until `go()`; what was there
   * before it, to compare with after. (A fixed pause left the test's next steps a window that a
   * loaded machine could miss.)
   */
  async function heldTravel(w: Base, bin: string) {
    const had = backups(w.root);
    const travels = travelsCompleted(w.root);
    const daemon = readHookServer(w.root)?.pid as number;
    const hold = holdDir();
    const run = start(bin, ["travel", w.first, "--json"], w.root, {
      TIMEWARP_HOLD_AT: `travel:restore@${hold.dir}`,
    });
    const hooks = hookServerPaths(w.root).dir;
    await waitUntil(
      () => hold.held() && readdirSync(hooks).some((n) => n.startsWith("err-")),
      60_000,
    );
    expect(added(had, backups(w.root))).toHaveLength(1);
    return { run, had, travels, daemon, go: hold.go };
  }
  /** A `TIMEWARP_HOLD_AT` directory: whether the command stopped there, and its go. */
  function holdDir() {
    const t = makeTempDir("tw-cliwhold-");
    cleanups.push(t.cleanup);
    return {
      dir: t.dir,
      held: () => existsSync(join(t.dir, "held")),
      go: () => writeFileSync(join(t.dir, "go"), ""),
    };
  }
  let w: Base;
  beforeAll(() => {
    w = daemonCopy(); // its daemon is killed last
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
      const hold = holdDir();
      const first = start(bin.dir, ["travel", w.first, "--json"], w.root, {
        TIMEWARP_HOLD_AT: `travel:restore@${hold.dir}`,
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
      await waitUntil(() => hold.held(), 60_000);
      expect(holderPid()).toBe(daemon);
      expect(first.child.exitCode).toBeNull();
      // a second write command meanwhile: the worker is busy, so it runs in its own process,
      // and meets the lock as the CLI does (the travel holds it until go)
      const [second, reference] = await Promise.all([
        start(bin.dir, ["snapshot", "create", "--json"], w.root).done,
        inProcessLater(["snapshot", "create", "--json"], w.root),
      ]);
      expect(json<{ error: { code: string } }>(second).error.code).toBe("LOCKED");
      expect(second).toEqual(reference);
      expect(bin.nodeStarts()).toEqual([`${NODE_CLI} snapshot create --json`]);
      // Ctrl-C: the launcher leaves, saying so; the travel goes on in the daemon
      first.child.kill("SIGINT");
      const ended = await first.done;
      expect(ended.status).toBe(130);
      expect(ended.stdout).toBe("");
      expect(ended.stderr).toMatch(/goes on with this command; `timewarp status` shows/);
      hold.go();
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
    "a daemon stopped mid-travel lets it finish: its normal answer, the tree right, no COMMAND_LOST",
    async () => {
      const bin = binDir();
      const { run, had, travels, daemon, go } = await heldTravel(w, bin.dir);
      const log = join(w.root, ".timewarp", "watch", "daemon.log");
      const waiting = "stopping once the write command the worker runs has answered";
      const waits = () => readFileSync(log, "utf8").split(waiting).length - 1;
      const waitedBefore = waits();
      // `watch stop` returns once the daemon is gone, which is once the travel has answered:
      // the travel goes on once the daemon says it waits for it
      const stopping = inProcessLater(["watch", "stop", "--json"], w.root);
      await waitUntil(() => waits() > waitedBefore, 60_000);
      go();
      const stop = await stopping;
      expect(stop.status, stop.stderr).toBe(0);
      expect(json<{ stopped: boolean }>(stop).stopped).toBe(true);
      expect(isProcessAlive(daemon)).toBe(false);
      const end = await run.done;
      expect(end.stderr).toBe("");
      expect(end.status).toBe(0);
      expect(json<{ snapshot_id: string }>(end).snapshot_id).toBe(w.first);
      expect(bin.nodeStarts()).toEqual([]); // no COMMAND_LOST (it starts Node for the status)
      expect(tree(w.root)).toEqual(initialTree());
      expect(added(had, backups(w.root))).toHaveLength(1);
      expect(travelsCompleted(w.root)).toBe(travels + 1);
      expect(waits()).toBe(waitedBefore + 1);
      // back to the present, with a daemon again for the next test
      const started = inProcess(["watch", "start", "--json"], w.root);
      expect(started.status, started.stderr).toBe(0);
      expect(launch(bin.dir, ["return", "--json"], w.root).status).toBe(0);
    },
    SLOW_TEST_MS,
  );

  it.runIf(variant.available)(
    "a daemon killed -9 mid-travel: COMMAND_LOST, the travel not run again, recover mends it",
    async () => {
      const bin = binDir();
      const before = tree(w.root);
      const { run, had, travels, daemon } = await heldTravel(w, bin.dir);
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
  const { binDir, launch, start } = launcherUnder(FIRST);

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

  it.runIf(FIRST.available)(
    "a stop that waits past its bound for a started command: COMMAND_LOST, not run again",
    async () => {
      const bin = binDir();
      const t = makeTempDir("tw-cliwstop-");
      cleanups.push(t.cleanup);
      expect(inProcess(["init"], t.dir).status).toBe(0);
      const { child } = await scriptedServer(t.dir, "normal", { HOOK_STOP_WAIT_MS: "300" });
      const run = start(bin.dir, ["revert", "k3v9q2m1xa", "--json"], t.dir, {
        HOOK_TEST_COMMAND: "hang-started",
      });
      await waitUntil(() => existsSync(join(t.dir, ".hang-claimed")), 60_000);
      child.kill("SIGTERM");
      const end = await run.done;
      expect(end.status).toBe(1);
      const error = json<{ error: { code: string; message: string } }>(end).error;
      expect(error.code).toBe("COMMAND_LOST");
      expect(error.message).toContain("not run again");
      // the one Node started was the status, not the revert
      expect(bin.nodeStarts()).toEqual([`${NODE_CLI} -C ${t.dir} status --json`]);
      await waitUntil(() => child.exitCode !== null);
      expect(child.exitCode).toBe(0);
    },
    SLOW_TEST_MS,
  );
});
