/**
 * createFilePatch (in process) side by side with `git diff --no-index` (child process) on the
 * same files (text cases, then a changed binary from bench/diff-binary.ts): median wall time
 * over repetitions, git's time minus a `git --version` baseline (its process start), peak RSS
 * of both, and the cost of diff + reverse for one edit in 1 MB.
 *
 *   npm run bench:diff            full size
 *   npm run bench:diff -- 0.1     a tenth of the lines (quick check while developing)
 *   BENCH_REPS=11 npm run bench:diff
 *
 * Besides the synthetic cases, real code from node_modules (issue 22): TypeScript's
 * typescript.js (9 MB) and lib.dom.d.ts, with every other line changed and with realistic
 * edits, against plain `git diff` (Myers) and `git diff --histogram`. Patch sizes compare the
 * hunks only (from the first `@@`, without the function name git writes after it).
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { createFilePatch, reversePatchText } from "../src/diff/index.ts";
import { realisticEdit } from "../test/helpers/realistic-edit.ts";
import { benchBinary } from "./diff-binary.ts";

const scale = Number(process.argv[2] ?? process.env.BENCH_SCALE ?? 1);
const reps = Number(process.env.BENCH_REPS ?? 7);
const dir = mkdtempSync(join(tmpdir(), "tw-bench-diff-"));

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
const n10k = Math.max(10, Math.round(10_000 * scale));
const n100k = Math.max(100, Math.round(100_000 * scale));
const tsLib = dirname(createRequire(import.meta.url).resolve("typescript"));
function everyOther(buf: Buffer): Buffer {
  const ls = buf.toString().split("\n");
  return Buffer.from(ls.map((l, i) => (i % 2 ? `${l} //x` : l)).join("\n"));
}
/** Blocks deleted, a function inserted, lines rewritten: about 0.6% of the lines. */
function realistic(buf: Buffer): Buffer {
  return Buffer.from(realisticEdit(buf.toString(), 7));
}
const realCases =
  scale < 1
    ? []
    : ["lib.dom.d.ts", "typescript.js"].flatMap((f) => {
        const a = readFileSync(join(tsLib, f));
        return [
          { name: `${f}, every other line`, a, b: everyOther(a) },
          { name: `${f}, realistic edits`, a, b: realistic(a) },
        ];
      });
const cases: { name: string; a: Buffer; b: Buffer }[] = [
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
  { name: `${n10k} lines, fully rewritten`, a: file(n10k, () => false), b: file(n10k, () => true) },
  {
    name: `${n100k} lines, 100 changed`,
    a: file(n100k, () => false),
    b: file(n100k, (i) => i % Math.floor(n100k / 100) === 7),
  },
  ...realCases,
];

/** Wall time and peak RSS (KiB) of one child, measured by /usr/bin/time around it. */
function runChild(args: string[]): { ms: number; rssKiB: number } {
  const t0 = performance.now();
  const r = spawnSync("/usr/bin/time", ["-f", "%M", ...args], {
    encoding: "utf8",
    maxBuffer: 1 << 30,
  });
  const ms = performance.now() - t0;
  const rss = Number(r.stderr.trim().split("\n").pop());
  return { ms, rssKiB: rss };
}
/**
 * CPU time (user + system) of one git run, averaged over a shell loop of `n` runs under
 * /usr/bin/time: unlike wall time, it does not depend on how busy the machine is.
 */
function gitCpuMs(args: string[], n: number): number {
  const r = spawnSync(
    "/usr/bin/time",
    [
      "-f",
      "%U %S",
      "sh",
      "-c",
      `i=0; while [ $i -lt ${n} ]; do git "$@" >/dev/null; i=$((i+1)); done`,
      "sh",
      ...args,
    ],
    { encoding: "utf8" },
  );
  const [u = 0, s = 0] = (r.stderr.trim().split("\n").pop() ?? "").split(" ").map(Number);
  return ((u + s) * 1000) / n;
}
/** The hunks of a patch: from the first `@@`, without git's function name after `@@ … @@`. */
function hunkBytes(patch: string): number {
  const at = patch.indexOf("\n@@");
  if (at === -1) return 0;
  return Buffer.byteLength(patch.slice(at + 1).replace(/^(@@ [^@]* @@).*$/gm, "$1"));
}
function runGit(args: string[]): { ms: number; rssKiB: number; hunks: number } {
  const t0 = performance.now();
  const r = spawnSync("git", args, { encoding: "utf8", maxBuffer: 1 << 30 });
  if (r.status !== 0 && r.status !== 1) throw new Error(`git ${args.join(" ")}: ${r.stderr}`);
  return { ms: performance.now() - t0, rssKiB: 0, hunks: hunkBytes(r.stdout) };
}
/** `git diff --histogram` is quadratic on some inputs (seconds): one run when it is slow. */
function histogramMs(args: string[]): { ms: number; hunks: number } {
  const first = runGit(args);
  if (first.ms > 1000) return first;
  return { ms: median(Array.from({ length: reps }, () => runGit(args).ms)), hunks: first.hunks };
}

