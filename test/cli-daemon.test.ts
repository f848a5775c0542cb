import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { hookServerPaths } from "../src/hooks/index.ts";
import { makeTempDir, REPO_ROOT, runCli } from "./helpers/cli.ts";
import {
  baseEnv,
  FIRST_VARIANT,
  LAUNCHER_VARIANTS,
  launcherUnder,
  NODE_CLI,
  type Run,
  inProcess as runInProcess,
} from "./helpers/launcher.ts";
import {
  cleanups,
  killAfterHangClaimed,
  leftovers,
  runCleanups,
  scriptedServer,
  waitUntil,
} from "./helpers/scripted-hook-server.ts";

/**
 * bin/timewarp, the shell launcher of the `timewarp` command, against a real watch daemon: the
 * read-only commands answered by the daemon's worker print byte for byte what the CLI in its own
 * process prints (stdout, stderr, exit code), and everything else — no daemon, a dead server's
 * record, an argument outside its list, a server that declines or dies holding the command —
 * runs the CLI in-process exactly once. The answers are checked under dash with mawk (Debian's
 * /bin/sh) and bash with gawk, the fall-backs (the same lines of shell) under the first of them. The launcher is linked into a bin directory as npm links it, beside a `node` that
 * logs each start: a served command starts no Node.
 */

const SLOW_TEST_MS = 300_000;
const VARIANTS = LAUNCHER_VARIANTS;

/**
 * The CLI in its own process: the reference every launcher answer must equal (once per
 * arguments and directory: both shells compare against the same run).
 */
const references = new Map<string, Run>();
function inProcess(args: string[], cwd: string): Run {
  const key = JSON.stringify([cwd, args]);
  const known = references.get(key);
  if (known !== undefined) return known;
  const run = runInProcess(args, cwd);
  references.set(key, run);
  return run;
}

/** A workspace whose scripted hook server declines every request, shared by both shells. */
let declining: Promise<string> | undefined;
function decliningWorkspace(): Promise<string> {
  declining ??= (async () => {
    const t = makeTempDir("tw-clistale-");
    expect(runCli(["init"], { cwd: t.dir, env: baseEnv() }).status).toBe(0);
    const server = await scriptedServer(t.dir, "stale");
    // kept past each test's cleanups: stopped with the file's
    afterAllCleanups.push(() => server.child.kill("SIGKILL"), t.cleanup);
    cleanups.splice(cleanups.length - 1, 1);
    return t.dir;
  })();
  return declining;
}
const afterAllCleanups: (() => void)[] = [];

let root = "";
let opId = "";
let snapshots: string[] = [];

beforeAll(() => {
  delete process.env.TIMEWARP_WATCH;
  const t = makeTempDir("tw-clidaemon-");
  root = t.dir;
  spawnSync("git", ["init", "-q"], { cwd: root });
  mkdirSync(join(root, "src"));
  for (let i = 0; i < 20; i++)
    writeFileSync(join(root, "src", `f${i}.ts`), `export const v${i} = ${i};\n`);
  const env = baseEnv();
  expect(runCli(["init"], { cwd: root, env }).status).toBe(0);
  // The daemon first: commands that scan start one themselves when none runs.
  const start = runCli(["watch", "start", "--json", "-C", root], { env });
  expect(start.status, start.stderr).toBe(0);
  expect(runCli(["snapshot", "create"], { cwd: root, env }).status).toBe(0);
  writeFileSync(join(root, "draft.txt"), "export const v0 = 'changed';\n");
  const edit = runCli(["edit", "whole", "src/f0.ts", "--content-file", "draft.txt", "--json"], {
    cwd: root,
    env,
  });
  expect(edit.status, edit.stderr).toBe(0);
  opId = (edit.json() as { snapshotId: string }).snapshotId;
  expect(runCli(["snapshot", "create"], { cwd: root, env }).status).toBe(0);
  writeFileSync(join(root, "src", "f1.ts"), "export const v1 = 'edited outside';\n");
  const list = runCli(["snapshot", "list", "--json"], { cwd: root, env }).json() as {
    snapshots: { snapshot_id: string }[];
  };
  snapshots = list.snapshots.map((s) => s.snapshot_id);
  expect(snapshots).toHaveLength(2);
  return () => {
    runCli(["watch", "stop", "-C", root], { env });
    t.cleanup();
  };
}, SLOW_TEST_MS);
afterEach(runCleanups);
afterAll(() => {
  for (const c of afterAllCleanups.splice(0).reverse()) c();
});

