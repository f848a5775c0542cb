/**
 * `npm run bench:snapshot [FILES] [REPS]` — the store against the alternatives a user has, side by
 * side in one run, medians of REPS repetitions (default 5) on a generated workspace of FILES
 * files (default 10 000, ~6 KB each: ~60 MB):
 *
 *   first snapshot · snapshot with no change · snapshot after changing 20 files · restoring them
 *
 * for timewarp (library, in process; walking the tree, and with its watch daemon running on a
 * twin workspace: snapshots by the delta path, the restore as a return does it, both manifests
 * compared by text), a shadow git repository (`git --git-dir=X --work-tree=W
 * add -A && git commit`; restore: `git read-tree -u --reset <commit>`), and `cp -a` (the seed's
 * copy layout; restore: copy the snapshot back). Then the CLI as a whole process (built dist;
 * walked, and watched with no change and 20 changes) against bare `node -e 0` and git, peak RSS at SNAPSHOT_BENCH_RSS_FILES files (default 100 000; 0 skips),
 * and store growth over SNAPSHOT_BENCH_GROWTH_SNAPSHOTS snapshots (default 100) changing 1% of
 * SNAPSHOT_BENCH_GROWTH_FILES files (default 2 000) each time. Not a test; never gates.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { DEFAULT_EXCLUDES, workspacePaths } from "../src/core/index.ts";
import {
  createObjectStore,
  createSnapshot,
  type Manifest,
  readManifestText,
  readStatCache,
  restoreManifest,
  restoreManifestText,
  scanWorkspaceText,
} from "../src/store/index.ts";
import { changeFiles, type Fixture, generateWorkspace, treeBytes } from "./snapshot-fixtures.ts";

const REPO = resolve(import.meta.dirname, "..");
const FILES = Number(process.argv[2] ?? process.env.SNAPSHOT_BENCH_FILES ?? 10_000);
const REPS = Number(process.argv[3] ?? process.env.SNAPSHOT_BENCH_REPS ?? 5);
const RSS_FILES = Number(process.env.SNAPSHOT_BENCH_RSS_FILES ?? 100_000);
const GROWTH_FILES = Number(process.env.SNAPSHOT_BENCH_GROWTH_FILES ?? 2_000);
const GROWTH_SNAPSHOTS = Number(process.env.SNAPSHOT_BENCH_GROWTH_SNAPSHOTS ?? 100);
const EXCLUDES = [...DEFAULT_EXCLUDES];
const GIT_ID = ["-c", "user.name=bench", "-c", "user.email=bench@example.com", "-c", "gc.auto=0"];

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? (s[m] ?? Number.NaN) : ((s[m - 1] ?? 0) + (s[m] ?? 0)) / 2;
};
/**
 * Time `fn` after a `sync`, so no tool pays for writing back the dirty pages another one (cp -a
 * of the whole tree, a removal) left behind: fsync latency on ext4 depends on them.
 */
const time = (fn: () => void): number => {
  execFileSync("sync");
  const t0 = performance.now();
  fn();
  return performance.now() - t0;
};
const fmt = (ms: number) => `${ms.toFixed(ms < 10 ? 1 : 0)} ms`;
const ratio = (a: number, b: number) => `${(a / b).toFixed(2)}x`;

function git(gitDir: string, work: string, ...args: string[]): string {
  return execFileSync("git", [...GIT_ID, `--git-dir=${gitDir}`, `--work-tree=${work}`, ...args], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
  });
}
function gitInit(gitDir: string, work: string): void {
  rmSync(gitDir, { recursive: true, force: true });
  git(gitDir, work, "init", "-q");
  writeFileSync(join(gitDir, "info", "exclude"), `${EXCLUDES.join("\n")}\n`);
}
const gitCommit = (gitDir: string, work: string) => {
  git(gitDir, work, "add", "-A");
  git(gitDir, work, "commit", "-q", "--allow-empty", "--no-verify", "-m", "checkpoint");
};
const cpA = (from: string, to: string) => execFileSync("cp", ["-a", from, to]);