const gitVersion = median(Array.from({ length: reps }, () => runGit(["--version"]).ms));
const cpuLoops = Math.max(10, reps * 3);
const gitVersionCpu = gitCpuMs(["--version"], cpuLoops);
const cpuRows: string[][] = [];
const rows: string[][] = [];
for (const c of cases) {
  const fa = join(dir, "a.txt");
  const fb = join(dir, "b.txt");
  writeFileSync(fa, c.a);
  writeFileSync(fb, c.b);
  const gitArgs = ["diff", "--no-index", "--no-color", "--full-index", fa, fb];
  const gitHunks = runGit(gitArgs).hunks; // also warms the page cache
  const gitMs = median(Array.from({ length: reps }, () => runGit(gitArgs).ms));
  const hist = histogramMs([
    "diff",
    "--no-index",
    "--no-color",
    "--full-index",
    "--histogram",
    fa,
    fb,
  ]);
  const gitRss = runChild(["git", ...gitArgs]).rssKiB;
  let size = 0;
  let patchText = "";
  createFilePatch({ oldPath: "a.txt", newPath: "a.txt", before: c.a, after: c.b }); // warm the JIT
  const ours = median(
    Array.from({ length: reps }, () => {
      const t0 = performance.now();
      patchText = createFilePatch({ oldPath: "a.txt", newPath: "a.txt", before: c.a, after: c.b });
      size = patchText.length;
      return performance.now() - t0;
    }),
  );
  const netGit = Math.max(gitMs - gitVersion, 0.01);
  const gitCpu = gitCpuMs(gitArgs, cpuLoops);
  const c0 = process.cpuUsage();
  for (let i = 0; i < cpuLoops; i++)
    createFilePatch({ oldPath: "a.txt", newPath: "a.txt", before: c.a, after: c.b });
  const cu = process.cpuUsage(c0);
  const ourCpu = (cu.user + cu.system) / 1000 / cpuLoops;
  const netGitCpu = Math.max(gitCpu - gitVersionCpu, 0.01);
  cpuRows.push([
    c.name,
    ourCpu.toFixed(2),
    gitCpu.toFixed(2),
    netGitCpu.toFixed(2),
    (ourCpu / gitCpu).toFixed(2),
    (ourCpu / netGitCpu).toFixed(2),
  ]);
  rows.push([
    c.name,
    ours.toFixed(2),
    gitMs.toFixed(2),
    netGit.toFixed(2),
    (ours / gitMs).toFixed(2),
    (ours / netGit).toFixed(2),
    String(Math.round(process.resourceUsage().maxRSS / 1024)),
    String(Math.round(gitRss / 1024)),
    String(size),
    hist.ms.toFixed(2),
    (ours / hist.ms).toFixed(2),
    String(hunkBytes(patchText)),
    String(gitHunks),
    String(hist.hunks),
  ]);
}

// One edit in a 1 MB file: create the diff and its reverse.
const big = file(Math.round((1_000_000 / line(500).length) * Math.min(scale, 1)), () => false);
const mid = big.indexOf("value500 ");
const bigEdited = Buffer.concat([big.subarray(0, mid), Buffer.from("EDITED"), big.subarray(mid)]);
const oneEdit = median(
  Array.from({ length: Math.max(reps, 11) }, () => {
    const t0 = performance.now();
    const fwd = createFilePatch({
      oldPath: "big.txt",
      newPath: "big.txt",
      before: big,
      after: bigEdited,
    });
    reversePatchText(fwd);
    return performance.now() - t0;
  }),
);

const oc0 = process.cpuUsage();
const oneEditRuns = Math.max(reps, 11);
for (let i = 0; i < oneEditRuns; i++) {
  reversePatchText(
    createFilePatch({ oldPath: "big.txt", newPath: "big.txt", before: big, after: bigEdited }),
  );
}
const ocu = process.cpuUsage(oc0);
const oneEditCpu = (ocu.user + ocu.system) / 1000 / oneEditRuns;

const header = [
  "case",
  "ours ms",
  "git ms",
  "git-start ms",
  "ours/git",
  "ours/(git-start)",
  "our RSS MiB",
  "git RSS MiB",
  "patch bytes",
  "git --histogram ms",
  "ours/hist",
  "our hunk bytes",
  "git hunk bytes",
  "hist hunk bytes",
];
const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
const fmt = (r: string[]) =>
  r.map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join("  ");
console.log(
  `createFilePatch vs git diff --no-index (median of ${reps}; git --version baseline ${gitVersion.toFixed(2)} ms)`,
);
console.log(fmt(header));
for (const r of rows) console.log(fmt(r));
const cpuHeader = [
  "case",
  "ours cpu ms",
  "git cpu ms",
  "git-start cpu ms",
  "ours/git",
  "ours/(git-start)",
];
const cw = cpuHeader.map((h, i) => Math.max(h.length, ...cpuRows.map((r) => (r[i] ?? "").length)));
const cfmt = (r: string[]) =>
  r.map((c, i) => (i === 0 ? c.padEnd(cw[i] ?? 0) : c.padStart(cw[i] ?? 0))).join("  ");
console.log(
  `\nCPU time (user+sys, mean of ${cpuLoops}; git --version baseline ${gitVersionCpu.toFixed(2)} ms): not skewed by a busy machine`,
);
console.log(cfmt(cpuHeader));
for (const r of cpuRows) console.log(cfmt(r));
console.log(
  `\none edit in a ${(big.length / 1e6).toFixed(2)} MB file, diff + reverse: ${oneEdit.toFixed(2)} ms median wall, ${oneEditCpu.toFixed(2)} ms CPU (target <= 10 ms)`,
);
console.log(`\n${benchBinary(dir, reps, gitVersion).join("\n")}`);
console.log(`peak RSS of this process: ${Math.round(process.resourceUsage().maxRSS / 1024)} MiB`);
rmSync(dir, { recursive: true, force: true });
