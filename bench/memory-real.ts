/**
 * The memory chain on real public agent runs (issue 18, items 6–7), per trajectory format:
 *
 *   edits       the edit events found per run against the files of the run's final patch
 *               (recall: patch files found; precision: edit events that are patch files)
 *   tests       test events (a runner's command; not a run of the run's own scratch script), and
 *               those with a known result (pass/fail counts or an exit code)
 *   drift       runs whose final patch breaks the task's rules (labels.json from facts) and
 *               whether a guard fired (warn or rollback) on one of those files
 *   cards       the card verdict (summarizeGuards(...).successful, as `memory eval` decides it)
 *               against the real outcome (SWE-bench's report.json): distilled/not × resolved/unresolved
 *
 *   npm run fetch:trajectories -- --from /path/to/mirrors      (once; see scripts/fetch-trajectories.ts)
 *   npm run bench:memory -- --real ~/.cache/timewarp/trajectories [--legacy] [--limit N] [--keep DIR]
 *
 *   --legacy   write each run as the issue's reporter did (raw/cursor.md + patch.diff + term.log,
 *              no trajectory.jsonl): the "before" table with main's extractor
 *   --limit N  at most N runs per format (in manifest order)
 *   --keep DIR write the run directories there (for `memory eval DIR`) instead of a temp dir
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { withRunBaseline } from "../src/memory/baseline.ts";
import type { RunLabels } from "../src/memory/eval.ts";
import { extractRunEvents } from "../src/memory/extract-events.ts";
import { compileGoal, readGoal } from "../src/memory/goal.ts";
import { pathOfWhere, runGuards, summarizeGuards } from "../src/memory/guards.ts";
import { IMPORTERS as ALL_IMPORTERS } from "../src/memory/import-formats.ts";
import type { TrajectoryImporter } from "../src/memory/trajectory.ts";
import { type RunLayout, writeCursorRunDir, writeRunDir } from "./real-runs.ts";

interface ManifestFile {
  format: string;
  kind: string;
  repo: string;
  commit: string;
  path: string;
  file: string;
  license: string;
}

const IMPORTERS: Record<string, TrajectoryImporter> = Object.fromEntries(
  ALL_IMPORTERS.map((i) => [i.format, i]),
);

interface RunRow {
  format: string;
  id: string;
  events: number;
  patchFiles: number;
  editFiles: number;
  editHits: number;
  tests: number;
  testsKnown: number;
  driftLabelled: boolean;
  driftCaught: boolean;
  alarmWithoutDrift: boolean;
  distilled: boolean;
  outcome: NonNullable<RunLabels["outcome"]>;
  ms: number;
  error?: string;
}

const median = (xs: number[]) =>
  xs.length === 0 ? Number.NaN : ([...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0);
const pct = (xs: number[], p: number) =>
  xs.length === 0
    ? Number.NaN
    : ([...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))] ?? 0);
const ratio = (a: number, b: number) => (b === 0 ? "n/a" : (a / b).toFixed(2));
const share = (a: number, b: number) => (b === 0 ? "n/a" : `${((100 * a) / b).toFixed(1)} %`);

/** A path as the extractor or the patch names it, compared without `./`, `a/`/`b/` or a container work tree. */
function norm(p: string): string {
  return p
    .replace(/^\.\//, "")
    .replace(/^\/testbed\//, "")
    .replace(/^[ab]\//, "");
}

async function measure(
  dir: string,
  format: string,
  id: string,
  labels: RunLabels,
): Promise<RunRow> {
  const t0 = performance.now();
  const read = readGoal(join(dir, "goal.json"));
  const goal = withRunBaseline(dir, read.goal).goal;
  const { events } = await extractRunEvents(dir, { write: false });
  const compiled = compileGoal(goal);
  const records = runGuards(compiled, events, { gitWorkTree: true });
  const summary = summarizeGuards(goal, events, records);
  const ms = performance.now() - t0;
  const patch = new Set((labels.patch_files ?? []).map(norm));
  const drift = new Set(labels.drift_files.map(norm));
  const edits = new Set<string>();
  let driftCaught = false;
  let alarm = false;
  for (const r of records) {
    const e = events[r.step];
    if (e?.tool !== "edit") continue;
    const p = norm(pathOfWhere(e.where) ?? "");
    if (p !== "") edits.add(p);
    if (r.action !== "ok") {
      if (drift.has(p)) driftCaught = true;
      alarm = true;
    }
  }
  // a run of a script the run wrote itself is a reproduction, not a test (framework "script")
  const tests = events.filter((e) => e.tool === "shell" && e.result?.framework !== "script");
  const known = tests.filter(
    (e) =>
      e.result !== undefined &&
      (e.result.passed + e.result.failed > 0 || e.result.exit_code !== null),
  );
  return {
    format,
    id,
    events: events.length,
    patchFiles: patch.size,
    editFiles: edits.size,
    editHits: [...edits].filter((p) => patch.has(p)).length,
    tests: tests.length,
    testsKnown: known.length,
    driftLabelled: drift.size > 0,
    driftCaught,
    alarmWithoutDrift: drift.size === 0 && alarm,
    distilled: summary.successful,
    outcome: labels.outcome ?? "unknown",
    ms,
  };
}

function report(format: string, rows: RunRow[], layout: RunLayout): string[] {
  const ok = rows.filter((r) => r.error === undefined);
  const withPatch = ok.filter((r) => r.patchFiles > 0);
  const hits = withPatch.reduce((s, r) => s + r.editHits, 0);
  const patchFiles = withPatch.reduce((s, r) => s + r.patchFiles, 0);
  const editFiles = withPatch.reduce((s, r) => s + r.editFiles, 0);
  const tests = ok.reduce((s, r) => s + r.tests, 0);
  const known = ok.reduce((s, r) => s + r.testsKnown, 0);
  const cell = (d: boolean, o: string) =>
    ok.filter((r) => r.distilled === d && r.outcome === o).length;
  const lines = [
    `\n## ${format}: ${ok.length} runs (${layout} layout)${rows.length > ok.length ? `, ${rows.length - ok.length} failed` : ""}`,
    `  events per run              median ${median(ok.map((r) => r.events))}  p95 ${pct(
      ok.map((r) => r.events),
      0.95,
    )}`,
    `  edits vs final patch        recall ${ratio(hits, patchFiles)} (${hits}/${patchFiles} patch files found)  precision ${ratio(hits, editFiles)} (${hits}/${editFiles} edited files in the patch)  over ${withPatch.length} runs with a patch`,
    `                              per run: median recall ${median(withPatch.map((r) => r.editHits / r.patchFiles)).toFixed(2)}, median precision ${median(
      withPatch.filter((r) => r.editFiles > 0).map((r) => r.editHits / r.editFiles),
    ).toFixed(2)}; runs with no edit event ${withPatch.filter((r) => r.editFiles === 0).length}`,
    `  test events                 ${tests} in ${ok.filter((r) => r.tests > 0).length}/${ok.length} runs; with a known result ${known} (${share(known, tests)})`,
    `  drift (patch vs task rules) ${ok.filter((r) => r.driftLabelled).length} runs labelled; a guard fired on the labelled file in ${ok.filter((r) => r.driftCaught).length}; unlabelled runs with an edit alarm ${ok.filter((r) => r.alarmWithoutDrift).length}`,
    "  card vs real outcome        resolved  unresolved  unknown",
    `    distilled                 ${String(cell(true, "resolved")).padStart(8)}  ${String(cell(true, "unresolved")).padStart(10)}  ${String(cell(true, "unknown")).padStart(7)}`,
    `    not distilled             ${String(cell(false, "resolved")).padStart(8)}  ${String(cell(false, "unresolved")).padStart(10)}  ${String(cell(false, "unknown")).padStart(7)}`,
    `  extract + guards per run    median ${median(ok.map((r) => r.ms)).toFixed(1)} ms  p95 ${pct(
      ok.map((r) => r.ms),
      0.95,
    ).toFixed(1)} ms`,
  ];
  for (const r of rows.filter((x) => x.error !== undefined).slice(0, 5))
    lines.push(`  failed: ${r.id}: ${r.error}`);
  return lines;
}

export async function runRealBench(argv: string[]): Promise<void> {
  const opt = (name: string) => {
    const i = argv.indexOf(name);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const root = resolve(opt("--real") ?? "");
  const layout: RunLayout = argv.includes("--legacy") ? "legacy" : "trajectory";
  const limit = opt("--limit") !== undefined ? Number(opt("--limit")) : Number.POSITIVE_INFINITY;
  const manifestPath = join(root, "manifest.json");
  if (!existsSync(manifestPath))
    throw new Error(`${manifestPath}: no manifest (run scripts/fetch-trajectories.ts first)`);
  const manifest = JSON.parse(readFileSync(manifestPath, "utf8")) as { files: ManifestFile[] };
  const keep = opt("--keep");
  const work = keep !== undefined ? resolve(keep) : mkdtempSync(join(tmpdir(), "tw-bench-real-"));
  mkdirSync(work, { recursive: true });
  const now = new Date("2026-01-01T00:00:00Z");
  const byFormat = new Map<string, ManifestFile[]>();
  for (const f of manifest.files) {
    if (f.kind !== "trajectory") continue;
    const list = byFormat.get(f.format) ?? [];
    if (list.length < limit) list.push(f);
    byFormat.set(f.format, list);
  }
  const out: string[] = [
    `# memory chain on real runs: ${root} (${layout} layout)`,
    `  ${[...byFormat].map(([k, v]) => `${v.length} ${k}`).join(", ")}`,
  ];
  const all: RunRow[] = [];
  const seen = new Set<string>();
  /** The lab keeps a chat's goal beside it (`goal.json`, or the first question's for a whole session). */
  const goalBeside = (f: ManifestFile): Record<string, unknown> | undefined => {
    const goalPath =
      f.format === "cursor"
        ? f.path.replace(/raw\/cursor\.md$/, "goal.json")
        : f.path.replace(/raw\/full_conversation\.md$/, "pairs/q01/goal.json");
    const goalFile = manifest.files.find(
      (g) => g.kind === "goal" && g.repo === f.repo && g.path === goalPath,
    );
    return goalFile === undefined
      ? undefined
      : (JSON.parse(readFileSync(join(root, goalFile.file), "utf8")) as Record<string, unknown>);
  };
  for (const [format, files] of byFormat) {
    const importer = IMPORTERS[format];
    if ((format === "cursor" || format === "lab") && layout === "legacy") {
      const rows: RunRow[] = [];
      for (const f of files) {
        const parts = f.path.split("/");
        const id = (format === "cursor" ? parts.slice(-4, -2) : parts.slice(-3, -2)).join("__");
        const dir = join(work, `${format}__${id}`);
        try {
          const goal = goalBeside(f);
          if (goal === undefined) throw new Error("no goal.json beside the chat");
          const { labels } = writeCursorRunDir(dir, {
            chat: readFileSync(join(root, f.file), "utf8"),
            goal,
          });
          rows.push(await measure(dir, format, id, labels));
        } catch (error) {
          rows.push({ ...emptyRow(format, id), error: (error as Error).message });
        }
      }
      all.push(...rows);
      out.push(...report(`${format} (goal field names mapped by hand)`, rows, layout));
      continue;
    }
    if (importer === undefined) {
      out.push(`\n## ${format}: ${files.length} runs skipped (no importer for this format)`);
      continue;
    }
    const rows: RunRow[] = [];
    for (const f of files) {
      const file = join(root, f.file);
      let runs: ReturnType<TrajectoryImporter["read"]>["runs"];
      try {
        // the lab's importer reads a session directory (its question goals beside the chat)
        runs = importer.read(format === "lab" ? dirname(dirname(file)) : file).runs;
        const goal = format === "cursor" ? goalBeside(f) : undefined;
        if (goal !== undefined) for (const run of runs) run.goal ??= goal;
      } catch (error) {
        rows.push({ ...emptyRow(format, f.path), error: (error as Error).message });
        continue;
      }
      for (const run of runs) {
        let name = `${format}__${run.id}`;
        for (let k = 2; seen.has(name); k++) name = `${format}__${run.id}-${k}`;
        seen.add(name);
        const dir = join(work, name);
        try {
          const { labels } = writeRunDir(dir, run, {
            layout,
            file,
            now,
            origin: `https://github.com/${f.repo}/blob/${f.commit}/${f.path}`,
            license: f.license,
          });
          rows.push(await measure(dir, format, run.id, labels));
        } catch (error) {
          rows.push({ ...emptyRow(format, run.id), error: (error as Error).message });
        }
      }
    }
    all.push(...rows);
    out.push(...report(format, rows, layout));
  }
  if (byFormat.size > 1) out.push(...report("all formats", all, layout));
  out.push("", ...summaryTable(all, layout));
  out.push(
    `\npeak RSS of this process: ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MiB; 1-min load average ${loadavg()[0]?.toFixed(1)} on ${cpus().length} cores`,
  );
  if (keep === undefined) rmSync(work, { recursive: true, force: true });
  else out.push(`run directories kept in ${work}`);
  console.log(out.join("\n"));
}

/** One markdown row per format: the before/after table of the issue's closing note. */
function summaryTable(rows: RunRow[], layout: RunLayout): string[] {
  const lines = [
    "| format | layout | runs | events/run (median) | edit recall | edit precision | test events (runs with one) | known result | drift caught / labelled | distilled: resolved / unresolved / unknown | not distilled: resolved / unresolved / unknown | extract+guards ms (median) |",
    "|---|---|---|---|---|---|---|---|---|---|---|---|",
  ];
  const formats = [...new Set(rows.map((r) => r.format))];
  for (const format of formats) {
    const ok = rows.filter((r) => r.format === format && r.error === undefined);
    const withPatch = ok.filter((r) => r.patchFiles > 0);
    const sum = (xs: RunRow[], f: (r: RunRow) => number) => xs.reduce((s, r) => s + f(r), 0);
    const hits = sum(withPatch, (r) => r.editHits);
    const tests = sum(ok, (r) => r.tests);
    const known = sum(ok, (r) => r.testsKnown);
    const cells = (d: boolean) =>
      ["resolved", "unresolved", "unknown"]
        .map((o) => ok.filter((r) => r.distilled === d && r.outcome === o).length)
        .join(" / ");
    lines.push(
      `| ${format} | ${layout} | ${ok.length} | ${median(ok.map((r) => r.events))} | ${ratio(
        hits,
        sum(withPatch, (r) => r.patchFiles),
      )} | ${ratio(
        hits,
        sum(withPatch, (r) => r.editFiles),
      )} | ${tests} (${ok.filter((r) => r.tests > 0).length}) | ${known} (${share(known, tests)}) | ${ok.filter((r) => r.driftCaught).length} / ${ok.filter((r) => r.driftLabelled).length} | ${cells(true)} | ${cells(false)} | ${median(ok.map((r) => r.ms)).toFixed(1)} |`,
    );
  }
  return lines;
}

function emptyRow(format: string, id: string): RunRow {
  return {
    format,
    id,
    events: 0,
    patchFiles: 0,
    editFiles: 0,
    editHits: 0,
    tests: 0,
    testsKnown: 0,
    driftLabelled: false,
    driftCaught: false,
    alarmWithoutDrift: false,
    distilled: false,
    outcome: "unknown",
    ms: 0,
  };
}
