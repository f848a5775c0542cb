/**
 * `npx tsx bench/snapshot-tree.ts [--size 10k|100k|both] [--reps N] [--keep] [--work DIR]
 * [--only noop|edit20] [--profile] [--watched]` — issue 22 item 1's
 * targets on the bench:scale real trees (`scale-trees.ts`), in process: a snapshot after 20
 * changed files and one with no change, both by the delta path (the change list given, as the
 * watch daemon would report it), with wall and CPU time (the machine is shared: CPU time is the
 * steadier number), and the bytes one snapshot adds to the store (its record folder plus the
 * manifest nodes it wrote) beside the stat cache's size. `--watched` runs the watch daemon and
 * lets each snapshot ask it for the change list, as bench:scale's row and the hooks do; `watch`
 * is then one more round trip to the daemon, timed alone just before each snapshot. Not a
 * test; never gates.
 */
import { execFileSync } from "node:child_process";
import {
  appendFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { Session } from "node:inspector";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { DEFAULT_EXCLUDES, workspacePaths } from "../src/core/index.ts";
import { createSnapshot, scanScope, watchedChanges } from "../src/store/index.ts";
import { watchDaemon } from "./scale-common.ts";
import { pristineTree } from "./scale-trees.ts";
import { createPrng } from "./snapshot-fixtures.ts";

const args = process.argv.slice(2);
const WATCHED = args.includes("--watched");
if (!WATCHED) process.env.TIMEWARP_WATCH = "0";
const arg = (name: string) => {
  const at = args.indexOf(name);
  return at >= 0 ? args[at + 1] : undefined;
};
const SIZE = arg("--size") ?? "10k";
const REPS = Number(arg("--reps") ?? 7);
const EXCLUDES = [...DEFAULT_EXCLUDES];
const ONLY = arg("--only");
const KINDS = (["noop", "edit20"] as const).filter((k) => ONLY === undefined || k === ONLY);

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? Number.NaN;
};
const load = () =>
  loadavg()
    .map((l) => l.toFixed(1))
    .join(" ");

/** Every regular file's size below `dir`, summed (0 when absent). */
function bytesBelow(dir: string): number {
  if (!existsSync(dir)) return 0;
  let total = 0;
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile()) total += statSync(join(e.parentPath, e.name)).size;
  }
  return total;
}

function filesOf(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile() && !e.parentPath.includes(".timewarp")) {
      out.push(join(e.parentPath, e.name).slice(dir.length + 1));
    }
  }
  return out.sort();
}

/** A copy of the tree with its first snapshot in `work` (kept from an earlier `--work` run). */
function prepare(size: "10k" | "100k", work: string): string[] {
  if (existsSync(join(work, ".timewarp", "stat-cache.bin"))) return filesOf(work);
  let t0 = performance.now();
  if (!existsSync(work)) execFileSync("cp", ["-a", pristineTree(size), work]);
  const files = filesOf(work);
  console.error(`${size}: copied ${files.length} files in ${(performance.now() - t0) / 1000} s`);
  t0 = performance.now();
  createSnapshot(work, { excludes: EXCLUDES });
  console.error(
    `${size}: first snapshot ${Math.round(performance.now() - t0)} ms (load ${load()})`,
  );
  // one delta snapshot so the cache records its manifest file, then the measured ones
  createSnapshot(work, { excludes: EXCLUDES, changed: [] });
  return files;
}

function measure(size: "10k" | "100k"): void {
  const reuse = arg("--work");
  if (reuse !== undefined) mkdirSync(reuse, { recursive: true });
  const scratch =
    reuse ?? mkdtempSync(join(process.env.SCALE_BENCH_DIR ?? tmpdir(), "tw-bench-tree-"));
  const work = join(scratch, reuse === undefined ? "w" : size);
  try {
    const files = prepare(size, work);
    // The copy's gigabyte of dirty pages would otherwise be written back under the records'
    // fsyncs: the measured snapshots start from a clean page cache, as a daemon's would.
    execFileSync("sync");
    const paths = workspacePaths(work);
    if (WATCHED) {
      watchDaemon("start", work);
      // the daemon's first answer is "unknown" (one walk); from then on it answers
      createSnapshot(work, { excludes: EXCLUDES });
      createSnapshot(work, { excludes: EXCLUDES });
    }
    const rnd = createPrng(7);
    const rows: Record<string, { wall: number[]; cpu: number[]; how: string[]; bytes: number[] }> =
      {
        noop: { wall: [], cpu: [], how: [], bytes: [] },
        edit20: { wall: [], cpu: [], how: [], bytes: [] },
      };
    const watchMs: number[] = [];
    const profile = args.includes("--profile") ? new Session() : undefined;
    profile?.connect();
    profile?.post("Profiler.enable");
    profile?.post("Profiler.start");
    for (let r = 0; r < REPS; r++) {
      for (const kind of KINDS) {
        const changed: string[] = [];
        if (kind === "edit20") {
          while (changed.length < 20) {
            const f = files[Math.floor(rnd() * files.length)] as string;
            if (!changed.includes(f)) changed.push(f);
          }
          for (const f of changed) appendFileSync(join(work, f), `// edit ${r}\n`);
        }
        const before = bytesBelow(join(paths.data, "manifests"));
        if (WATCHED) {
          const t0 = performance.now();
          watchedChanges(work, undefined, scanScope(EXCLUDES));
          watchMs.push(performance.now() - t0);
        }
        const cpu0 = process.cpuUsage();
        const w0 = performance.now();
        const result = createSnapshot(work, {
          excludes: EXCLUDES,
          ...(WATCHED ? {} : { changed }),
        });
        const wall = performance.now() - w0;
        const cpu = process.cpuUsage(cpu0);
        const row = rows[kind] as (typeof rows)["noop"];
        row.wall.push(wall);
        row.cpu.push((cpu.user + cpu.system) / 1000);
        row.how.push(result.scan);
        const nodes = bytesBelow(join(paths.data, "manifests")) - before;
        row.bytes.push(bytesBelow(result.dir) + nodes);
        if (process.env.DEBUG_TREE)
          console.error(kind, "record dir", bytesBelow(result.dir), "new nodes", nodes);
      }
    }
    profile?.post("Profiler.stop", (err, res) => {
      if (err === null)
        writeFileSync(`/tmp/snapshot-tree-${size}.cpuprofile`, JSON.stringify(res.profile));
    });
    if (WATCHED) watchDaemon("stop", work);
    const cache = statSync(paths.statCache).size;
    if (WATCHED) console.log(`${size} watch round trip ${median(watchMs).toFixed(1)} ms (median)`);
    for (const [kind, row] of Object.entries(rows)) {
      if (row.wall.length === 0) continue;
      console.log(
        `${size} ${kind.padEnd(6)} wall ${median(row.wall).toFixed(1)} ms  cpu ${median(row.cpu).toFixed(1)} ms  ` +
          `record+nodes ${(median(row.bytes) / 1024).toFixed(1)} KiB  scan ${[...new Set(row.how)].join(",")}  ` +
          `stat cache ${(cache / 1024 / 1024).toFixed(1)} MiB  load ${load()}`,
      );
    }
    writeFileSync(join(scratch, "done"), "");
  } finally {
    if (!args.includes("--keep") && reuse === undefined)
      rmSync(scratch, { recursive: true, force: true });
  }
}

for (const size of SIZE === "both" ? (["10k", "100k"] as const) : [SIZE as "10k" | "100k"]) {
  measure(size);
}
