/**
 * `npm run bench:rss [-- --size 10k|100k] [--keep] [--json]` — peak resident memory of every
 * command that touches the whole tree, each as a whole process through the built bin
 * (`node bin/timewarp.cjs`, GNU time's `%M`), beside `git add -A && git commit` and `git status`
 * on a twin copy (issue 22, item 5: ≤ 150 MiB for any command at 100k files, the watch daemon
 * ≤ 120 MiB with its worker). The daemon's number is its VmHWM (`/proc/PID/status`) after it
 * started (and primed its stat cache in a child: its time is in the note), after the first
 * snapshot it served (VmHWM reset first: the whole-tree command that walked in the worker before
 * the prime; `TIMEWARP_WATCH_PRIME=0` shows that), and again after its worker served commands (status, history, snapshot list and diff
 * through `bin/timewarp`) and a snapshot took its answer, and its VmRSS (with RssAnon) 5 s after
 * a travel and a return it served.
 *
 * The trees are bench:scale's (`scale-trees.ts`, real npm packages, ~10k files, or ten copies of
 * them), copied with `cp -a` into the temp dir (`MEM_BENCH_DIR`). Rows without the daemon run
 * with `TIMEWARP_WATCH=0`. Memory hardly depends on the load, but the load is printed with
 * every row. Not a test; `SCALE_BENCH_NO_BUILD=1` skips the build.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import {
  awaitDaemonPid,
  awaitPrime,
  BIN,
  cli,
  daemonMemory,
  editableFiles,
  editFiles,
  ensureBuilt,
  type GitTwin,
  git,
  gitCommit,
  gitInit,
  REPO,
  watchDaemon,
} from "./scale-common.ts";
import { countTree, pristineTree } from "./scale-trees.ts";

interface MemRow {
  what: string;
  /** Peak RSS in MiB (whole process), or the daemon's VmHWM. */
  mib: number | null;
  ms: number;
  load: string;
  note?: string;
}

const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(" ");
const mibOf = (kib: number | null) => (kib === null ? null : kib / 1024);

function options() {
  const { values } = parseArgs({
    options: {
      size: { type: "string", default: "10k" },
      keep: { type: "boolean", default: false },
      json: { type: "boolean", default: false },
    },
  });
  if (values.size !== "10k" && values.size !== "100k")
    throw new Error(`--size ${values.size}: 10k or 100k`);
  return { size: values.size as "10k" | "100k", keep: values.keep, json: values.json };
}

const NO_DAEMON = { TIMEWARP_WATCH: "0" };

/** One CLI command in `ws` as a whole process: its peak RSS and the JSON it printed. */
function run(rows: MemRow[], ws: string, what: string, args: string[]): unknown {
  const s = cli(ws, ["-C", ws, ...args], NO_DAEMON);
  rows.push({ what, mib: mibOf(s.rssKiB), ms: s.ms, load: load() });
  return s.stdout.trim() === "" ? null : JSON.parse(s.stdout);
}

