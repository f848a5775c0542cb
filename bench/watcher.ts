/**
 * `npm run bench:watcher [-- --size 10k|100k|both] [--rounds N] [--json]` — issue 22, item 6:
 * `@parcel/watcher` (inotify on Linux, FSEvents on macOS, ReadDirectoryChangesW on Windows) beside
 * timewarp's own watch daemon (`timewarp watch`, fs.watch per directory, journal + cookies) on the
 * real trees of bench:scale (bench/scale-trees.ts):
 *
 * - start-up (until every watch is in place), RSS and inotify watches, per tree size;
 * - `writeSnapshot` / `getEventsSince` (parcel's answer for a process without a daemon);
 * - latency from a write to its report: ours as a client asks (`watchedChanges`, a cookie round
 *   trip) and as the journal line lands; parcel's as its callback fires;
 * - exactness (10k tree): random creates, edits, renames and deletes, including new nested
 *   directories, and at each checkpoint the walk's truth beside what each source reported.
 *
 * Only the public library and the built CLI. Not a test; never gates.
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { effectiveExcludes, readConfig, workspacePaths } from "../src/core/index.ts";
import {
  initWorkspace,
  runningWatchDaemon,
  scanScope,
  watchedChanges,
  watchPaths,
} from "../src/store/index.ts";
import { cli, ensureBuilt, median, REPO, watchDaemon } from "./scale-common.ts";
import { countTree, pristineTree } from "./scale-trees.ts";
import { missed, randomOps, relativeTo, truthChanges, truthListing } from "./watcher-exact.ts";

type Parcel = typeof import("@parcel/watcher");
const parcel = createRequire(join(REPO, "package.json"))("@parcel/watcher") as Parcel;
const COOKIES = ".bench-cookies";
const SKIP = new Set([".timewarp", COOKIES]);

/** inotify watches held by a process (`inotify wd:` lines of its fdinfo). */
function inotifyWatches(pid: number | "self"): number {
  let n = 0;
  for (const fd of readdirSync(`/proc/${pid}/fdinfo`)) {
    try {
      n += (readFileSync(`/proc/${pid}/fdinfo/${fd}`, "utf8").match(/^inotify wd:/gm) ?? []).length;
    } catch {
      // closed meanwhile
    }
  }
  return n;
}

function procMiB(pid: number, field: "VmRSS" | "VmHWM"): number {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(
    readFileSync(`/proc/${pid}/status`, "utf8"),
  );
  return Number(m?.[1] ?? 0) / 1024;
}

/** Ours: `timewarp watch start` (returns once daemon.json says every watch is in place). */
function startupOurs(w: string) {
  initWorkspace(w);
  const s = cli(w, ["watch", "start", "--json"], { TIMEWARP_WATCH: "" });
  const info = runningWatchDaemon(w);
  if (info === null) throw new Error("no watch daemon after watch start");
  const out = {
    startMs: s.ms,
    rssMiB: procMiB(info.pid, "VmRSS"),
    hwmMiB: procMiB(info.pid, "VmHWM"),
    watches: inotifyWatches(info.pid),
    directories: info.directories,
  };
  watchDaemon("stop", w);
  return out;
}

/** Parcel in a fresh process: subscribe, RSS, watches, then writeSnapshot and getEventsSince. */
const PARCEL_CHILD = `
const { createRequire } = require("node:module");
const { readdirSync, readFileSync } = require("node:fs");
const w = createRequire(${JSON.stringify(join(REPO, "package.json"))})("@parcel/watcher");
const [dir, snap] = process.argv.slice(2);
const opts = { ignore: [dir + "/.timewarp"] };
const watches = () => readdirSync("/proc/self/fdinfo").reduce((n, fd) => {
  try { return n + (readFileSync("/proc/self/fdinfo/" + fd, "utf8").match(/^inotify wd:/gm) || []).length; } catch { return n; }
}, 0);
(async () => {
  let t = performance.now();
  const sub = await w.subscribe(dir, () => {}, opts);
  const startMs = performance.now() - t;
  const rssMiB = process.memoryUsage().rss / 1048576;
  const n = watches();
  await sub.unsubscribe();
  t = performance.now();
  await w.writeSnapshot(dir, snap, opts);
  const writeSnapshotMs = performance.now() - t;
  t = performance.now();
  const events = await w.getEventsSince(dir, snap, opts);
  const sinceMs = performance.now() - t;
  console.log(JSON.stringify({ startMs, rssMiB, watches: n, writeSnapshotMs, sinceMs, sinceEvents: events.length,
    hwmMiB: process.resourceUsage().maxRSS / 1024 }));
})();
`;