describe.each(VARIANTS)("bin/timewarp under $name", (variant) => {
  const { binDir, launch, served } = launcherUnder(variant);

  it.runIf(variant.available)(
    "the daemon answers the read-only commands byte for byte as the CLI in its own process",
    async () => {
      const bin = binDir();
      const [a, b] = snapshots as [string, string];
      const cases: string[][] = [
        ["status"],
        ["status", "--json"],
        ["history"],
        ["--json", "history", "--limit", "1", "--tool", "edit_whole"],
        ["history", "--include-diffs", "--file", "src/*.ts"],
        ["history", "show", opId],
        ["history", "show", opId, "--format", "git", "--json"],
        ["snapshot", "list"],
        ["snapshot", "list", "--json"],
        ["snapshot", "diff", a],
        ["snapshot", "diff", a, b, "--json"],
        // errors as the CLI gives them: exit codes 1 and 2, text and JSON
        ["history", "show", "nope0nope0"],
        ["history", "show", "nope0nope0", "--json"],
        ["snapshot", "diff", "s_missing", "--json"],
        ["history", "--limit", "0"],
        ["history", "show", opId, "--format", "nonsense", "--json"],
      ];
      for (const args of cases) {
        const before = served(root);
        const got = launch(bin.dir, args, root);
        // (the server counts an answer just after writing it: the client may be quicker)
        await waitUntil(() => served(root) > before);
        expect(served(root), `served: ${args.join(" ")}`).toBe(before + 1);
        expect(got, args.join(" ")).toEqual(inProcess(args, root));
      }
      // -C from elsewhere, and a subdirectory: the workspace is found as the CLI finds it
      const before = served(root);
      expect(launch(bin.dir, ["-C", root, "status", "--json"], REPO_ROOT)).toEqual(
        inProcess(["-C", root, "status", "--json"], REPO_ROOT),
      );
      expect(launch(bin.dir, ["snapshot", "list"], join(root, "src"))).toEqual(
        inProcess(["snapshot", "list"], join(root, "src")),
      );
      await waitUntil(() => served(root) >= before + 2);
      expect(served(root)).toBe(before + 2);
      expect(bin.nodeStarts()).toEqual([]);
      expect(leftovers(root)).toEqual([]);
    },
    SLOW_TEST_MS,
  );

  it.runIf(variant.available && existsSync("/usr/bin/script"))(
    "on a terminal: the same colours as the CLI in its own process",
    async () => {
      const bin = binDir();
      // util-linux's `script` gives the command a terminal (stdout and stderr on one pty)
      const onTty = (command: string) => {
        const r = spawnSync("/usr/bin/script", ["-qc", command, "/dev/null"], {
          cwd: root,
          encoding: "utf8",
          env: { ...baseEnv(), NO_COLOR: undefined, PATH: `${bin.dir}:${process.env.PATH}` },
          timeout: 60_000,
        });
        return { status: r.status, stdout: r.stdout };
      };
      const before = served(root);
      const got = onTty(`${variant.shell} ${join(bin.dir, "timewarp")} history`);
      await waitUntil(() => served(root) > before);
      expect(got.stdout).toContain("\x1b[1m"); // bold ids: the launcher said "a terminal"
      expect(got).toEqual(onTty(`${process.execPath} ${NODE_CLI} history`));
      expect(bin.nodeStarts()).toEqual([]);
    },
    SLOW_TEST_MS,
  );
});

