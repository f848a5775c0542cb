/**
 * The write commands' rows of `npm run bench:cli` (`-- --write` for them alone; `--size 100k`,
 * `--runs N`): `snapshot create` with no change and with 20 files changed, `travel` and `return`
 * with 20 files differing, and `revert` of one edit, each a whole process on a copy of the real
 * npm-package tree (bench/scale-trees.ts; the cached pristine tree is copied, never written):
 * `sh bin/timewarp` with the watch daemon running (its worker runs the command: no Node starts),
 * `node bin/timewarp.cjs` (in-process, the same daemon answering its scans), and git's nearest
 * equivalents on a git twin of the same tree (`git status`, `git add -A && git commit`,
 * `git reset --hard`, `git revert`). Daemon, in-process and git samples alternate (a shared
 * machine's load then weighs on all three alike), with the same untimed set-up before each. Prints p50/p95, the client's peak RSS, and the daemon's RSS
 * (VmRSS after the warm-up and after the rows, and VmHWM: the process, its worker included).
 */
import { execFileSync, execSync, spawnSync } from "node:child_process";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  BIN,
  editableFiles,
  editFiles,
  type GitTwin,
  git,
  gitCommit,
  gitInit,
  daemonMemory as procMemory,
  REPO,
} from "./scale-common.ts";
import { pristineTree } from "./scale-trees.ts";
import { type ProcessSample, percentile, timeProcess } from "./time-process.ts";

const LAUNCHER = join(REPO, "bin", "timewarp");

export interface WriteRowsOptions {
  size: "10k" | "100k";
  runs: number;
  /**
   * Only the daemon's samples, beside git's. An in-process sample between two of the daemon's
   * rewrites the stat cache and stores loose objects that the daemon's next command then reads
   * again or syncs (a travel's backup): as where every command goes through the daemon, which
   * is what the launcher does when one runs.
   */
  daemonOnly?: boolean;
}

interface Ctx {
  w: string;
  twin: GitTwin;
  files: string[];
  round: number;
  ways: readonly ("daemon" | "node")[];
}

/** The command in one of the two ways (untimed when only set-up). */
function tw(c: Ctx, how: "daemon" | "node", args: string[]): ProcessSample {
  return how === "daemon"
    ? timeProcess("sh", [LAUNCHER, ...args], { cwd: c.w })
    : timeProcess(process.execPath, [BIN, ...args], { cwd: c.w });
}

/**
 * p50/p95, the client's peak RSS, and the command's own `duration_ms` p50 where it says one;
 * nothing for a way not timed (`--daemon-only`).
 */
function row(name: string, xs: ProcessSample[]): void {
  if (xs.length === 0) return;
  const ms = xs.map((x) => x.ms);
  const rss = Math.max(...xs.map((x) => x.rssKiB ?? 0)) / 1024;
  const own = xs
    .map((x) => /"duration_ms":(\d+)/.exec(x.stdout)?.[1])
    .filter((d) => d !== undefined)
    .map(Number);
  const inside = own.length > 0 ? `  (its own duration_ms p50 ${percentile(own, 50)})` : "";
  console.log(
    `${name.padEnd(52)} p50 ${percentile(ms, 50).toFixed(1).padStart(7)} ms  p95 ${percentile(ms, 95).toFixed(1).padStart(7)} ms  peak RSS ${rss.toFixed(1).padStart(6)} MiB${inside}`,
  );
}

/** The serving daemon's pid, from its hook server's record, or null. */
function daemonPid(w: string): number | null {
  try {
    return (
      JSON.parse(readFileSync(join(w, ".timewarp", "watch", "hooks", "server.json"), "utf8")) as {
        pid: number;
      }
    ).pid;
  } catch {
    return null;
  }
}

/**
 * The daemon's resident and peak memory (MiB) from /proc, or "?"; and whether it is still the
 * daemon of `since` (a daemon that restarted meanwhile has a peak of its own life only).
 */
function daemonMemory(w: string, since?: number | null): string {
  const pid = daemonPid(w);
  try {
    if (pid === null) throw new Error("no record");
    const { rss, hwm } = procMemory(pid);
    const restarted =
      since !== undefined && since !== pid
        ? `; NOT the daemon of the warm-up (pid ${since}): it restarted, see .timewarp/watch/daemon.log`
        : "";
    return `VmRSS ${(rss / 1024).toFixed(1)} MiB, VmHWM ${(hwm / 1024).toFixed(1)} MiB (pid ${pid})${restarted}`;
  } catch {
    return "? (no daemon record or no /proc)";
  }
}

/** `snapshot create` with nothing changed, and with 20 files changed; git status, git commit. */
function snapshotRows(c: Ctx, runs: number): void {
  const noop = { daemon: [] as ProcessSample[], node: [] as ProcessSample[] };
  const twenty = { daemon: [] as ProcessSample[], node: [] as ProcessSample[] };
  const status: ProcessSample[] = [];
  const commit: ProcessSample[] = [];
  for (let r = 0; r < runs; r++) {
    for (const how of c.ways) {
      tw(c, how, ["snapshot", "create"]);
      noop[how].push(tw(c, how, ["snapshot", "create", "--json"]));
      editFiles(c.w, c.files, 20, c.round++);
      twenty[how].push(tw(c, how, ["snapshot", "create", "--json"]));
    }
    status.push(git(c.twin, "status", "--porcelain"));
    editFiles(c.twin.work, c.files, 20, c.round++);
    commit.push(gitCommit(c.twin, `round ${r}`));
  }
  row("snapshot create, no change: daemon (sh bin/timewarp)", noop.daemon);
  row("snapshot create, no change: in-process (node)", noop.node);
  row("  git status --porcelain", status);
  row("snapshot create, 20 changed: daemon", twenty.daemon);
  row("snapshot create, 20 changed: in-process (node)", twenty.node);
  row("  git add -A && git commit (20 changed)", commit);
}

