/**
 * The rows of `npm run bench:scale` measured on a tree (10k or 100k files): watched snapshots
 * in-process and through the CLI, return, the bytes one snapshot writes, the store after 20
 * rounds of 1% changes, and the peak RSS of a first snapshot; each beside git on a twin copy.
 */
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { workspacePaths } from "../src/core/index.ts";
import { createSnapshot } from "../src/store/index.ts";
import { returnToPresent, startSession, travel } from "../src/timemachine/index.ts";
import {
  cli,
  duKiB,
  EXCLUDES,
  editableFiles,
  editFiles,
  type GitTwin,
  git,
  gitCommit,
  gitInit,
  listing,
  median,
  mib,
  type ScaleRow,
  timed,
  watchDaemon,
  written,
} from "./scale-common.ts";

export interface TreeBenchOptions {
  size: string;
  pristine: string;
  scratch: string;
  reps: number;
  /** Files in the tree: a round of the store row changes 1% of them. */
  files: number;
  want: (row: string) => boolean;
  /** Called with each row as soon as it is measured. */
  onRow?: (row: ScaleRow) => void;
}

const snap = (root: string) => createSnapshot(root, { excludes: EXCLUDES, maxFileBytes: 1e9 });

function copyTree(pristine: string, to: string): void {
  execFileSync("cp", ["-a", pristine, to]);
}

/** Rows on the watched workspace: snapshot20, record, noop-cli, return. */
async function watchedRows(o: TreeBenchOptions, rows: ScaleRow[]): Promise<void> {
  const w = join(o.scratch, `tw-${o.size}`);
  const twin: GitTwin = {
    work: join(o.scratch, `git-${o.size}`),
    gitDir: join(o.scratch, `git-${o.size}.git`),
  };
  // the twin only where a row compares with git (at 100k its first commit takes minutes)
  const withGit = o.want("noop-cli") || o.want("return") || o.want("snapshot20");
  copyTree(o.pristine, w);
  if (withGit) {
    copyTree(o.pristine, twin.work);
    gitInit(twin);
    gitCommit(twin, "first");
  }
  await startSession({ root: w, sessionId: "bench" });
  watchDaemon("start", w);
  try {
    // the daemon's first answer is "unknown" (one walk); from then on it answers
    snap(w);
    snap(w);
    const files = editableFiles(w);
    if (o.want("snapshot20") || o.want("record")) snapshot20(o, { w, twin, files, rows, round: 1 });
    if (o.want("noop-cli")) noopCli(o, { w, twin, rows });
    if (o.want("return")) returnRow(o, { w, twin, files, rows, round: 100 });
  } finally {
    watchDaemon("stop", w);
  }
}

interface Ctx {
  w: string;
  twin: GitTwin;
  files: string[];
  rows: ScaleRow[];
  round: number;
}

function snapshot20(o: TreeBenchOptions, c: Ctx): void {
  const tw: number[] = [];
  const gitMs: number[] = [];
  const bytes: Map<string, number>[] = [];
  const data = workspacePaths(c.w).data;
  for (let r = 0; r < o.reps; r++) {
    editFiles(c.w, c.files, 20, c.round + r);
    if (o.want("snapshot20")) editFiles(c.twin.work, c.files, 20, c.round + r);
    const before = listing(data);
    tw.push(
      timed(() => {
        const made = snap(c.w);
        if (made.rehashed !== 20)
          throw new Error(`watched snapshot re-read ${made.rehashed} files, not 20`);
      }),
    );
    bytes.push(written(before, listing(data)));
    if (o.want("snapshot20")) gitMs.push(gitCommit(c.twin, `r${r}`).ms);
  }
  if (o.want("snapshot20"))
    c.rows.push({
      row: "snapshot20",
      size: o.size,
      what: "20 files changed, watched snapshot, in-process",
      tw: median(tw),
      git: median(gitMs),
      gitCmd: "add -A && commit (2 processes; context, not in the issue's table)",
      unit: "ms",
    });
  if (!o.want("record")) return;
  const part = (pred: (k: string) => boolean) =>
    median(bytes.map((m) => [...m].filter(([k]) => pred(k)).reduce((a, [, v]) => a + v, 0)));
  const meta = part(
    (k) => k !== "objects" && k !== "watch" && k !== "tmp" && !k.startsWith("events"),
  );
  c.rows.push({
    row: "record",
    size: o.size,
    what: "bytes one 20-file snapshot writes besides objects, events and the daemon's journal",
    tw: meta,
    git: null,
    gitCmd: "—",
    unit: "bytes",
    note: `by folder: ${[...(bytes[bytes.length - 1] ?? new Map())].map(([k, v]) => `${k} ${(v / 1024).toFixed(1)} KiB`).join(", ")}`,
  });
}

function noopCli(o: TreeBenchOptions, c: Pick<Ctx, "w" | "twin" | "rows">): void {
  const runs = Math.max(5, o.reps * 2);
  const tw: number[] = [];
  const rss: number[] = [];
  const status: number[] = [];
  const commit: number[] = [];
  for (let i = 0; i < runs; i++) {
    const s = cli(c.w, ["snapshot", "create", "--json"]);
    tw.push(s.ms);
    rss.push(s.rssKiB ?? 0);
    status.push(git(c.twin, "status", "--porcelain").ms);
    commit.push(gitCommit(c.twin, `noop ${i}`).ms);
  }
  const base = {
    row: "noop-cli",
    size: o.size,
    unit: "ms" as const,
    twRssMiB: mib(Math.max(...rss)),
  };
  c.rows.push({
    ...base,
    what: "no-change watched snapshot, CLI (whole process)",
    tw: median(tw),
    git: median(commit),
    gitCmd: "add -A && commit --allow-empty (the counterpart: both leave a restorable record)",
  });
  c.rows.push({
    ...base,
    what: "  the same beside git status (reads only: a floor, not a counterpart)",
    tw: median(tw),
    git: median(status),
    gitCmd: "status --porcelain",
  });
}