function startupParcel(w: string, scratch: string) {
  const child = join(scratch, "parcel-child.cjs");
  writeFileSync(child, PARCEL_CHILD);
  const r = spawnSync(process.execPath, [child, w, join(scratch, "parcel.snapshot")], {
    encoding: "utf8",
  });
  if (r.status !== 0) throw new Error(`parcel child: ${r.stderr}`);
  return JSON.parse(r.stdout.trim()) as Record<string, number>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Paths parcel reported since the last `drain`, and a wait for a path to show up. */
function parcelCollector(root: string) {
  let seen = new Set<string>();
  let waiting: { path: string; resolve: () => void } | undefined;
  const errors: string[] = [];
  const onEvents = (err: Error | null, events: { path: string }[]) => {
    // parcel passes its own failures here (e.g. removing the watch of a deleted directory):
    // counted, and the run goes on to see whether later reports are still whole
    if (err) errors.push(err.message);
    for (const e of events) seen.add(relativeTo(root, e.path));
    if (waiting && seen.has(waiting.path)) waiting.resolve();
  };
  return {
    onEvents,
    errors,
    drain: () => {
      const out = seen;
      seen = new Set();
      return out;
    },
    /** Resolves once `rel` was reported; rejects after 5 s. */
    until: (rel: string) =>
      new Promise<void>((resolve, reject) => {
        if (seen.has(rel)) return resolve();
        const timer = setTimeout(() => reject(new Error(`parcel never reported ${rel}`)), 5000);
        waiting = {
          path: rel,
          resolve: () => {
            clearTimeout(timer);
            waiting = undefined;
            resolve();
          },
        };
      }),
  };
}

/** Ours as a client asks: the changed paths since `token`, and the new token. */
function asker(w: string) {
  const scope = scanScope(effectiveExcludes(readConfig(workspacePaths(w).config)));
  let token = watchedChanges(w, undefined, scope).token;
  return () => {
    const r = watchedChanges(w, token, scope, { timeoutMs: 2000 });
    token = r.token;
    return r;
  };
}

async function latency(w: string, col: ReturnType<typeof parcelCollector>, samples: number) {
  const ask = asker(w);
  const info = runningWatchDaemon(w);
  if (info === null) throw new Error("no daemon");
  const journal = join(watchPaths(w).dir, info.journal);
  const client: number[] = [];
  const line: number[] = [];
  const parcelMs: number[] = [];
  for (let i = 0; i < samples; i++) {
    const rel = `${COOKIES}/lat-${i}.txt`;
    col.drain();
    const t0 = performance.now();
    writeFileSync(join(w, rel), "x");
    const heard = col.until(rel).then(() => performance.now() - t0);
    // the journal line, polled (the daemon batches lines per turn of its event loop)
    const needle = JSON.stringify(rel);
    while (!readFileSync(journal, "latin1").includes(needle)) await sleep(0.2);
    line.push(performance.now() - t0);
    parcelMs.push(await heard);
    const t1 = performance.now();
    writeFileSync(join(w, `${rel}.b`), "y");
    const r = ask();
    client.push(performance.now() - t1);
    if (!r.changed?.includes(`${rel}.b`)) throw new Error(`ours missed ${rel}.b: ${r.reason}`);
    await sleep(20);
  }
  return { journalLine: median(line), client: median(client), parcel: median(parcelMs) };
}

/** Reported paths that are neither a changed path nor a directory above one. */
function extra(truth: string[], reported: string[]): number {
  const above = new Set<string>();
  for (const p of truth)
    for (let q = p; q !== ""; q = q.includes("/") ? q.slice(0, q.lastIndexOf("/")) : "")
      above.add(q);
  return reported.filter((p) => !above.has(p)).length;
}

async function exactness(
  w: string,
  col: ReturnType<typeof parcelCollector>,
  rounds: number,
  ops: number,
) {
  const ask = asker(w);
  const tally = {
    truth: 0,
    oursMissed: 0,
    oursExtra: 0,
    parcelMissed: 0,
    parcelExtra: 0,
    sinceMissed: 0,
    sinceMs: [] as number[],
    examples: [] as string[],
  };
  const snap = join(w, "..", "parcel-exact.snapshot");
  const opts = { ignore: [join(w, ".timewarp"), join(w, COOKIES)] };
  for (let r = 0; r < rounds; r++) {
    const before = truthListing(w, SKIP);
    await parcel.writeSnapshot(w, snap, opts);
    col.drain();
    randomOps(w, ops, 7 + r, SKIP);
    const cookie = `${COOKIES}/round-${r}`;
    writeFileSync(join(w, cookie), "");
    await col.until(cookie);
    const oursAnswer = ask();
    const truth = truthChanges(before, truthListing(w, SKIP));
    const reportedParcel = [...col.drain()].filter((p) => !p.startsWith(COOKIES));
    if (oursAnswer.changed === undefined) throw new Error(`ours: unknown (${oursAnswer.reason})`);
    const reportedOurs = oursAnswer.changed.filter((p) => !p.startsWith(COOKIES));
    const t0 = performance.now();
    const since = (await parcel.getEventsSince(w, snap, opts)).map((e) => relativeTo(w, e.path));
    tally.sinceMs.push(performance.now() - t0);
    const m = {
      ours: missed(truth, reportedOurs),
      parcel: missed(truth, reportedParcel),
      since: missed(truth, since),
    };
    tally.truth += truth.length;
    tally.oursMissed += m.ours.length;
    tally.parcelMissed += m.parcel.length;
    tally.sinceMissed += m.since.length;
    tally.oursExtra += extra(truth, reportedOurs);
    tally.parcelExtra += extra(truth, reportedParcel);
    for (const [who, xs] of Object.entries(m))
      for (const p of xs.slice(0, 2)) tally.examples.push(`${who} missed ${p}`);
  }
  return {
    ...tally,
    sinceMs: median(tally.sinceMs),
    parcelErrors: col.errors.length,
    parcelErrorKinds: [...new Set(col.errors)],
  };
}

const f = (n: unknown) => (typeof n === "number" ? n.toFixed(n < 10 ? 1 : 0) : String(n));

function printSummary(out: Record<string, unknown>): void {
  console.log(
    `load average ${out.loadStart} at the start, ${out.loadEnd} at the end, ${out.cpus} CPUs`,
  );
  for (const [k, v] of Object.entries(out)) {
    if (!k.startsWith("startup-")) continue;
    const { tree, ours, parcel: p } = v as Record<string, Record<string, number>>;
    console.log(`\n${k.slice(8)} tree: ${tree?.files} files, ${tree?.dirs} directories`);
    console.log(
      `  ours:   watch start (CLI, until daemon.json) ${f(ours?.startMs)} ms, daemon RSS ${f(ours?.rssMiB)} MiB (peak ${f(ours?.hwmMiB)}), ${ours?.watches} inotify watches`,
    );
    console.log(
      `  parcel: subscribe (in a fresh process) ${f(p?.startMs)} ms, RSS ${f(p?.rssMiB)} MiB, ${p?.watches} inotify watches; writeSnapshot ${f(p?.writeSnapshotMs)} ms, getEventsSince (no change) ${f(p?.sinceMs)} ms`,
    );
  }
  const l = out.latency as Record<string, number> | undefined;
  if (l)
    console.log(
      `\nwrite → report, median: ours journal line ${f(l.journalLine)} ms, ours client answer (cookie round trip) ${f(l.client)} ms; parcel callback ${f(l.parcel)} ms`,
    );
  const e = out.exactness as Record<string, unknown> | undefined;
  if (e)
    console.log(
      `exactness: ${e.truth} changed paths; missed: ours ${e.oursMissed}, parcel subscribe ${e.parcelMissed}, parcel getEventsSince ${e.sinceMissed} (${f(e.sinceMs)} ms each); parcel errors ${e.parcelErrors} ${JSON.stringify(e.parcelErrorKinds)}; over-reported: ours ${e.oursExtra}, parcel ${e.parcelExtra}\n  ${(e.examples as string[]).join("\n  ")}`,
    );
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      size: { type: "string", default: "10k" },
      rounds: { type: "string", default: "20" },
      ops: { type: "string", default: "40" },
      json: { type: "boolean", default: false },
    },
  });
  const sizes = (values.size === "both" ? ["10k", "100k"] : [values.size]) as ("10k" | "100k")[];
  const load = () =>
    loadavg()
      .map((l) => l.toFixed(2))
      .join(" ");
  const out: Record<string, unknown> = { cpus: cpus().length, loadStart: load() };
  const scratch = mkdtempSync(join(process.env.SCALE_BENCH_DIR ?? tmpdir(), "tw-bench-watcher-"));
  try {
    ensureBuilt();
    for (const size of sizes) {
      const w = join(scratch, `w-${size}`);
      spawnSync("cp", ["-a", pristineTree(size), w]);
      const tree = countTree(w);
      out[`startup-${size}`] = { tree, ours: startupOurs(w), parcel: startupParcel(w, scratch) };
      if (size === "10k") {
        mkdirSync(join(w, COOKIES));
        const col = parcelCollector(w);
        const sub = await parcel.subscribe(w, col.onEvents, { ignore: [join(w, ".timewarp")] });
        watchDaemon("start", w);
        try {
          out.latency = await latency(w, col, 20);
          out.exactness = await exactness(w, col, Number(values.rounds), Number(values.ops));
        } finally {
          watchDaemon("stop", w);
          // parcel fails to remove the watches of directories deleted meanwhile (EINVAL)
          await sub.unsubscribe().catch((error: Error) => {
            out.parcelUnsubscribeError = error.message;
          });
        }
      }
      rmSync(w, { recursive: true, force: true });
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  out.loadEnd = load();
  if (values.json) console.log(JSON.stringify(out));
  else printSummary(out);
}

await main();
