import { spawn, spawnSync } from "node:child_process";
import {
  chmodSync,
  existsSync,
  linkSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  acquireLock,
  effectiveExcludes,
  isProcessAlive,
  readConfig,
  workspacePaths,
} from "../src/core/index.ts";
import { readHookServer } from "../src/hooks/index.ts";
import {
  createSnapshot,
  deleteSnapshot,
  initWorkspace,
  peekStatCache,
  readManifest,
  readStatCache,
  runningWatchDaemon,
  scanScope,
  scanWorkspace,
  watchedChanges,
  watchPaths,
} from "../src/store/index.ts";
import { recover, returnToPresent, startSession, travel } from "../src/timemachine/index.ts";
import { bundledSource } from "./helpers/bundle.ts";
import { cliCommand, makeTempDir, REPO_ROOT, runCli } from "./helpers/cli.ts";
import {
  buildPastState,
  mutateToPresent,
  readTree,
  treeDiff,
} from "./helpers/timemachine-fixtures.ts";

/**
 * The watch daemon for real: a `timewarp watch` child process with inotify watches, a scan in
 * this process asking it what changed, and the answer checked against a full walk.
 */

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function excludesOf(root: string): string[] {
  return effectiveExcludes(readConfig(workspacePaths(root).config));
}

/** Start a daemon with `watch start` (waits until its watches are in place). */
function start(root: string, env: NodeJS.ProcessEnv = {}): number {
  const r = runCli(["watch", "start", "--json", "-C", root], { env });
  expect(r.status, r.stderr).toBe(0);
  const out = r.json() as { running: boolean; pid: number };
  expect(out.running).toBe(true);
  return out.pid;
}

/** A Claude Code hook on a Bash tool call through the real CLI (`--json`); its summary. */
function shellHook(root: string, event: string, id: string, command = id): string {
  const r = runCli(["hook", event, "--json", "-C", root], {
    input: JSON.stringify({
      session_id: "s1",
      cwd: root,
      hook_event_name: event,
      source: "startup",
      tool_name: "Bash",
      tool_use_id: id,
      tool_input: { command },
    }),
  });
  expect(r.status, r.stderr).toBe(0);
  return (r.json() as { summary: string }).summary;
}

async function waitUntil(check: () => boolean, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error("timed out waiting");
    await sleep(20);
  }
}