function returnRow(o: TreeBenchOptions, c: Ctx): void {
  const cliMs: number[] = [];
  const inProc: number[] = [];
  const gitMs: number[] = [];
  let rss = 0;
  let gitRss = 0;
  for (let r = 0; r < o.reps; r++) {
    for (const viaCli of [true, false]) {
      // the past: a snapshot taken just before 20 files change, so exactly 20 differ
      const past = snap(c.w).id;
      editFiles(c.w, c.files, 20, c.round + r * 2 + (viaCli ? 0 : 1));
      travel({ root: c.w, snapshotId: past });
      if (viaCli) {
        const s = cli(c.w, ["return", "--json"]);
        cliMs.push(s.ms);
        rss = Math.max(rss, s.rssKiB ?? 0);
      } else inProc.push(timed(() => returnToPresent({ root: c.w })));
    }
    gitCommit(c.twin, `past ${r}`);
    git(c.twin, "tag", "-f", "past");
    editFiles(c.twin.work, c.files, 20, c.round + r * 2);
    gitCommit(c.twin, `backup ${r}`);
    git(c.twin, "branch", "-f", "backup");
    git(c.twin, "reset", "-q", "--hard", "past");
    const g = git(c.twin, "reset", "-q", "--hard", "backup");
    gitMs.push(g.ms);
    gitRss = Math.max(gitRss, g.rssKiB ?? 0);
  }
  const base = {
    row: "return",
    size: o.size,
    unit: "ms" as const,
    git: median(gitMs),
    gitCmd: "reset --hard <backup>",
  };
  c.rows.push({
    ...base,
    what: "return, 20 files differ, watched, CLI (whole process)",
    tw: median(cliMs),
    twRssMiB: mib(rss),
    gitRssMiB: mib(gitRss),
  });
  c.rows.push({ ...base, what: "  the same in-process (returnToPresent)", tw: median(inProc) });
}

/** Rows on a fresh copy: rss (the first snapshot through the CLI) and store (20 rounds of 1%). */
function storeRows(o: TreeBenchOptions, rows: ScaleRow[]): void {
  const w = join(o.scratch, `store-${o.size}`);
  const twin: GitTwin = {
    work: join(o.scratch, `store-git-${o.size}`),
    gitDir: join(o.scratch, `store-git-${o.size}.git`),
  };
  copyTree(o.pristine, w);
  copyTree(o.pristine, twin.work);
  const first = cli(w, ["snapshot", "create", "--json"], { TIMEWARP_WATCH: "0" });
  gitInit(twin);
  const add = git(twin, "add", "-A");
  git(twin, "commit", "-q", "-m", "first");
  if (o.want("rss"))
    rows.push({
      row: "rss",
      size: o.size,
      what: "first snapshot, CLI, no daemon (peak RSS in the RSS columns)",
      tw: first.ms,
      git: add.ms,
      gitCmd: "add -A (into a new repository)",
      unit: "ms",
      twRssMiB: mib(first.rssKiB),
      gitRssMiB: mib(add.rssKiB),
    });
  if (!o.want("store")) return;
  const files = editableFiles(w);
  const count = Math.round(o.files / 100);
  for (let r = 1; r <= 20; r++) {
    editFiles(w, files, count, 1000 + r);
    editFiles(twin.work, files, count, 1000 + r);
    snap(w);
    gitCommit(twin, `round ${r}`);
  }
  const data = workspacePaths(w).data;
  const twBefore = duKiB(data);
  cli(w, ["gc", "--json"], { TIMEWARP_WATCH: "0" });
  const twAfter = duKiB(data);
  const gitBefore = duKiB(twin.gitDir);
  git(twin, "gc", "-q");
  const gitAfter = duKiB(twin.gitDir);
  rows.push({
    row: "store",
    size: o.size,
    what: `store after 20 rounds of 1% changes (${count} files a round), after gc`,
    tw: twAfter * 1024,
    git: gitAfter * 1024,
    gitCmd: "gc (du of the git dir)",
    unit: "bytes",
    note: `before gc: timewarp ${(twBefore / 1024).toFixed(1)} MiB, git ${(gitBefore / 1024).toFixed(1)} MiB (du -sk of .timewarp/ and of the git dir)`,
  });
}

/** Every tree row wanted at one size. */
export async function treeRows(o: TreeBenchOptions): Promise<ScaleRow[]> {
  const rows: ScaleRow[] = [];
  const push = rows.push.bind(rows);
  rows.push = (...xs: ScaleRow[]) => {
    for (const x of xs) o.onRow?.(x);
    return push(...xs);
  };
  if (["snapshot20", "record", "noop-cli", "return"].some(o.want)) await watchedRows(o, rows);
  if (o.want("rss") || o.want("store")) storeRows(o, rows);
  return rows;
}
