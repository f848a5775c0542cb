/**
 * createFilePatch beside `git diff --no-index` on the cases (issue 22 item 3): lodash.js
 * and typescript.js with every other line changed, realistic edits of real code, a 100k-line
 * synthetic file, a 4.7 MB binary with 100 bytes changed; then smaller synthetic cases.
 *
 *   npm run bench:diff            full size
 *   npm run bench:diff -- 0.1     a tenth of the synthetic lines, no real files (a quick check)
 *   BENCH_REPS=11 npm run bench:diff
 *   BENCH_ONLY=lodash,typescript npm run bench:diff   only the cases whose names contain these
 *
 * Per case: our median in-process (the ledger's path: the edit's process makes the patch),
 * its median CPU time per run, and our whole process (`bench/diff-process.mjs`: Node's start, the built
 * library's load, the patch to stdout; needs `npm run build`); git's whole process (median wall,
 * and CPU per run from 10+ runs timed in one loop: finer than /usr/bin/time's 10 ms); the ratio
 * of our in-process median to git's whole process, in wall and in CPU time; peak RSS of both
 * processes; the patch's hunk bytes (from the first `@@`, function names included) of ours,
 * git's default (Myers) and `git diff --histogram` (whose anchoring our default follows; it is
 * skipped where git takes over 30 s). The target is against git's default, as in the issue's
 * table. lodash.js comes from BENCH_LODASH, node_modules or the tree `npm run bench:scale`
 * builds; the row is left out without it.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { homedir, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { createFilePatch, reversePatchText } from "../src/diff/index.ts";
import { realisticEdit } from "../test/helpers/realistic-edit.ts";
import { binaryPair, literalPairBytes } from "./diff-binary.ts";

const scale = Number(process.argv[2] ?? process.env.BENCH_SCALE ?? 1);
const reps = Number(process.env.BENCH_REPS ?? 7);
const dir = mkdtempSync(join(tmpdir(), "tw-bench-diff-"));
const processScript = join(import.meta.dirname, "diff-process.mjs");
const built = existsSync(join(import.meta.dirname, "..", "dist", "diff", "index.js"));

interface Case {
  name: string;
  a: Buffer;
  b: Buffer;
  binary?: boolean;
}

function line(i: number, tag = "value"): string {
  return `  const ${tag}${i} = compute(${i}, "${((i * 2654435761) >>> 0).toString(16)}"); // line ${i}\n`;
}
function file(n: number, changed: (i: number) => boolean): Buffer {
  const parts: string[] = [];
  for (let i = 0; i < n; i++) parts.push(line(i, changed(i) ? "changed" : "value"));
  return Buffer.from(parts.join(""));
}
function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? Number.NaN;
}
function everyOther(buf: Buffer): Buffer {
  const ls = buf.toString().split("\n");
  return Buffer.from(ls.map((l, i) => (i % 2 ? `${l} //x` : l)).join("\n"));
}
/** Blocks deleted, a function inserted, lines rewritten: about 0.6% of the lines. */
function realistic(buf: Buffer): Buffer {
  return Buffer.from(realisticEdit(buf.toString(), 7));
}

function lodashPath(): string | undefined {
  const candidates = [
    process.env.BENCH_LODASH,
    join(import.meta.dirname, "..", "node_modules", "lodash", "lodash.js"),
    join(homedir(), ".cache", "timewarp-bench", "tree-10k", "lodash", "lodash.js"),
  ];
  return candidates.find((p) => p !== undefined && existsSync(p));
}

function realCases(): Case[] {
  if (scale < 1) return [];
  const tsLib = dirname(createRequire(import.meta.url).resolve("typescript"));
  const lib = (f: string) => readFileSync(join(tsLib, f));
  const lodash = lodashPath();
  const out: Case[] = [];
  if (lodash !== undefined) {
    const a = readFileSync(lodash);
    out.push({ name: "lodash.js, every other line", a, b: everyOther(a) });
  } else console.log("lodash.js not found (BENCH_LODASH, or npm run bench:scale): row left out");
  const ts = lib("typescript.js");
  const dom = lib("lib.dom.d.ts");
  out.push(
    { name: "typescript.js, every other line", a: ts, b: everyOther(ts) },
    { name: "lib.dom.d.ts, every other line", a: dom, b: everyOther(dom) },
    { name: "typescript.js, realistic edits", a: ts, b: realistic(ts) },
    { name: "lib.dom.d.ts, realistic edits", a: dom, b: realistic(dom) },
  );
  return out;
}