describe("timewarp watch (a real daemon over inotify)", () => {
  const cleanups: (() => void)[] = [];
  beforeAll(() => {
    delete process.env.TIMEWARP_WATCH;
  });
  afterEach(() => {
    for (const c of cleanups.splice(0).reverse()) c();
  });
  const workspace = (): string => {
    const t = makeTempDir();
    cleanups.push(() => {
      runCli(["watch", "stop", "-C", t.dir]);
      t.cleanup();
    });
    initWorkspace(t.dir);
    return t.dir;
  };

  // (the daemon watches through Node's raw handles where it can, else fs.watch: both exact)
  it.each([
    { way: "inotify handles", env: {} },
    { way: "fs.watch", env: { TIMEWARP_WATCH_FS_WATCH: "1" } },
  ])(
    "answers what changed, and a scan built on its answers equals a full walk through many edits ($way)",
    async ({ way, env }) => {
      const root = workspace();
      for (let d = 0; d < 3; d++) {
        mkdirSync(join(root, `src${d}`, "deep"), { recursive: true });
        for (let f = 0; f < 5; f++)
          writeFileSync(join(root, `src${d}`, "deep", `f${f}.ts`), `${d}${f}`);
      }
      mkdirSync(join(root, "node_modules", "pkg"), { recursive: true });
      start(root, env);
      expect(readFileSync(join(root, ".timewarp", "watch", "daemon.log"), "utf8")).toContain(
        `directories of ${root} (pid`,
      );
      expect(readFileSync(join(root, ".timewarp", "watch", "daemon.log"), "utf8")).toMatch(
        new RegExp(`; ${way}\\)`),
      );
      const ex = excludesOf(root);
      // The first answer of a daemon is "unknown" (walk once) with a token.
      let cache = scanWorkspace(root, { excludes: ex, useWatcher: true }).statCache;
      expect(cache.watchToken).toMatch(/^[0-9a-f]+:\d+$/);
      const edits: ((i: number) => void)[] = [
        (i) => writeFileSync(join(root, "src0", "deep", "f1.ts"), `edit ${i}`),
        (i) => writeFileSync(join(root, `new${i}.txt`), `new ${i}`),
        (i) => mkdirSync(join(root, `tree${i}`, "a", "b"), { recursive: true }),
        (i) => writeFileSync(join(root, `tree${i - 1}`, "a", "b", "leaf.txt"), `leaf ${i}`),
        (i) => renameSync(join(root, "src1"), join(root, `src1-moved${i}`)),
        (i) =>
          writeFileSync(join(root, `src1-moved${i - 1}`, "deep", "f2.ts"), `inside moved ${i}`),
        (_i) => rmSync(join(root, "src2", "deep"), { recursive: true }),
        (i) => chmodSync(join(root, "src0", "deep", "f3.ts"), 0o755 + (i % 2)),
        (i) => symlinkSync("src0", join(root, `link${i}`)),
        (i) => writeFileSync(join(root, "node_modules", "pkg", `x${i}.js`), "excluded"),
        (i) => writeFileSync(join(root, "src0", `debug${i}.log`), "excluded by pattern"),
        (i) => rmSync(join(root, `new${i - 10}.txt`)),
      ];
      let incremental = 0;
      for (let i = 0; i < edits.length; i++) {
        (edits[i] as (i: number) => void)(i);
        const inc = scanWorkspace(root, { excludes: ex, statCache: cache, useWatcher: true });
        const walk = scanWorkspace(root, { excludes: ex, statCache: cache });
        expect(inc.manifest.entries, `after edit ${i}`).toEqual(walk.manifest.entries);
        expect(inc.skipped).toEqual(walk.skipped);
        if (inc.incremental) incremental++;
        cache = inc.statCache;
      }
      expect(incremental).toBe(edits.length);
    },
  );

  it("reports the changes since a token, once, and nothing when nothing changed", () => {
    const root = workspace();
    mkdirSync(join(root, "a"));
    start(root);
    const scope = scanScope(excludesOf(root));
    const first = watchedChanges(root, undefined, scope);
    expect(first.changed).toBeUndefined();
    expect(first.reason).toMatch(/first answer/);
    writeFileSync(join(root, "a", "x.txt"), "x");
    writeFileSync(join(root, "a", "x.txt"), "xx");
    const second = watchedChanges(root, first.token, scope);
    expect(second.changed).toEqual(["a/x.txt"]);
    const third = watchedChanges(root, second.token, scope);
    expect(third.changed).toEqual([]);
    // An older token sees everything since then again (a scan that never saved its result).
    expect(watchedChanges(root, first.token, scope).changed).toEqual(["a/x.txt"]);
    // Another scope is never answered from this daemon.
    expect(watchedChanges(root, second.token, scanScope(["other/"])).changed).toBeUndefined();
  });

  it("a directory deleted and made again while the daemon was stopped is watched anew: the next snapshots see the edits in it", async () => {
    const root = workspace();
    mkdirSync(join(root, "pkg", "lib"), { recursive: true });
    writeFileSync(join(root, "pkg", "lib", "a.ts"), "a");
    const pid = start(root);
    createSnapshot(root);
    expect(createSnapshot(root).scan).toBe("delta");
    // The daemon reads the events only after both (as `git checkout` between branches does to
    // a directory while the daemon is busy): on ext4 the new directory gets the old inode number.
    process.kill(pid, "SIGSTOP");
    try {
      rmSync(join(root, "pkg"), { recursive: true });
      mkdirSync(join(root, "pkg", "lib"), { recursive: true });
      writeFileSync(join(root, "pkg", "lib", "a.ts"), "a again");
    } finally {
      process.kill(pid, "SIGCONT");
    }
    createSnapshot(root);
    writeFileSync(join(root, "pkg", "lib", "b.ts"), "an edit after");
    mkdirSync(join(root, "pkg", "lib", "new"));
    writeFileSync(join(root, "pkg", "lib", "new", "c.ts"), "below a new directory");
    const made = createSnapshot(root);
    expect(made.scan).toBe("delta");
    expect(made.record.files).toBe(3);
    const walk = scanWorkspace(root, { excludes: excludesOf(root) });
    expect(walk.manifest.entries.filter((e) => e.type === "file").map((e) => e.path)).toEqual([
      "pkg/lib/a.ts",
      "pkg/lib/b.ts",
      "pkg/lib/new/c.ts",
    ]);
  });

  it("falls back to the walk when the daemon is killed -9, and snapshots stay right", async () => {
    const root = workspace();
    writeFileSync(join(root, "one.txt"), "1");
    const pid = start(root);
    createSnapshot(root);
    const warm = createSnapshot(root);
    expect(warm.record.files).toBe(1);
    process.kill(pid, "SIGKILL");
    await waitUntil(() => !isProcessAlive(pid));
    writeFileSync(join(root, "two.txt"), "2");
    const cache = readStatCache(workspacePaths(root).statCache);
    const scan = scanWorkspace(root, {
      excludes: excludesOf(root),
      statCache: cache,
      useWatcher: true,
    });
    expect(scan.incremental).toBe(false);
    expect(scan.watch).toEqual({ reason: "no watch daemon runs" });
    expect(createSnapshot(root).record.files).toBe(2);
    // A new daemon: the cache's token is of the dead one, so the first scan walks, then not.
    start(root);
    writeFileSync(join(root, "three.txt"), "3");
    expect(createSnapshot(root).record.files).toBe(3);
    writeFileSync(join(root, "four.txt"), "4");
    const after = scanWorkspace(root, {
      excludes: excludesOf(root),
      statCache: readStatCache(workspacePaths(root).statCache),
      useWatcher: true,
    });
    expect(after.incremental).toBe(true);
    expect(after.files).toBe(4);
  });

  it("an unchanged workspace links the last manifest into the next snapshot; a deleted source falls back to encoding", () => {
    const root = workspace();
    writeFileSync(join(root, "a.txt"), "a");
    start(root);
    createSnapshot(root);
    const first = createSnapshot(root);
    const second = createSnapshot(root);
    const inode = (dir: string) => statSync(join(dir, "manifest.json.br")).ino;
    expect(inode(second.dir)).toBe(inode(first.dir));
    expect(readManifest(root, second.id)).toEqual(readManifest(root, first.id));
    deleteSnapshot(root, first.id);
    const third = createSnapshot(root);
    expect(readManifest(root, third.id)).toEqual(second.manifest);
    writeFileSync(join(root, "b.txt"), "b");
    const fourth = createSnapshot(root);
    expect(inode(fourth.dir)).not.toBe(inode(third.dir));
    expect(readManifest(root, fourth.id).entries.map((e) => e.path)).toEqual(["a.txt", "b.txt"]);
    // deleted records of the chain never break a later snapshot
    for (const id of [second.id, third.id]) deleteSnapshot(root, id);
    const fifth = createSnapshot(root);
    expect(readManifest(root, fifth.id)).toEqual(fourth.manifest);
  });

  it("travel and return with the daemon compare manifests by text: the present comes back byte for byte, a late write is caught", async () => {
    const root = workspace();
    buildPastState(root, 40);
    const { snapshot_id } = await startSession({ root, sessionId: "watched" });
    mutateToPresent(root, 40);
    start(root);
    // one snapshot with the daemon's first answer (a walk), so the next scans go by the delta path
    expect(createSnapshot(root).scan).toBe("walk");
    const present = readTree(root);
    for (let round = 0; round < 3; round++) {
      travel({ root, snapshotId: snapshot_id });
      writeFileSync(join(root, `experiment${round}.txt`), "tried in the past\n");
      const back = returnToPresent({ root });
      expect(back.verified.checked).toBeGreaterThan(40);
      expect(treeDiff(readTree(root), present)).toEqual([]);
    }
    // the backup of a travel now goes by the delta path: it is as fast as a snapshot
    expect(createSnapshot(root).scan).toBe("delta");
    travel({ root, snapshotId: snapshot_id });
    let code: string | undefined;
    let paths: unknown;
    try {
      returnToPresent({
        root,
        onStep: (s) => {
          if (s === "return:verify") writeFileSync(join(root, "intruder.txt"), "late write\n");
        },
      });
    } catch (error) {
      code = (error as { code?: string }).code;
      paths = (error as { data?: { paths?: unknown } }).data?.paths;
    }
    expect(code).toBe("RETURN_VERIFY_FAILED");
    expect(paths).toEqual(["intruder.txt"]);
    expect(recover({ root })).toMatchObject({ outcome: "return_finished", mode: "present" });
    expect(treeDiff(readTree(root), present)).toEqual([]);
  });

  it("by text too: what a snapshot skipped is left alone, and hard links come back as links", async () => {
    const root = workspace();
    const config = join(root, ".timewarp", "config.json");
    writeFileSync(
      config,
      JSON.stringify({ ...JSON.parse(readFileSync(config, "utf8")), max_file_bytes: 4096 }),
    );
    writeFileSync(join(root, "a.txt"), "past\n");
    const { snapshot_id } = await startSession({ root, sessionId: "watched-skips" });
    start(root);
    expect(createSnapshot(root).scan).toBe("walk");
    writeFileSync(join(root, "a.txt"), "present\n");
    linkSync(join(root, "a.txt"), join(root, "same.txt"));
    writeFileSync(join(root, "big.dat"), Buffer.alloc(10_000, 3));
    expect(spawnSync("mkfifo", [join(root, "pipe")]).status).toBe(0);
    const ids = () => ["big.dat", "pipe"].map((p) => statSync(join(root, p)).ino).join(" ");
    const before = ids();
    for (let round = 0; round < 2; round++) {
      travel({ root, snapshotId: snapshot_id });
      expect(ids()).toBe(before);
      writeFileSync(join(root, "a.txt"), "changed in the past\n");
      returnToPresent({ root });
      expect(ids()).toBe(before);
      expect(statSync(join(root, "same.txt")).ino).toBe(statSync(join(root, "a.txt")).ino);
      expect(readFileSync(join(root, "same.txt"), "utf8")).toBe("present\n");
    }
    expect(readFileSync(join(root, "big.dat"))).toEqual(Buffer.alloc(10_000, 3));
  });

  it("a journal past its size limit starts a new instance: old tokens walk once, then answers resume", async () => {
    const root = workspace();
    mkdirSync(join(root, "d"));
    // (node itself, the script bundled: tsx's launcher took seconds more on a loaded machine)
    const script = bundledSource(
      `import { runWatchDaemon } from ${JSON.stringify(join(REPO_ROOT, "src", "store", "index.ts"))};\n` +
        `await runWatchDaemon(process.argv[2], { maxJournalBytes: 400 });\n`,
    );
    const child = spawn(process.execPath, [script, root], { stdio: "ignore" });
    const exited = new Promise((r) => child.on("exit", r));
    cleanups.push(() => child.kill("SIGTERM"));
    await waitUntil(() => runningWatchDaemon(root) !== null);
    const scope = scanScope(excludesOf(root));
    const first = watchedChanges(root, undefined, scope);
    const instance = runningWatchDaemon(root)?.instance;
    writeFileSync(join(root, "d", "one.txt"), "1");
    const small = watchedChanges(root, first.token, scope);
    expect(small.changed).toEqual(["d/one.txt"]);
    for (let i = 0; i < 40; i++) writeFileSync(join(root, "d", `bulk-${i}.txt`), String(i));
    await waitUntil(() => runningWatchDaemon(root)?.instance !== instance);
    // A loaded machine may hand the daemon the 40 writes in several batches, rotating more than
    // once: wait until it settled on one journal, the old ones gone.
    const journals = () =>
      readdirSync(watchPaths(root).dir).filter((n) => n.startsWith("journal-"));
    const settled = () => {
      const names = journals();
      return names.length === 1 && names[0] === runningWatchDaemon(root)?.journal;
    };
    await waitUntil(settled);
    const after = watchedChanges(root, small.token, scope);
    expect(after.changed).toBeUndefined();
    expect(after.reason).toMatch(/first answer/);
    writeFileSync(join(root, "d", "two.txt"), "2");
    expect(watchedChanges(root, after.token, scope).changed).toEqual(["d/two.txt"]);
    // the daemon creates the next journal before it deletes the old one: a late batch of the
    // bulk writes may rotate once more, so the old one is gone once the daemon settles
    await waitUntil(settled);
    expect(journals()).toEqual([runningWatchDaemon(root)?.journal]);
    child.kill("SIGTERM");
    await exited;
  });

  it("a workspace with more directories than its share of inotify watches gets no daemon, and scans walk", async () => {
    const root = workspace();
    for (const d of ["a", "b", "c", "d"]) mkdirSync(join(root, d));
    const script = bundledSource(
      `import { runWatchDaemon } from ${JSON.stringify(join(REPO_ROOT, "src", "store", "index.ts"))};\n` +
        `console.log(await runWatchDaemon(process.argv[2], { maxWatches: 3 }));\n`,
    );
    const r = spawnSync(process.execPath, [script, root], {
      encoding: "utf8",
      timeout: 30_000,
    });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/more directories than this daemon's share of inotify watches \(3/);
    expect(runningWatchDaemon(root)).toBeNull();
    // starters leave it alone for a while instead of retrying on every hook
    expect(JSON.parse(readFileSync(watchPaths(root).failed, "utf8")).reason).toMatch(/inotify/);
    const scan = scanWorkspace(root, { excludes: excludesOf(root), useWatcher: true });
    expect(scan.watch).toEqual({ reason: "no watch daemon runs" });
    expect(scan.dirs).toBe(4);
  });

  it("status, stop and a second start; the daemon removes its record when it stops", () => {
    const root = workspace();
    const pid = start(root);
    const again = runCli(["watch", "start", "--json", "-C", root]).json() as {
      started: boolean;
      pid: number;
    };
    expect(again).toMatchObject({ started: false, pid });
    const status = runCli(["watch", "status", "--json", "-C", root]).json() as {
      running: boolean;
      directories: number;
    };
    expect(status).toMatchObject({ running: true, directories: 1 });
    const overall = runCli(["status", "--json", "-C", root]).json() as {
      watcher: { pid: number } | null;
    };
    expect(overall.watcher?.pid).toBe(pid);
    const stop = runCli(["watch", "stop", "--json", "-C", root]).json() as { stopped: boolean };
    expect(stop.stopped).toBe(true);
    expect(isProcessAlive(pid)).toBe(false);
    expect(existsSync(watchPaths(root).info)).toBe(false);
    expect(runningWatchDaemon(root)).toBeNull();
    expect(readFileSync(watchPaths(root).log, "utf8")).toMatch(/stopped \(signal SIGTERM\)/);
    expect(
      (runCli(["status", "--json", "-C", root]).json() as { watcher: unknown }).watcher,
    ).toBeNull();
  });

  it("a start while another daemon is still walking the tree names that one, and starts none", () => {
    const root = workspace();
    // a daemon holds its lock from its first moment, and writes daemon.json only once it watches
    mkdirSync(watchPaths(root).dir, { recursive: true });
    const lock = acquireLock(watchPaths(root).lock, { command: "timewarp watch run" });
    try {
      const again = runCli(["watch", "start", "--json", "-C", root]).json();
      expect(again).toMatchObject({ started: false, pid: process.pid, reason: "already starting" });
      expect(existsSync(watchPaths(root).log)).toBe(false);
    } finally {
      lock.release();
    }
  });

  it("stops by itself when idle, and when its workspace is deleted", async () => {
    const root = workspace();
    const { command, args } = cliCommand();
    const idle = spawn(command, [...args, "watch", "run", "--idle-minutes", "0.01", "-C", root], {
      stdio: ["ignore", "pipe", "ignore"],
      env: { ...process.env },
    });
    let stdout = "";
    idle.stdout.on("data", (b: Buffer) => {
      stdout += b.toString();
    });
    const idleExit = new Promise<number | null>((r) => idle.on("exit", r));
    expect(await idleExit).toBe(0);
    expect(stdout).toMatch(/watch daemon stopped: idle/);
    const gone = makeTempDir();
    initWorkspace(gone.dir);
    const child = spawn(command, [...args, "watch", "run", "--idle-minutes", "1", "-C", gone.dir], {
      stdio: ["ignore", "ignore", "pipe"],
      env: { ...process.env },
    });
    let stderr = "";
    child.stderr.on("data", (b: Buffer) => {
      stderr += b.toString();
    });
    const exit = new Promise<number | null>((r) => child.on("exit", r));
    // Fully up (hooks served too): deleting a directory the daemon is still filling races rm.
    await waitUntil(
      () => runningWatchDaemon(gone.dir) !== null && readHookServer(gone.dir) !== null,
    );
    gone.cleanup();
    expect(await exit).toBe(0);
    expect(stderr).toMatch(/stopped \((the workspace is gone|daemon.json is gone or not ours)\)/);
  });

  it("shell hooks with the daemon: nothing changed answers from the cache header; a shell write is recorded", async () => {
    const root = workspace();
    mkdirSync(join(root, "src"));
    writeFileSync(join(root, "src", "a.ts"), "export const a = 1;\n");
    const hook = (event: string, id: string) => shellHook(root, event, id, "make");
    hook("session-start", "s");
    await waitUntil(() => runningWatchDaemon(root) !== null);
    for (const id of ["b1", "b2", "b3"]) {
      expect(hook("pre-tool-use", id)).toMatch(/baseline of 1 files/);
      expect(hook("post-tool-use", id)).toMatch(/no file changed/);
    }
    const cache = join(root, ".timewarp", "hooks", "stat-cache.bin");
    const before = statSync(cache).mtimeMs;
    expect(hook("pre-tool-use", "b4")).toMatch(/baseline of 1 files/);
    expect(hook("post-tool-use", "b4")).toMatch(/no file changed/);
    // the quiet case never rewrote the cache
    expect(statSync(cache).mtimeMs).toBe(before);
    hook("pre-tool-use", "b5");
    writeFileSync(join(root, "src", "a.ts"), "export const a = 2;\n");
    writeFileSync(join(root, "src", "b.ts"), "export const b = 1;\n");
    expect(hook("post-tool-use", "b5")).toMatch(/2 file\(s\) changed, 1 ledger record/);
    hook("pre-tool-use", "b6");
    expect(hook("post-tool-use", "b6")).toMatch(/no file changed/);
  });

  it("shell hooks with the daemon diff against the right pre-image: an edit between commands, a deletion, a new directory", async () => {
    const root = workspace();
    mkdirSync(join(root, "src"));
    writeFileSync(join(root, "src", "a.ts"), "v1\n");
    writeFileSync(join(root, "src", "gone.ts"), "bye\n");
    const hook = (event: string, id: string) => shellHook(root, event, id, `step ${id}`);
    hook("session-start", "s");
    await waitUntil(() => runningWatchDaemon(root) !== null);
    hook("pre-tool-use", "warm");
    hook("post-tool-use", "warm");
    // an edit outside any shell command (an editor, an Edit tool) between two commands
    writeFileSync(join(root, "src", "a.ts"), "v2\n");
    hook("pre-tool-use", "c1");
    writeFileSync(join(root, "src", "a.ts"), "v3\n");
    rmSync(join(root, "src", "gone.ts"));
    expect(hook("post-tool-use", "c1")).toMatch(/2 file\(s\) changed/);
    hook("pre-tool-use", "c2");
    mkdirSync(join(root, "gen", "deep"), { recursive: true });
    writeFileSync(join(root, "gen", "deep", "out.ts"), "generated\n");
    expect(hook("post-tool-use", "c2")).toMatch(/1 file\(s\) changed/);
    const { getEditHistory } = await import("../src/ledger/index.ts");
    const history = getEditHistory({ root }, { includeDiffs: true, toolFilter: ["shell"] }).history;
    const diffOf = (file: string) =>
      history.find((h) => h.affectedFiles.includes(file))?.diff ?? "";
    // the shell changed v2 into v3: the edit before the command is not blamed on it
    expect(diffOf("src/a.ts")).toMatch(/-v2\n\+v3/);
    expect(diffOf("src/a.ts")).not.toMatch(/v1/);
    expect(diffOf("src/gone.ts")).toMatch(/deleted file mode[\s\S]*-bye/);
    expect(diffOf("gen/deep/out.ts")).toMatch(/new file mode[\s\S]*\+generated/);
    hook("pre-tool-use", "c3");
    expect(hook("post-tool-use", "c3")).toMatch(/no file changed/);
  });

  it("shell hooks with the daemon: a directory moved away or replaced by a symlink is seen as its files going", async () => {
    const root = workspace();
    const elsewhere = makeTempDir();
    cleanups.push(elsewhere.cleanup);
    mkdirSync(join(root, "lib"));
    writeFileSync(join(root, "lib", "one.ts"), "one\n");
    writeFileSync(join(root, "lib", "two.ts"), "two\n");
    mkdirSync(join(root, "vendor"));
    writeFileSync(join(root, "vendor", "v.ts"), "vendored\n");
    mkdirSync(join(elsewhere.dir, "shared"));
    writeFileSync(join(elsewhere.dir, "shared", "v.ts"), "outside the workspace\n");
    const hook = (event: string, id: string) => shellHook(root, event, id);
    hook("session-start", "s");
    await waitUntil(() => runningWatchDaemon(root) !== null);
    hook("pre-tool-use", "warm");
    hook("post-tool-use", "warm");
    hook("pre-tool-use", "mv");
    renameSync(join(root, "lib"), join(elsewhere.dir, "lib"));
    expect(hook("post-tool-use", "mv")).toMatch(/2 file\(s\) changed/);
    hook("pre-tool-use", "ln");
    rmSync(join(root, "vendor"), { recursive: true });
    symlinkSync(join(elsewhere.dir, "shared"), join(root, "vendor"));
    // vendor/v.ts is gone for the workspace (a walk never follows the link): one deletion,
    // which the ledger declines to record through the link, and says so
    expect(hook("post-tool-use", "ln")).toMatch(
      /1 file\(s\) changed, 0 ledger record\(s\); not recorded: vendor\/v\.ts \(.*symlink/,
    );
    const { getEditHistory } = await import("../src/ledger/index.ts");
    const shell = getEditHistory({ root }, { includeDiffs: true, toolFilter: ["shell"] }).history;
    expect(shell.flatMap((h) => h.affectedFiles).sort()).toEqual(["lib/one.ts", "lib/two.ts"]);
    for (const h of shell) expect(h.diff ?? "").not.toMatch(/outside the workspace/);
  });

  it("shell hooks with the daemon: a file whose name holds U+FFFD is recorded, not dropped", async () => {
    const root = workspace();
    writeFileSync(join(root, "plain.txt"), "plain\n");
    shellHook(root, "session-start", "s");
    await waitUntil(() => runningWatchDaemon(root) !== null);
    shellHook(root, "pre-tool-use", "warm");
    shellHook(root, "post-tool-use", "warm");
    shellHook(root, "pre-tool-use", "odd");
    writeFileSync(join(root, "odd\uFFFDname.txt"), "odd\n");
    expect(shellHook(root, "post-tool-use", "odd")).toMatch(/1 file\(s\) changed, 1 ledger record/);
  });

  it("a daemon stops when the config turns watch off or changes the excludes, and a stale heartbeat is not trusted", async () => {
    const root = workspace();
    const { command, args } = cliCommand();
    const config = join(root, ".timewarp", "config.json");
    const base = JSON.parse(readFileSync(config, "utf8")) as Record<string, unknown>;
    for (const change of [{ watch: false }, { extra_excludes: ["generated/"] }]) {
      const child = spawn(
        command,
        // idle after 15 s (the config is checked first in each tick): a loaded machine still
        // sees the change before the daemon goes idle
        [...args, "watch", "run", "--idle-minutes", "0.25", "-C", root],
        {
          stdio: ["ignore", "pipe", "ignore"],
          env: { ...process.env },
        },
      );
      let out = "";
      child.stdout.on("data", (b: Buffer) => {
        out += b.toString();
      });
      const exit = new Promise((r) => child.on("exit", r));
      await waitUntil(() => runningWatchDaemon(root) !== null);
      writeFileSync(config, JSON.stringify({ ...base, ...change }));
      await exit;
      expect(out).toMatch("watch" in change ? /watch is off/ : /excludes changed/);
      writeFileSync(config, JSON.stringify(base));
    }
    const pid = start(root);
    expect(runningWatchDaemon(root)?.pid).toBe(pid);
    const old = new Date(Date.now() - 60_000);
    utimesSync(watchPaths(root).info, old, old);
    expect(runningWatchDaemon(root)).toBeNull();
  }, 120_000);

  it("the session-start hook starts it (config watch: true), and not with watch: false", async () => {
    const root = workspace();
    const payload = JSON.stringify({
      session_id: "s1",
      cwd: root,
      hook_event_name: "SessionStart",
      source: "startup",
    });
    const r = runCli(["hook", "session-start", "-C", root], { input: payload });
    expect(r.status, r.stderr).toBe(0);
    await waitUntil(() => runningWatchDaemon(root) !== null);
    runCli(["watch", "stop", "-C", root]);
    const off = workspace();
    const config = join(off, ".timewarp", "config.json");
    writeFileSync(
      config,
      JSON.stringify({ ...JSON.parse(readFileSync(config, "utf8")), watch: false }),
    );
    const r2 = runCli(["hook", "session-start", "-C", off], {
      input: payload.replace(root, off),
    });
    expect(r2.status, r2.stderr).toBe(0);
    await sleep(300);
    expect(runningWatchDaemon(off)).toBeNull();
  });

  it("snapshot create starts it too, and its next snapshots go by the delta path", async () => {
    const root = workspace();
    writeFileSync(join(root, "a.txt"), "a\n");
    const snap = (): { scan: string; rehashed: number } => {
      const r = runCli(["snapshot", "create", "--json", "-C", root]);
      expect(r.status, r.stderr).toBe(0);
      return r.json() as { scan: string; rehashed: number };
    };
    expect(snap().scan).toBe("walk");
    await waitUntil(() => runningWatchDaemon(root) !== null);
    // the daemon's first answer is "unknown" with a token (one more walk), then deltas
    expect(snap().scan).toBe("walk");
    expect(peekStatCache(workspacePaths(root).statCache)?.watchToken).toBeDefined();
    writeFileSync(join(root, "a.txt"), "a, edited\n");
    expect(snap()).toMatchObject({ scan: "delta", rehashed: 1 });
    const off = runCli(["snapshot", "create", "--json", "-C", root], {
      env: { TIMEWARP_WATCH: "0" },
    });
    expect(off.json()).toMatchObject({ scan: "walk" });
  });
});