/** travel to a snapshot 20 files back, then return; git reset --hard both ways. */
function travelRows(c: Ctx, runs: number): void {
  const travel = { daemon: [] as ProcessSample[], node: [] as ProcessSample[] };
  const back = { daemon: [] as ProcessSample[], node: [] as ProcessSample[] };
  const toPast: ProcessSample[] = [];
  const toBackup: ProcessSample[] = [];
  for (let r = 0; r < runs; r++) {
    for (const how of c.ways) {
      const past = (
        JSON.parse(tw(c, "daemon", ["snapshot", "create", "--json"]).stdout) as {
          snapshot_id: string;
        }
      ).snapshot_id;
      editFiles(c.w, c.files, 20, c.round++);
      travel[how].push(tw(c, how, ["travel", past, "--json"]));
      back[how].push(tw(c, how, ["return", "--json"]));
    }
    gitCommit(c.twin, `past ${r}`);
    git(c.twin, "tag", "-f", "past");
    editFiles(c.twin.work, c.files, 20, c.round++);
    gitCommit(c.twin, `backup ${r}`);
    git(c.twin, "branch", "-f", "backup");
    toPast.push(git(c.twin, "reset", "-q", "--hard", "past"));
    toBackup.push(git(c.twin, "reset", "-q", "--hard", "backup"));
  }
  row("travel, 20 files differ: daemon", travel.daemon);
  row("travel, 20 files differ: in-process (node)", travel.node);
  row("  git reset --hard <past>", toPast);
  row("return, 20 files differ: daemon", back.daemon);
  row("return, 20 files differ: in-process (node)", back.node);
  row("  git reset --hard <backup>", toBackup);
}

/** revert of one recorded edit of one file; git revert of a one-file commit. */
function revertRows(c: Ctx, runs: number): void {
  const revert = { daemon: [] as ProcessSample[], node: [] as ProcessSample[] };
  const draft = join(tmpdir(), `tw-bench-draft-${process.pid}.txt`);
  const gitRevert: ProcessSample[] = [];
  for (let r = 0; r < runs; r++) {
    for (const how of c.ways) {
      const file = c.files[(r * 13 + (how === "node" ? 5 : 0)) % c.files.length] as string;
      writeFileSync(draft, `${readFileSync(join(c.w, file), "utf8")}// revert me ${r}\n`);
      const edit = tw(c, c.ways.includes("node") ? "node" : "daemon", [
        "edit",
        "whole",
        file,
        "--content-file",
        draft,
        "--json",
      ]);
      const op = (JSON.parse(edit.stdout) as { snapshotId: string }).snapshotId;
      revert[how].push(tw(c, how, ["revert", op, "--json"]));
    }
    editFiles(c.twin.work, c.files, 1, c.round++);
    gitCommit(c.twin, `one ${r}`);
    gitRevert.push(git(c.twin, "revert", "--no-edit", "HEAD"));
  }
  rmSync(draft, { force: true });
  row("revert one edit: daemon", revert.daemon);
  row("revert one edit: in-process (node)", revert.node);
  row("  git revert --no-edit HEAD", gitRevert);
}

export function writeRows(options: WriteRowsOptions): void {
  const scratch = execFileSync("mktemp", ["-d", join(tmpdir(), "tw-bench-cliw-XXXXXX")], {
    encoding: "utf8",
  }).trim();
  const pristine = pristineTree(options.size);
  const c: Ctx = {
    w: join(scratch, "w"),
    twin: { work: join(scratch, "git"), gitDir: join(scratch, "git.git") },
    files: [],
    round: 0,
    ways: options.daemonOnly === true ? ["daemon"] : ["daemon", "node"],
  };
  try {
    execFileSync("cp", ["-a", pristine, c.w]);
    execFileSync("cp", ["-a", pristine, c.twin.work]);
    c.files = editableFiles(c.w);
    spawnSync(process.execPath, [BIN, "init"], { cwd: c.w });
    spawnSync(process.execPath, [BIN, "watch", "start"], { cwd: c.w });
    spawnSync(process.execPath, [BIN, "snapshot", "create"], { cwd: c.w });
    gitInit(c.twin);
    gitCommit(c.twin, "first");
    tw(c, "daemon", ["status"]); // the worker warm
    console.log(
      `\nwrite commands on the real ${options.size} tree (${c.files.length} editable files), ${options.runs} samples per row${options.daemonOnly === true ? ", the daemon's alone" : ""}, node ${process.version}; load: ${execSync("uptime").toString().trim()}`,
    );
    const warmPid = daemonPid(c.w);
    console.log(`the daemon after its warm-up: ${daemonMemory(c.w)}`);
    snapshotRows(c, options.runs);
    travelRows(c, options.runs);
    revertRows(c, options.runs);
    console.log(`the daemon after the rows: ${daemonMemory(c.w, warmPid)}`);
    console.log(`load after: ${execSync("uptime").toString().trim()}`);
  } finally {
    spawnSync(process.execPath, [BIN, "watch", "stop"], { cwd: c.w });
    rmSync(scratch, { recursive: true, force: true });
  }
}
