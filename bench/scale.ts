/**
 * `npm run bench:scale [-- --size 10k|100k|both] [--rows a,b] [--reps N] [--json]` — the table
 * of issue 22 on real trees: popular npm packages packed with `npm pack` into
 * ~/.cache/timewarp-bench (`TIMEWARP_BENCH_CACHE`; kept between runs) and extracted with tar
 * (bench/scale-trees.ts): ~10,400 files / ~56 MB, and ten copies of it for 100k. Each row prints
 * timewarp beside git where git has a counterpart: medians, the ratio, peak RSS.
 *
 * Rows (`--rows`): snapshot20, record, noop-cli, return, store, rss (per size); diff, ledger (once).
 * Only the public library (src/<cap>/index.ts) and the built CLI (bin/timewarp, the launcher the
 * install wires, over bin/timewarp.cjs, built first with `npm run build --silent`;
 * `SCALE_BENCH_NO_BUILD=1` skips that) are used, so the store's
 * and the diff engine's owners can re-run it after their changes. Scratch copies go to the temp
 * dir (`SCALE_BENCH_DIR`): about 4 copies of the tree per size (~2.3 GB at 100k). Not a test.
 */
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { ensureBuilt, type ScaleRow } from "./scale-common.ts";
import { diffRows, ledgerRows } from "./scale-fixed-rows.ts";
import { treeRows } from "./scale-tree-rows.ts";
import { countTree, PACKAGES, pristineTree } from "./scale-trees.ts";

const ROWS = ["snapshot20", "record", "noop-cli", "return", "store", "rss", "diff", "ledger"];

function options() {
  const { values } = parseArgs({
    options: {
      size: { type: "string", default: "10k" },
      rows: { type: "string", default: ROWS.join(",") },
      reps: { type: "string", default: "5" },
      json: { type: "boolean", default: false },
    },
  });
  const sizes = values.size === "both" ? ["10k", "100k"] : [values.size];
  for (const s of sizes)
    if (s !== "10k" && s !== "100k") throw new Error(`--size ${s}: 10k, 100k or both`);
  const rows = new Set(values.rows.split(",").filter(Boolean));
  for (const r of rows)
    if (!ROWS.includes(r)) throw new Error(`--rows ${r}: one of ${ROWS.join(", ")}`);
  return { sizes: sizes as ("10k" | "100k")[], rows, reps: Number(values.reps), json: values.json };
}

const load = () =>
  `load average ${loadavg()
    .map((l) => l.toFixed(2))
    .join(" ")} on ${cpus().length} CPUs`;

function cell(v: number | null, unit: "ms" | "bytes"): string {
  if (v === null) return "—";
  if (unit === "bytes")
    return v >= 1024 * 1024
      ? `${(v / 1024 / 1024).toFixed(1)} MiB`
      : `${(v / 1024).toFixed(1)} KiB`;
  return `${v.toFixed(v < 10 ? 1 : 0)} ms`;
}

function print(rows: ScaleRow[]): void {
  const table = rows.map((r) => [
    r.size,
    r.what,
    cell(r.tw, r.unit),
    cell(r.git, r.unit),
    r.tw !== null && r.git !== null ? `${(r.tw / r.git).toFixed(2)}x` : "",
    r.twRssMiB ? `${r.twRssMiB.toFixed(0)}` : "",
    r.gitRssMiB ? `${r.gitRssMiB.toFixed(0)}` : "",
    r.gitCmd,
  ]);
  const head = [
    "size",
    "measured (median)",
    "timewarp",
    "git",
    "tw/git",
    "tw RSS MiB",
    "git RSS MiB",
    "git command",
  ];
  const w = head.map((h, i) => Math.max(h.length, ...table.map((r) => (r[i] ?? "").length)));
  const line = (r: string[]) =>
    r.map((c, i) => (i < 2 || i === 7 ? c.padEnd(w[i] ?? 0) : c.padStart(w[i] ?? 0))).join("  ");
  console.log(line(head));
  for (const [i, r] of table.entries()) {
    console.log(line(r));
    const note = rows[i]?.note;
    if (note) console.log(`${"".padEnd((w[0] ?? 0) + 2)}  ${note}`);
  }
}

async function main(): Promise<void> {
  const o = options();
  const want = (r: string) => o.rows.has(r);
  const scratch = mkdtempSync(join(process.env.SCALE_BENCH_DIR ?? tmpdir(), "tw-bench-scale-"));
  const rows: ScaleRow[] = [];
  // each row also goes to stderr as it is measured: a long 100k run stopped early keeps them
  const log = (r: ScaleRow) => process.stderr.write(`row ${JSON.stringify(r)}\n`);
  const push = (xs: ScaleRow[]) => {
    xs.forEach(log);
    rows.push(...xs);
  };
  const trees: Record<string, { files: number; bytes: number; dirs: number }> = {};
  const startLoad = load();
  try {
    ensureBuilt();
    const tree10k = pristineTree("10k");
    for (const size of o.sizes) {
      const pristine = pristineTree(size);
      trees[size] = countTree(pristine);
      process.stderr.write(`${size}: ${JSON.stringify(trees[size])} (${load()})\n`);
      const files = trees[size].files;
      rows.push(
        ...(await treeRows({ size, pristine, scratch, reps: o.reps, files, want, onRow: log })),
      );
      // (the next size and rows copy into it again: empty it, keep it)
      rmSync(scratch, { recursive: true, force: true });
      mkdirSync(scratch);
    }
    if (want("diff")) push(diffRows({ tree10k, scratch, reps: o.reps }));
    if (want("ledger")) push(await ledgerRows({ scratch, reps: o.reps }));
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  const endLoad = load();
  if (o.json) {
    console.log(
      JSON.stringify({
        packages: PACKAGES,
        trees,
        reps: o.reps,
        load: { start: startLoad, end: endLoad },
        rows,
      }),
    );
    return;
  }
  console.log(
    `trees: ${Object.entries(trees)
      .map(([s, t]) => `${s} = ${t.files} files, ${(t.bytes / 1e6).toFixed(1)} MB, ${t.dirs} dirs`)
      .join("; ")}`,
  );
  console.log(`${o.reps} repetitions; ${startLoad} at the start, ${endLoad} at the end\n`);
  print(rows);
}

await main();
