import { createHash, randomBytes } from "node:crypto";
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  readSync,
  renameSync,
  rmSync,
  statSync,
} from "node:fs";
import { dirname, join, resolve } from "node:path";
import {
  type Clock,
  ErrorCode,
  fsyncDirectory,
  inputPathError,
  systemClock,
  TimewarpError,
  writeFileAtomic,
} from "../core/index.ts";
import { parseGoal } from "./goal.ts";
import { claudeCodeImporter } from "./import-claude-code.ts";
import { codexImporter } from "./import-codex.ts";
import { cursorImporter } from "./import-cursor.ts";
import { geminiCliImporter } from "./import-gemini-cli.ts";
import { labImporter } from "./import-lab.ts";
import { opencodeImporter } from "./import-opencode.ts";
import { miniSweAgentImporter, sweAgentImporter } from "./import-swe-agent.ts";
import { memoryPaths } from "./run-dir.ts";
import {
  type ImportedRun,
  TRAJECTORY_FORMATS,
  type TrajectoryFormat,
  type TrajectoryImporter,
  type TrajectorySource,
  TrajectorySourceSchema,
  TrajectoryStepSchema,
} from "./trajectory.ts";

/**
 * Every importer, in the order auto-detection asks them: the lab first (a directory), then the
 * JSON formats by their most specific marks, the markdown export last (its marks are prose).
 */
export const IMPORTERS: readonly TrajectoryImporter[] = [
  labImporter,
  opencodeImporter,
  geminiCliImporter,
  codexImporter,
  claudeCodeImporter,
  sweAgentImporter,
  miniSweAgentImporter,
  cursorImporter,
];

/** How much of a file detection reads. */
export const DETECT_BYTES = 64 * 1024;

export interface ImportOptions {
  /** `auto` (the default) tells the format from the content. */
  format?: "auto" | TrajectoryFormat;
  /** The directory the run directories go into (default `.timewarp/memory/runs`): one `<out>/<run id>` per run. */
  out?: string;
  /** The workspace root (for the default `out`). */
  root: string;
  /** Replace a run directory that exists already (else RUN_EXISTS and nothing is written). */
  force?: boolean;
  clock?: Clock;
}

export interface ImportedRunSummary {
  run_dir: string;
  run_id: string;
  format: TrajectoryFormat;
  steps: number;
  /** Tool calls by kind: edits and shell commands, and how many calls the harness reported as failed. */
  edits: number;
  shell: number;
  errors: number;
}

export interface ImportResult {
  runs: ImportedRunSummary[];
  warnings: string[];
}

/** The first bytes of a file as text ("" for a directory); a path that cannot be read is a coded error. */
function readHead(path: string): { head: string; directory: boolean } {
  try {
    if (statSync(path).isDirectory()) return { head: "", directory: true };
    const fd = openSync(path, "r");
    try {
      const buf = Buffer.alloc(DETECT_BYTES);
      const n = readSync(fd, buf, 0, DETECT_BYTES, 0);
      return { head: buf.subarray(0, n).toString("utf8"), directory: false };
    } finally {
      closeSync(fd);
    }
  } catch (error) {
    throw inputPathError(error, path, "FILE");
  }
}

/** A format name as a user typed it (`--format`): `auto` or one of TRAJECTORY_FORMATS, else IMPORT_FORMAT_UNKNOWN. */
export function parseImportFormat(name: string): "auto" | TrajectoryFormat {
  if (name === "auto") return name;
  const hit = TRAJECTORY_FORMATS.find((f) => f === name);
  if (hit === undefined)
    throw new TimewarpError(
      ErrorCode.IMPORT_FORMAT_UNKNOWN,
      `--format ${JSON.stringify(name)} is not a format memory import knows (auto, ${TRAJECTORY_FORMATS.join(", ")})`,
      { data: { format: name, formats: [...TRAJECTORY_FORMATS] } },
    );
  return hit;
}

/** Which importer reads `path`: the one named, or the first whose `detect` knows the content. */
export function detectImporter(
  path: string,
  format: "auto" | TrajectoryFormat = "auto",
): TrajectoryImporter {
  const { head, directory } = readHead(path);
  if (format !== "auto") {
    const named = IMPORTERS.find((i) => i.format === format);
    if (named === undefined)
      throw new TimewarpError(
        ErrorCode.IMPORT_FORMAT_UNKNOWN,
        `format ${JSON.stringify(format)} has no importer in this build (have ${IMPORTERS.map((i) => i.format).join(", ")})`,
        { data: { input: path, formats: IMPORTERS.map((i) => i.format) } },
      );
    return named;
  }
  const hit = IMPORTERS.find((i) => i.detect(path, head));
  if (hit === undefined) {
    const formats = IMPORTERS.map((i) => i.format);
    throw new TimewarpError(
      ErrorCode.IMPORT_FORMAT_UNKNOWN,
      `${path}: not a trajectory format memory import knows (read the first ${directory ? "level of the directory" : `${Math.min(DETECT_BYTES, head.length)} bytes`}; knows ${formats.join(", ")}); name one with --format`,
      { data: { input: path, formats } },
    );
  }
  return hit;
}

/** sha256 of the file a run was read from. */
function sha256Of(path: string): string {
  return createHash("sha256").update(readFileSync(path)).digest("hex");
}