const duKiB = (dir: string) =>
  Number(execFileSync("du", ["-sk", dir], { encoding: "utf8" }).split("\t")[0]);

interface Row {
  what: string;
  /** timewarp walking the tree (no watch daemon). */
  tw: number;
  /** timewarp with its watch daemon running (visits only what changed). */
  watched?: number;
  git: number;
  cp: number;
  target?: string;
}

function printRows(rows: Row[]): void {
  console.log(
    `${"".padEnd(34)}${"tw walk".padStart(10)}${"tw watch".padStart(10)}${"shadow git".padStart(12)}${"cp -a".padStart(11)}${"walk/git".padStart(10)}${"watch/git".padStart(11)}${"watch/cp".padStart(10)}  target`,
  );
  for (const r of rows) {
    const w = r.watched;
    console.log(
      `${r.what.padEnd(34)}${fmt(r.tw).padStart(10)}${(w === undefined ? "-" : fmt(w)).padStart(10)}${fmt(r.git).padStart(12)}${fmt(r.cp).padStart(11)}` +
        `${ratio(r.tw, r.git).padStart(10)}${(w === undefined ? "-" : ratio(w, r.git)).padStart(11)}${(w === undefined ? "-" : ratio(w, r.cp)).padStart(10)}  ${r.target ?? ""}`,
    );
  }
}

/** `timewarp watch start|stop` on a workspace, through the built bin. */
function watchDaemon(verb: "start" | "stop", w: string): void {
  const r = spawnSync(
    process.execPath,
    [join(REPO, "bin", "timewarp.cjs"), "watch", verb, "-C", w],
    {
      encoding: "utf8",
      env: { ...process.env, TIMEWARP_WATCH: "" },
    },
  );
  if (r.status !== 0) throw new Error(`watch ${verb} failed: ${r.stdout}${r.stderr}`);
}