function syntheticCases(): Case[] {
  const n10k = Math.max(10, Math.round(10_000 * scale));
  const n100k = Math.max(100, Math.round(100_000 * scale));
  return [
    {
      name: `${n100k} lines, 100 changed`,
      a: file(n100k, () => false),
      b: file(n100k, (i) => i % Math.floor(n100k / 100) === 7),
    },
    {
      name: `${n10k} lines, 10 changed`,
      a: file(n10k, () => false),
      b: file(n10k, (i) => i % Math.floor(n10k / 10) === 5),
    },
    {
      name: `${n10k} lines, every other changed`,
      a: file(n10k, () => false),
      b: file(n10k, (i) => i % 2 === 1),
    },
    {
      name: `${n10k} lines, fully rewritten`,
      a: file(n10k, () => false),
      b: file(n10k, () => true),
    },
  ];
}

/** Wall time, CPU time and peak RSS of one child, from /usr/bin/time around it. */
function runChild(args: string[], timeoutMs = 120_000): Child {
  const t0 = performance.now();
  const r = spawnSync("/usr/bin/time", ["-f", "%U %S %M", ...args], {
    maxBuffer: 1 << 30,
    timeout: timeoutMs,
  });
  const ms = performance.now() - t0;
  if (r.error !== undefined || r.signal !== null)
    return { ms: Number.NaN, cpuMs: 0, rssMiB: 0, out: Buffer.alloc(0) };
  const [u = 0, s = 0, rss = 0] = (r.stderr.toString().trim().split("\n").pop() ?? "")
    .split(" ")
    .map(Number);
  return { ms, cpuMs: (u + s) * 1000, rssMiB: rss / 1024, out: r.stdout };
}
interface Child {
  ms: number;
  cpuMs: number;
  rssMiB: number;
  out: Buffer;
}
/**
 * git's CPU per run, finer than /usr/bin/time's 10 ms per process: `n` runs in one shell loop,
 * timed together, divided by n.
 */
function loopCpuMs(args: string[], n: number): number {
  const quoted = args.map((a) => `'${a.replaceAll("'", "'\\''")}'`).join(" ");
  const r = spawnSync(
    "/usr/bin/time",
    ["-f", "%U %S", "sh", "-c", `for i in $(seq ${n}); do ${quoted} >/dev/null; done`],
    { encoding: "utf8" },
  );
  const [u = 0, s = 0] = (r.stderr.trim().split("\n").pop() ?? "").split(" ").map(Number);
  return ((u + s) * 1000) / n;
}

/** Median wall and CPU of `reps` runs of a child, with the last run's peak RSS and output. */
function medianChild(args: string[], n: number): Child {
  const runs = Array.from({ length: n }, () => runChild(args));
  const last = runs[runs.length - 1] as Child;
  return {
    ms: median(runs.map((r) => r.ms)),
    cpuMs: median(runs.map((r) => r.cpuMs)),
    rssMiB: last.rssMiB,
    out: last.out,
  };
}

/** The hunks of a patch, from its first `@@`. */
function hunkBytes(patch: Buffer | string): number {
  const b = Buffer.isBuffer(patch) ? patch : Buffer.from(patch);
  const at = b.indexOf("\n@@");
  return at === -1 ? b.length : b.length - at - 1;
}

/**
 * Our in-process run: the median wall and the median CPU per run (process.cpuUsage around
 * each), after three warm-up runs (the JIT's tiers; a small file's first run costs more).
 */
function ours(c: Case): { ms: number; cpuMs: number; patch: string } {
  const make = () => createFilePatch({ oldPath: "f", newPath: "f", before: c.a, after: c.b });
  let patch = make();
  for (let i = 0; i < 2; i++) make();
  const times: number[] = [];
  const cpus: number[] = [];
  for (let i = 0; i < reps; i++) {
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    patch = make();
    times.push(performance.now() - t0);
    const cu = process.cpuUsage(c0);
    cpus.push((cu.user + cu.system) / 1000);
  }
  return { ms: median(times), cpuMs: median(cpus), patch };
}