// The fall-backs are the same lines of shell under either: run under the first shell there is.
describe(`bin/timewarp's fall-backs under ${FIRST_VARIANT.name}`, () => {
  const variant = FIRST_VARIANT;
  const { binDir, launch, served } = launcherUnder(variant);

  it.runIf(variant.available)(
    "anything else runs the CLI in its own process, once, with the arguments untouched",
    () => {
      const bin = binDir();
      const before = served(root);
      const cases: string[][] = [
        ["status", "--bogus"],
        ["history", "--limit=1"],
        ["status", "--help"],
        ["snapshot", "show", snapshots[0] as string, "--json"],
        ["status", "--", "x"],
      ];
      for (const args of cases)
        expect(launch(bin.dir, args, root), args.join(" ")).toEqual(inProcess(args, root));
      expect(served(root)).toBe(before);
      expect(bin.nodeStarts()).toEqual(cases.map((args) => [NODE_CLI, ...args].join(" ")));
      // TIMEWARP_WATCH=0 skips the daemon too
      expect(launch(bin.dir, ["status"], root, { TIMEWARP_WATCH: "0" }).status).toBe(0);
      expect(served(root)).toBe(before);
      expect(bin.nodeStarts()).toHaveLength(cases.length + 1);
    },
    SLOW_TEST_MS,
  );

  it.runIf(variant.available)(
    "no daemon, or a dead server's record: the CLI answers in its own process",
    () => {
      const bin = binDir();
      const t = makeTempDir("tw-clinodaemon-");
      cleanups.push(t.cleanup);
      expect(runCli(["init"], { cwd: t.dir, env: baseEnv() }).status).toBe(0);
      expect(launch(bin.dir, ["status", "--json"], t.dir)).toEqual(
        inProcess(["status", "--json"], t.dir),
      );
      // a record of this protocol naming a process that is gone
      const dead = spawnSync("sh", ["-c", "echo $$"], { encoding: "utf8" }).stdout.trim();
      mkdirSync(hookServerPaths(t.dir).dir, { recursive: true, mode: 0o700 });
      writeFileSync(hookServerPaths(t.dir).record, `{"protocol":4,"pid":${dead},"served":0}\n`);
      expect(launch(bin.dir, ["snapshot", "list"], t.dir)).toEqual(
        inProcess(["snapshot", "list"], t.dir),
      );
      expect(bin.nodeStarts()).toHaveLength(2);
      expect(leftovers(t.dir)).toEqual([]);
    },
    SLOW_TEST_MS,
  );

  it.runIf(variant.available)(
    "a server that declines, or dies holding the command: answered once, in-process",
    async () => {
      const bin = binDir();
      const stale = await decliningWorkspace();
      expect(launch(bin.dir, ["status"], stale)).toEqual(inProcess(["status"], stale));
      expect(bin.nodeStarts()).toHaveLength(1);
      expect(leftovers(stale)).toEqual([]);

      const u = makeTempDir("tw-clikill-");
      cleanups.push(u.cleanup);
      expect(runCli(["init"], { cwd: u.dir, env: baseEnv() }).status).toBe(0);
      // the scripted worker holds a command when told to (writes .hang-claimed, never answers)
      const { child } = await scriptedServer(u.dir, "normal");
      killAfterHangClaimed(u.dir, child.pid as number);
      const got = launch(bin.dir, ["history", "--json"], u.dir, { HOOK_TEST_COMMAND: "hang" });
      expect(got).toEqual(inProcess(["history", "--json"], u.dir));
      expect(bin.nodeStarts()).toHaveLength(2);
      await waitUntil(() => child.exitCode !== null || child.signalCode !== null);
      expect(leftovers(u.dir).filter((n) => !n.startsWith("run-"))).toEqual([]);
    },
    SLOW_TEST_MS,
  );
});