/** A command through `bin/timewarp` (the sh launcher: served by the daemon's worker). */
function served(ws: string, args: string[]): string {
  const r = spawnSync(join(REPO, "bin", "timewarp"), ["-C", ws, ...args], { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`timewarp ${args.join(" ")}: ${r.stderr}`);
  return r.stdout;
}

function daemonRows(rows: MemRow[], ws: string, first: string): void {
  const t0 = performance.now();
  watchDaemon("start", ws);
  const pid = awaitDaemonPid(ws);
  const prime = awaitPrime(ws);
  // daemon.json is written once the tree is watched; the hook worker loads its code after that
  execFileSync("sleep", ["5"]);
  const started = daemonMemory(pid);
  rows.push({
    what: "watch daemon, started, worker warm (VmHWM)",
    mib: mibOf(started.hwm),
    ms: performance.now() - t0,
    load: load(),
    note:
      `VmRSS ${(started.rss / 1024).toFixed(1)} MiB; prime ` +
      (prime === null ? "none" : `${prime.outcome} in ${prime.duration_ms} ms (in its child)`),
  });
  // The first whole-tree command since the start, served: without a prime it walks in the worker.
  writeFileSync(`/proc/${pid}/clear_refs`, "5");
  const tf = performance.now();
  const firstSnap = JSON.parse(served(ws, ["snapshot", "create", "--json"])) as { scan: string };
  const afterFirst = daemonMemory(pid);
  rows.push({
    what: "watch daemon + worker, after the first snapshot it served (VmHWM since)",
    mib: mibOf(afterFirst.hwm),
    ms: performance.now() - tf,
    load: load(),
    note: `VmRSS ${(afterFirst.rss / 1024).toFixed(1)} MiB; scan: ${firstSnap.scan}`,
  });
  const t1 = performance.now();
  for (const args of [["status"], ["history"], ["snapshot", "list"], ["snapshot", "diff", first]])
    served(ws, args);
  // The first snapshot with the daemon records its manifest for the delta path; the second,
  // after 20 more edits, takes it.
  for (const what of ["index update", "20 files edited"]) {
    if (what !== "index update") editFiles(ws, editableFiles(ws), 20, 2);
    const snap = cli(ws, ["-C", ws, "snapshot", "create", "--json"]);
    rows.push({
      what: `snapshot create with the daemon (${what})`,
      mib: mibOf(snap.rssKiB),
      ms: snap.ms,
      load: load(),
      note: `scan: ${(JSON.parse(snap.stdout) as { scan: string }).scan}`,
    });
  }
  const after = daemonMemory(pid);
  rows.push({
    what: "watch daemon + worker, after serving commands (VmHWM)",
    mib: mibOf(after.hwm),
    ms: performance.now() - t1,
    load: load(),
    note: `VmRSS ${(after.rss / 1024).toFixed(1)} MiB; served: status, history, snapshot list, snapshot diff`,
  });
  // The write commands through the daemon's worker too, then what it keeps once idle.
  const t2 = performance.now();
  served(ws, ["travel", first]);
  served(ws, ["return"]);
  execFileSync("sleep", ["5"]);
  const idle = daemonMemory(pid);
  rows.push({
    what: "watch daemon + worker, 5 s after a served travel and return (VmRSS)",
    mib: mibOf(idle.rss),
    ms: performance.now() - t2,
    load: load(),
    note: `VmHWM ${(idle.hwm / 1024).toFixed(1)} MiB, RssAnon ${(idle.anon / 1024).toFixed(1)} MiB`,
  });
  watchDaemon("stop", ws);
}

function gitRows(rows: MemRow[], twin: GitTwin): void {
  gitInit(twin);
  const c = gitCommit(twin, "first");
  rows.push({
    what: "git add -A && git commit (first)",
    mib: mibOf(c.rssKiB),
    ms: c.ms,
    load: load(),
  });
  const s = git(twin, "status", "--porcelain");
  rows.push({ what: "git status", mib: mibOf(s.rssKiB), ms: s.ms, load: load() });
}

function main(): void {
  const opts = options();
  ensureBuilt();
  const source = pristineTree(opts.size);
  const scratch = mkdtempSync(join(process.env.MEM_BENCH_DIR ?? tmpdir(), "tw-mem-"));
  const ws = join(scratch, "ws");
  const twin: GitTwin = { work: join(scratch, "git-work"), gitDir: join(scratch, "git-dir") };
  const rows: MemRow[] = [];
  try {
    execFileSync("cp", ["-a", source, ws]);
    execFileSync("cp", ["-a", source, twin.work]);
    mkdirSync(twin.gitDir);
    const tree = countTree(ws);
    const floor = cli(ws, ["--version"], NO_DAEMON);
    rows.push({
      what: "timewarp --version (floor)",
      mib: mibOf(floor.rssKiB),
      ms: floor.ms,
      load: load(),
    });
    const s1 = run(rows, ws, "snapshot create (first)", ["snapshot", "create", "--json"]) as {
      snapshot_id: string;
    };
    const edited = editFiles(ws, editableFiles(ws), 20, 1);
    const s2 = run(rows, ws, "snapshot create (second, 20 files edited, walk)", [
      "snapshot",
      "create",
      "--json",
    ]) as { snapshot_id: string };
    run(rows, ws, "status", ["status", "--json"]);
    run(rows, ws, "snapshot diff S1 (to the workspace)", [
      "snapshot",
      "diff",
      s1.snapshot_id,
      "--json",
    ]);
    run(rows, ws, "snapshot diff S1 S2", [
      "snapshot",
      "diff",
      s1.snapshot_id,
      s2.snapshot_id,
      "--json",
    ]);
    run(rows, ws, "travel S1 (20 files differ)", ["travel", s1.snapshot_id, "--json"]);
    run(rows, ws, "return", ["return", "--json"]);
    run(rows, ws, "fsck", ["fsck", "--json"]);
    run(rows, ws, "gc", ["gc", "--json"]);
    daemonRows(rows, ws, s1.snapshot_id);
    gitRows(rows, twin);
    report(opts, tree, edited.length, rows);
  } finally {
    if (!opts.keep) rmSync(scratch, { recursive: true, force: true });
    else process.stderr.write(`kept ${scratch}\n`);
  }
}

function report(
  opts: { size: string; json: boolean },
  tree: { files: number; dirs: number; bytes: number },
  edited: number,
  rows: MemRow[],
): void {
  const head = `${opts.size} tree: ${tree.files} files, ${tree.dirs} dirs, ${(tree.bytes / 1e6).toFixed(0)} MB; ${edited} files edited before the second snapshot; node ${process.version}; bin ${BIN}`;
  if (opts.json) {
    console.log(JSON.stringify({ tree, head, rows }));
    return;
  }
  console.log(head);
  console.log("| command | peak RSS MiB | wall ms | load (1/5/15 min) | note |");
  console.log("|---|---|---|---|---|");
  for (const r of rows) {
    const mib = r.mib === null ? "—" : r.mib.toFixed(1);
    console.log(`| ${r.what} | ${mib} | ${r.ms.toFixed(0)} | ${r.load} | ${r.note ?? ""} |`);
  }
}

main();