function sideBySide(base: string): Fixture {
  const wTw = join(base, "w-tw");
  const wWatch = join(base, "w-watch");
  const wGit = join(base, "w-git");
  const wCp = join(base, "w-cp");
  const gitDir = join(base, "shadow.git");
  const t0 = performance.now();
  const fixture = generateWorkspace(wTw, { files: FILES, totalBytes: FILES * 6000 });
  cpA(wTw, wGit);
  cpA(wTw, wCp);
  cpA(wTw, wWatch);
  console.log(
    `workspace: ${FILES} files, ${(fixture.bytes / 1e6).toFixed(1)} MB (generated in ${fmt(performance.now() - t0)}); ${REPS} repetitions, medians\n`,
  );
  const first = { tw: [] as number[], git: [] as number[], cp: [] as number[] };
  for (let r = 0; r < REPS; r++) {
    rmSync(workspacePaths(wTw).data, { recursive: true, force: true });
    first.tw.push(time(() => createSnapshot(wTw, { excludes: EXCLUDES, maxFileBytes: 1e9 })));
    gitInit(gitDir, wGit);
    first.git.push(time(() => gitCommit(gitDir, wGit)));
    const dest = join(base, `cp-first-${r}`);
    first.cp.push(time(() => cpA(wCp, dest)));
    rmSync(dest, { recursive: true, force: true });
  }
  // Bring the stat cache past the racy window of the first snapshot (files written just before it).
  createSnapshot(wTw, { excludes: EXCLUDES, maxFileBytes: 1e9 });
  // The watched twin: its daemon's first answer is "unknown" (one walk), then it answers.
  createSnapshot(wWatch, { excludes: EXCLUDES, maxFileBytes: 1e9 });
  watchDaemon("start", wWatch);
  createSnapshot(wWatch, { excludes: EXCLUDES, maxFileBytes: 1e9 });
  createSnapshot(wWatch, { excludes: EXCLUDES, maxFileBytes: 1e9 });
  const noop = {
    tw: [] as number[],
    watched: [] as number[],
    git: [] as number[],
    cp: [] as number[],
    rehashed: [] as number[],
  };
  for (let r = 0; r < REPS; r++) {
    noop.tw.push(
      time(() => {
        noop.rehashed.push(createSnapshot(wTw, { excludes: EXCLUDES, maxFileBytes: 1e9 }).rehashed);
      }),
    );
    noop.watched.push(
      time(() => {
        const made = createSnapshot(wWatch, { excludes: EXCLUDES, maxFileBytes: 1e9 });
        if (made.rehashed !== 0) throw new Error("watched no-change snapshot re-read files");
      }),
    );
    noop.git.push(time(() => gitCommit(gitDir, wGit)));
    const dest = join(base, `cp-noop-${r}`);
    noop.cp.push(time(() => cpA(wCp, dest)));
    rmSync(dest, { recursive: true, force: true });
  }
  const change = {
    tw: [] as number[],
    watched: [] as number[],
    git: [] as number[],
    cp: [] as number[],
    rehashed: [] as number[],
  };
  const restore = {
    tw: [] as number[],
    watched: [] as number[],
    known: [] as number[],
    git: [] as number[],
    cp: [] as number[],
    written: [] as number[],
  };
  const store = createObjectStore(workspacePaths(wTw).objects);
  const storeWatch = createObjectStore(workspacePaths(wWatch).objects);
  for (let r = 0; r < REPS; r++) {
    // untimed: the state to return to
    const a: Manifest = createSnapshot(wTw, { excludes: EXCLUDES, maxFileBytes: 1e9 }).manifest;
    const aWatch = createSnapshot(wWatch, { excludes: EXCLUDES, maxFileBytes: 1e9 }).id;
    gitCommit(gitDir, wGit);
    const commitA = git(gitDir, wGit, "rev-parse", "HEAD").trim();
    const copyA = join(base, `cp-a-${r}`);
    cpA(wCp, copyA);
    for (const w of [wTw, wWatch, wGit, wCp]) {
      changeFiles(w, fixture, { count: 20, round: r + 1 });
    }
    let b: Manifest = a;
    change.tw.push(
      time(() => {
        const made = createSnapshot(wTw, { excludes: EXCLUDES, maxFileBytes: 1e9 });
        change.rehashed.push(made.rehashed);
        b = made.manifest;
      }),
    );
    change.watched.push(
      time(() => {
        const made = createSnapshot(wWatch, { excludes: EXCLUDES, maxFileBytes: 1e9 });
        if (made.rehashed !== 20)
          throw new Error(`watched snapshot re-read ${made.rehashed} files`);
      }),
    );
    change.git.push(time(() => gitCommit(gitDir, wGit)));
    const copyB = join(base, `cp-b-${r}`);
    change.cp.push(time(() => cpA(wCp, copyB)));
    restore.tw.push(
      time(() => {
        const res = restoreManifest(wTw, a, {
          store,
          excludes: EXCLUDES,
          statCache: readStatCache(workspacePaths(wTw).statCache),
        });
        restore.written.push(res.written);
      }),
    );
    restore.watched.push(
      time(() => {
        // as a return restores: the workspace's text by the delta scan, the target's from its
        // record, compared line by line
        const p = workspacePaths(wWatch);
        const current = scanWorkspaceText(wWatch, {
          excludes: EXCLUDES,
          statCachePath: p.statCache,
          dataDir: p.data,
        });
        if (current === null) throw new Error("the delta scan could not vouch for the workspace");
        const res = restoreManifestText(wWatch, readManifestText(wWatch, aWatch), current, {
          store: storeWatch,
          excludes: EXCLUDES,
        });
        if (res?.written !== 20) throw new Error(`watched restore wrote ${res?.written} files`);
      }),
    );
    // travel's case: the current state is known (the backup just taken), so no second scan.
    // The workspace is at A now; going to B rewrites the same 20 files.
    restore.known.push(
      time(() => {
        restoreManifest(wTw, b, {
          store,
          excludes: EXCLUDES,
          current: { manifest: a, skipped: [] },
        });
      }),
    );
    restore.git.push(time(() => git(gitDir, wGit, "read-tree", "-u", "--reset", commitA)));
    restore.cp.push(time(() => execFileSync("cp", ["-a", `${copyA}/.`, `${wCp}/`])));
    rmSync(copyA, { recursive: true, force: true });
    rmSync(copyB, { recursive: true, force: true });
  }
  const rows: Row[] = [
    {
      what: "first snapshot",
      tw: median(first.tw),
      git: median(first.git),
      cp: median(first.cp),
      target: "<= 1x git",
    },
    {
      what: "snapshot, no change",
      tw: median(noop.tw),
      watched: median(noop.watched),
      git: median(noop.git),
      cp: median(noop.cp),
      target: "<= 0.5x git, <= 120 ms",
    },
    {
      what: "snapshot after changing 20 files",
      tw: median(change.tw),
      watched: median(change.watched),
      git: median(change.git),
      cp: median(change.cp),
      target: "<= 0.5x git, <= 120 ms",
    },
    {
      what: "restore those 20 files",
      tw: median(restore.tw),
      watched: median(restore.watched),
      git: median(restore.git),
      cp: median(restore.cp),
      target: "<= 50 ms",
    },
  ];
  printRows(rows);
  console.log(
    `${"restore, current state known".padEnd(34)}${fmt(median(restore.known)).padStart(11)}   (travel: the backup just taken is the current state; no second scan)`,
  );
  console.log(
    `\n(files re-read: no change ${median(noop.rehashed)}, after 20 changes ${median(change.rehashed)}; restore wrote ${median(restore.written)} files; cp -a has no incremental mode: each row is a full copy)`,
  );
  console.log(
    `store: ${(duKiB(workspacePaths(wTw).data) / 1024).toFixed(1)} MiB after ${3 * REPS + 1} snapshots; shadow git: ${(duKiB(gitDir) / 1024).toFixed(1)} MiB`,
  );
  return fixture;
}