function row(c: Case): string[] {
  const fa = join(dir, "a");
  const fb = join(dir, "b");
  writeFileSync(fa, c.a);
  writeFileSync(fb, c.b);
  const flags = ["--no-index", "--no-color", "--full-index", ...(c.binary ? ["--binary"] : [])];
  runChild(["git", "diff", ...flags, fa, fb]); // warms the page cache
  const git = medianChild(["git", "diff", ...flags, fa, fb], reps);
  const gitLoopCpu = loopCpuMs(["git", "diff", ...flags, fa, fb], Math.max(reps, 10));
  const hist = c.binary
    ? undefined
    : runChild(["git", "diff", ...flags, "--histogram", fa, fb], 30_000);
  const us = ours(c);
  const proc = built ? medianChild([process.execPath, processScript, fa, fb], reps) : undefined;
  const f = (x: number | undefined, d = 1) =>
    x === undefined || Number.isNaN(x) ? "-" : x.toFixed(d);
  return [
    c.name,
    f(us.ms),
    f(us.cpuMs),
    f(proc?.ms),
    f(git.ms),
    f(gitLoopCpu),
    f(us.ms / git.ms, 2),
    f(us.cpuMs / gitLoopCpu, 2),
    f(proc?.rssMiB, 0),
    f(git.rssMiB, 0),
    String(hunkBytes(us.patch)),
    String(hunkBytes(git.out)),
    hist === undefined ? "-" : Number.isNaN(hist.ms) ? ">30000" : f(hist.ms),
    hist === undefined || Number.isNaN(hist.ms) ? "-" : String(hunkBytes(hist.out)),
  ];
}

const header = [
  "case",
  "ours ms",
  "ours cpu",
  "ours proc ms",
  "git ms",
  "git cpu",
  "ours/git",
  "cpu ratio",
  "ours RSS MiB",
  "git RSS MiB",
  "ours hunk B",
  "git hunk B",
  "git hist ms",
  "hist hunk B",
];
function printTable(rows: string[][]): void {
  const w = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const fmt = (r: string[]) =>
    r.map((c, i) => (i === 0 ? c.padEnd(w[i] ?? 0) : c.padStart(w[i] ?? 0))).join("  ");
  console.log(fmt(header));
  for (const r of rows) console.log(fmt(r));
}

const binary = binaryPair();
const only = process.env.BENCH_ONLY?.split(",");
const cases: Case[] = [
  ...realCases(),
  ...syntheticCases(),
  {
    name: `binary ${(binary.a.length / 1e6).toFixed(1)} MB, 100 B changed`,
    ...binary,
    binary: true,
  },
].filter((c) => only === undefined || only.some((o) => c.name.includes(o)));
const load = () => spawnSync("uptime", { encoding: "utf8" }).stdout.trim();
console.log(`load before: ${load()}`);
const gitStart = medianChild(["git", "--version"], reps);
console.log(
  `median of ${reps}; git --version takes ${gitStart.ms.toFixed(1)} ms wall, ${gitStart.cpuMs.toFixed(1)} ms CPU; ` +
    `ours/git = our in-process median over git's whole process (wall); cpu ratio = our in-process CPU per run over git's whole-process CPU per run (10+ runs in one loop)${built ? "" : "; no build: run npm run build for the ours-process column"}`,
);
const rows: string[][] = [];
for (const c of cases) {
  rows.push(row(c));
  console.log(`  ${c.name} done`);
}
printTable(rows);
console.log(
  `binary source: ${binary.from}; the literal pair written before deltas was ${literalPairBytes(binary.a, binary.b)} bytes`,
);

// One edit in a 1 MB file: create the diff and its reverse (the ledger records both).
const big = file(Math.round((1_000_000 / line(500).length) * Math.min(scale, 1)), () => false);
const mid = big.indexOf("value500 ");
const bigEdited = Buffer.concat([big.subarray(0, mid), Buffer.from("EDITED"), big.subarray(mid)]);
const oneEdit = median(
  Array.from({ length: Math.max(reps, 11) }, () => {
    const t0 = performance.now();
    reversePatchText(
      createFilePatch({ oldPath: "big.txt", newPath: "big.txt", before: big, after: bigEdited }),
    );
    return performance.now() - t0;
  }),
);
console.log(
  `one edit in a ${(big.length / 1e6).toFixed(2)} MB file, diff + reverse: ${oneEdit.toFixed(2)} ms median (target <= 10 ms)`,
);
console.log(`load after: ${load()}`);
rmSync(dir, { recursive: true, force: true });