function summarize(run: ImportedRun, runDir: string, format: TrajectoryFormat): ImportedRunSummary {
  const tools = run.steps.filter((s) => s.kind === "tool");
  return {
    run_dir: runDir,
    run_id: run.id,
    format,
    steps: run.steps.length,
    edits: tools.filter((s) => s.call === "edit").length,
    shell: tools.filter((s) => s.call === "shell").length,
    errors: tools.filter((s) => s.is_error === true).length,
  };
}

/** The files of one run directory, by relative path (pure). */
function runFiles(
  run: ImportedRun,
  source: TrajectorySource,
  warnings: string[],
): Map<string, string> {
  const files = new Map<string, string>();
  files.set(
    "raw/trajectory.jsonl",
    run.steps.map((s) => `${JSON.stringify(TrajectoryStepSchema.parse(s))}\n`).join(""),
  );
  files.set(
    "raw/source.json",
    `${JSON.stringify(TrajectorySourceSchema.parse(source), null, 2)}\n`,
  );
  if (run.patch !== undefined && run.patch !== "") files.set("raw/patch.diff", run.patch);
  if (run.report !== undefined)
    files.set("raw/report.json", `${JSON.stringify(run.report, null, 2)}\n`);
  if (run.chat !== undefined) files.set("raw/cursor.md", run.chat);
  if (run.goal !== undefined) {
    const parsed = parseGoal(run.goal);
    if (parsed.ok) files.set("goal.json", `${JSON.stringify(run.goal, null, 2)}\n`);
    else
      warnings.push(
        `${run.id}: the format's goal fails the goal schema, not written (${parsed.issues.join("; ")})`,
      );
  }
  return files;
}

/**
 * Write one run directory whole or not at all: its files go into a private temp directory
 * beside the target, which is then renamed into place (an existing one only with `force`).
 */
function writeRunDir(target: string, files: Map<string, string>, force: boolean): void {
  const parent = dirname(target);
  mkdirSync(parent, { recursive: true });
  const nonce = `${process.pid}-${randomBytes(4).toString("hex")}`;
  const temp = join(parent, `.${target.slice(parent.length + 1)}.import-${nonce}`);
  rmSync(temp, { recursive: true, force: true });
  try {
    for (const [rel, text] of files) {
      const file = join(temp, rel);
      mkdirSync(dirname(file), { recursive: true });
      writeFileAtomic(file, text);
    }
    fsyncDirectory(temp);
    if (existsSync(target)) {
      if (!force) throw runExists(target);
      const old = `${temp}.old`;
      renameSync(target, old);
      renameSync(temp, target);
      rmSync(old, { recursive: true, force: true });
    } else renameSync(temp, target);
    fsyncDirectory(parent);
  } catch (error) {
    rmSync(temp, { recursive: true, force: true });
    throw error;
  }
}

function runExists(runDir: string): TimewarpError {
  return new TimewarpError(
    ErrorCode.RUN_EXISTS,
    `run directory ${runDir} exists already; nothing was written (--force replaces it)`,
    { data: { run_dir: runDir } },
  );
}

/**
 * `memory import`: read an agent's own record of a run (a session log, a rollout, a chat export,
 * the original lab's layout) and write one run directory per run it holds: `raw/trajectory.jsonl`
 * (the steps), `raw/source.json` (format, file, sha256), and what the format has besides
 * (`raw/patch.diff`, `raw/report.json`, `goal.json`, `raw/cursor.md`). Bad records are warnings
 * naming their line; an unknown format is IMPORT_FORMAT_UNKNOWN; an existing run directory is
 * RUN_EXISTS unless `force` (checked for every run before any is written).
 *
 * @example
 * const r = importTrajectory("~/.codex/sessions/2026/01/02/rollout-….jsonl", { root });
 * r.runs[0].run_dir; // .timewarp/memory/runs/<session id>
 */
export function importTrajectory(path: string, options: ImportOptions): ImportResult {
  const file = resolve(path);
  const importer = detectImporter(file, options.format ?? "auto");
  const { runs, warnings } = importer.read(file);
  const out = resolve(options.out ?? memoryPaths(options.root).runs);
  const clock = options.clock ?? systemClock;
  // one id twice in one import (two sessions with one id) would overwrite itself: number them
  const seen = new Map<string, number>();
  for (const run of runs) {
    const n = (seen.get(run.id) ?? 0) + 1;
    seen.set(run.id, n);
    if (n > 1) run.id = `${run.id}-${n}`;
  }
  if (options.force !== true) {
    for (const run of runs) {
      const dir = join(out, run.id);
      if (existsSync(dir)) throw runExists(dir);
    }
  }
  const summaries: ImportedRunSummary[] = [];
  for (const run of runs) {
    const from = run.file ?? file;
    const source: TrajectorySource = {
      schema_version: 1,
      ...run.source,
      format: importer.format,
      file: from,
      sha256: sha256Of(from),
      imported_at: clock.now().toISOString(),
    };
    const dir = join(out, run.id);
    writeRunDir(dir, runFiles(run, source, warnings), options.force === true);
    summaries.push(summarize(run, dir, importer.format));
  }
  if (runs.length === 0) warnings.push(`${path}: no run found in the ${importer.format} file`);
  return { runs: summaries, warnings };
}