function ensureBuilt(): void {
  // bin/timewarp.cjs runs the bundle dist/bin/timewarp.cjs; the RSS child imports dist/store/ (tsc output).
  if (
    existsSync(join(REPO, "dist", "bin", "timewarp.cjs")) &&
    existsSync(join(REPO, "dist", "store", "index.js"))
  )
    return;
  console.log("building the CLI (npm run build) …");
  // tsc emits even when another folder has a type error; what matters is that the files exist.
  spawnSync("npm", ["run", "build"], { cwd: REPO, stdio: "ignore" });
  if (!existsSync(join(REPO, "dist", "store", "index.js")))
    throw new Error("build failed: dist/store missing");
}

function wholeProcess(base: string, fixture: Fixture): void {
  ensureBuilt();
  const bin = join(REPO, "bin", "timewarp.cjs");
  const runs = Math.max(5, REPS * 2);
  const gitDir = join(base, "shadow.git");
  const wGit = join(base, "w-git");
  const wWatch = join(base, "w-watch");
  /** Median wall time of `args` run as a whole process; `before` runs untimed ahead of each. */
  const sample = (args: string[], cwd: string, env: NodeJS.ProcessEnv = {}, before = () => {}) => {
    const xs: number[] = [];
    for (let i = 0; i < runs; i++) {
      before();
      const t0 = performance.now();
      const r = spawnSync(process.execPath, args, {
        cwd,
        encoding: "utf8",
        env: { ...process.env, ...env },
      });
      xs.push(performance.now() - t0);
      if (r.status !== 0) throw new Error(`${args.join(" ")} failed: ${r.stdout}${r.stderr}`);
    }
    return median(xs);
  };
  const gitSample = (before = () => {}) => {
    const xs: number[] = [];
    for (let i = 0; i < runs; i++) {
      before();
      xs.push(time(() => gitCommit(gitDir, wGit)));
    }
    return median(xs);
  };
  const bare = sample(["-e", "0"], base);
  const status = sample([bin, "status", "--json"], join(base, "w-tw"));
  // Without a daemon (TIMEWARP_WATCH=0 also keeps the command from starting one): a walk.
  const walked = sample([bin, "snapshot", "create", "--json"], join(base, "w-tw"), {
    TIMEWARP_WATCH: "0",
  });
  const gitNoop = gitSample();
  // With the daemon the side-by-side runs left in place: the delta path.
  const watchedNoop = sample([bin, "snapshot", "create", "--json"], wWatch);
  let round = 100;
  const watched20 = sample([bin, "snapshot", "create", "--json"], wWatch, {}, () =>
    changeFiles(wWatch, fixture, { count: 20, round: round++ }),
  );
  round = 100;
  const git20 = gitSample(() => changeFiles(wGit, fixture, { count: 20, round: round++ }));
  console.log(
    `\nCLI as a whole process (built dist, ${runs} runs, medians), ${FILES}-file workspace`,
  );
  console.log(`  node -e 0                                   ${fmt(bare)}`);
  console.log(
    `  timewarp status --json                      ${fmt(status)}   (+${fmt(status - bare)} over node; target <= +60 ms)`,
  );
  console.log(
    `  snapshot create --json, no change, walk     ${fmt(walked)}   (+${fmt(walked - bare)} over node; shadow git add+commit ${fmt(gitNoop)}, ${ratio(walked, gitNoop)})`,
  );
  console.log(
    `  snapshot create --json, no change, watched  ${fmt(watchedNoop)}   (+${fmt(watchedNoop - bare)} over node; shadow git ${fmt(gitNoop)}, ${ratio(watchedNoop, gitNoop)})`,
  );
  console.log(
    `  snapshot create --json, 20 changed, watched ${fmt(watched20)}   (+${fmt(watched20 - bare)} over node; shadow git ${fmt(git20)}, ${ratio(watched20, git20)})`,
  );
}

function peakRss(base: string): void {
  if (RSS_FILES <= 0) return;
  const w = join(base, "rss");
  const t0 = performance.now();
  generateWorkspace(w, { files: RSS_FILES, totalBytes: RSS_FILES * 200 });
  console.log(
    `\npeak RSS at ${RSS_FILES} files (tiny files; generated in ${fmt(performance.now() - t0)})`,
  );
  // From the built dist, in a plain node process: tsx's own loader would add ~50 MB to the RSS.
  ensureBuilt();
  // Each CLI run and hook is one process taking one snapshot: measure the first snapshot and a
  // no-change one each in a fresh process, then three in one process (a long-lived library
  // user, like the MCP server), where the later snapshots run in a heap the first one grew.
  const child = join(base, "rss-child.mjs");
  writeFileSync(
    child,
    `import { createSnapshot } from ${JSON.stringify(join(REPO, "dist/store/index.js"))};
const opts = { excludes: ${JSON.stringify(EXCLUDES)}, maxFileBytes: 1e9 };
const times = [];
let last;
for (let i = 0; i < Number(process.argv[3]); i++) {
  const t0 = performance.now(); last = createSnapshot(process.argv[2], opts); times.push(performance.now() - t0);
}
console.log(JSON.stringify({ times, rehashed: last.rehashed, maxRSS: process.resourceUsage().maxRSS }));
`,
  );
  const runChild = (snapshots: number) => {
    const r = spawnSync(process.execPath, [child, w, String(snapshots)], {
      cwd: REPO,
      encoding: "utf8",
    });
    if (r.status !== 0) throw new Error(r.stderr);
    return JSON.parse(r.stdout.trim().split("\n").pop() ?? "{}") as {
      times: number[];
      rehashed: number;
      maxRSS: number;
    };
  };
  const mib = (kib: number) => `${(kib / 1024).toFixed(0)} MiB`;
  const firstRun = runChild(1);
  const noopRun = runChild(1);
  rmSync(workspacePaths(w).data, { recursive: true, force: true });
  const threeRun = runChild(3);
  const out = { first: firstRun.times[0], noop: noopRun.times[0], rehashed: noopRun.rehashed };
  const gitDir = join(base, "rss.git");
  gitInit(gitDir, w);
  const g = spawnSync(
    "/usr/bin/time",
    ["-f", "%M %e", "git", ...GIT_ID, `--git-dir=${gitDir}`, `--work-tree=${w}`, "add", "-A"],
    {
      encoding: "utf8",
    },
  );
  const [gitRss, gitSec] = (g.stderr.trim().split("\n").pop() ?? "0 0").split(" ").map(Number);
  console.log(
    `  timewarp, one snapshot per process (the CLI, hooks): first ${fmt(out.first ?? 0)} peak RSS ${mib(firstRun.maxRSS)}; no change ${fmt(out.noop ?? 0)} (re-read ${out.rehashed}) peak RSS ${mib(noopRun.maxRSS)} (target <= 200 MiB)`,
  );
  console.log(
    `  timewarp, three snapshots in one process (a long-lived library user): peak RSS ${mib(threeRun.maxRSS)}`,
  );
  console.log(
    `  shadow git add -A: ${fmt((gitSec ?? 0) * 1000)}, peak RSS ${((gitRss ?? 0) / 1024).toFixed(0)} MiB`,
  );
  rmSync(w, { recursive: true, force: true });
}

function growth(base: string): void {
  if (GROWTH_SNAPSHOTS <= 0) return;
  const w = join(base, "growth");
  const fixture = generateWorkspace(w, {
    files: GROWTH_FILES,
    totalBytes: GROWTH_FILES * 6000,
    seed: 7,
  });
  const wsBytes = treeBytes(w);
  const gitDir = join(base, "growth.git");
  gitInit(gitDir, w);
  createSnapshot(w, { excludes: EXCLUDES });
  gitCommit(gitDir, w);
  const storeAfterFirst = treeBytes(workspacePaths(w).data);
  const count = Math.max(1, Math.round(GROWTH_FILES / 100));
  for (let i = 1; i < GROWTH_SNAPSHOTS; i++) {
    changeFiles(w, fixture, { count, round: i });
    createSnapshot(w, { excludes: EXCLUDES });
    gitCommit(gitDir, w);
  }
  const data = workspacePaths(w).data;
  const objects = treeBytes(join(data, "objects"));
  const records = treeBytes(join(data, "snapshots"));
  const total = objects + records;
  const grown = total - storeAfterFirst;
  console.log(
    `\nstore growth: ${GROWTH_SNAPSHOTS} snapshots of a ${GROWTH_FILES}-file, ${(wsBytes / 1e6).toFixed(1)} MB workspace, ${count} files (1%) changed each time`,
  );
  console.log(
    `  timewarp: objects ${(objects / 1e6).toFixed(1)} MB + records ${(records / 1e6).toFixed(1)} MB = ${(total / 1e6).toFixed(1)} MB; growth after the first ${(grown / 1e6).toFixed(1)} MB = ${(grown / wsBytes).toFixed(2)}x the workspace (target <= 2x)`,
  );
  console.log(
    `  shadow git (zlib, packs nothing without gc): ${(treeBytes(gitDir) / 1e6).toFixed(1)} MB`,
  );
}

function main(): void {
  const base = mkdtempSync(join(tmpdir(), "tw-bench-snapshot-"));
  try {
    ensureBuilt();
    const fixture = sideBySide(base);
    try {
      wholeProcess(base, fixture);
    } finally {
      watchDaemon("stop", join(base, "w-watch"));
    }
    peakRss(base);
    growth(base);
    console.log(
      `\nbench process peak RSS ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MiB`,
    );
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
}

main();
