/**
 * The real-run bench's conversion step: one imported run (an importer's `ImportedRun`) → a
 * memory run directory, in one of two layouts.
 *
 *   trajectory  what `memory import` writes: raw/trajectory.jsonl + raw/source.json
 *               (+ raw/patch.diff, raw/report.json) and goal.json
 *   legacy      what the reporter wrote by hand before the importers existed:
 *               raw/cursor.md (the conversation as a Cursor export), raw/patch.diff and
 *               raw/term.log (each shell command after a `$ ` prompt, then its output), goal.json
 *
 * Both add labels.json from facts (`labelsFromFacts`: the final patch against the goal's
 * blacklist, the outcome from the verdict), never from the guard.
 */
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { writeFileAtomic } from "../src/core/index.ts";
import type { RunLabels } from "../src/memory/eval.ts";
import { parseGoal } from "../src/memory/goal.ts";
import { labelsFromFacts } from "../src/memory/run-labels.ts";
import {
  type ImportedRun,
  type TrajectorySource,
  TrajectorySourceSchema,
  type TrajectoryStep,
  TrajectoryStepSchema,
} from "../src/memory/trajectory.ts";

export type RunLayout = "trajectory" | "legacy";

/** Observations in the legacy chat are clipped to this (the reporter's export kept them whole; the term log does). */
const CHAT_OUTPUT_MAX = 4000;

function clip(text: string, max: number): string {
  return text.length <= max
    ? text
    : `${text.slice(0, max / 2)}\n… [${text.length - max} characters cut] …\n${text.slice(-max / 2)}`;
}

/** The conversation as a Cursor export: user turns (the task, each observation), Cursor turns (prose, then the action in a fenced block). Pure. */
export function renderLegacyChat(run: ImportedRun): string {
  const objective =
    typeof run.goal?.objective === "string" ? run.goal.objective : `${run.source.format} ${run.id}`;
  const out: string[] = [
    `# ${objective}`,
    `_Exported on 1/1/2026 at 00:00:00 UTC from Cursor (legacy render of ${run.source.format} ${run.id})_`,
  ];
  const turn = (role: "User" | "Cursor", body: string) => {
    out.push("", "---", "", `**${role}**`, "", body.trim());
  };
  let assistant: string[] = [];
  const flush = () => {
    if (assistant.length > 0) turn("Cursor", assistant.join("\n\n"));
    assistant = [];
  };
  for (const s of run.steps) {
    if (s.kind === "user") {
      flush();
      turn("User", s.text ?? "");
    } else if (s.kind === "assistant") assistant.push(s.text ?? "");
    else {
      const action =
        s.command ?? (typeof s.input?.action === "string" ? s.input.action : (s.tool ?? ""));
      assistant.push(`\`\`\`${s.call === "shell" ? "bash" : ""}\n${action.trim()}\n\`\`\``);
      flush();
      const body = clip(s.output ?? "", CHAT_OUTPUT_MAX);
      turn(
        "User",
        s.exit_code !== undefined && s.exit_code !== null
          ? `<returncode>${s.exit_code}</returncode>\n<output>\n${body}\n</output>`
          : body === ""
            ? "(no output)"
            : body,
      );
    }
  }
  flush();
  return `${out.join("\n")}\n`;
}

/** Each shell command after a `$ ` prompt (continuation lines after `> `), then its output. Pure. */
export function renderLegacyTerm(steps: readonly TrajectoryStep[]): string {
  const out: string[] = [];
  for (const s of steps) {
    if (s.kind !== "tool" || s.call !== "shell" || s.command === undefined) continue;
    const [first, ...rest] = s.command.trim().split("\n");
    out.push(`$ ${first ?? ""}`, ...rest.map((l) => `> ${l}`));
    if ((s.output ?? "") !== "") out.push((s.output ?? "").replace(/\n$/, ""));
  }
  return out.length === 0 ? "" : `${out.join("\n")}\n`;
}

/**
 * Write one imported run as a run directory in `dir` (created). The goal is validated with the
 * goal schema; steps and source with the trajectory contract. Returns the labels it wrote.
 */
export function writeRunDir(
  dir: string,
  run: ImportedRun,
  options: { layout: RunLayout; file: string; now: Date; origin?: string; license?: string },
): { labels: RunLabels } {
  const raw = join(dir, "raw");
  mkdirSync(raw, { recursive: true });
  const goalInput = run.goal ?? { objective: `${run.source.format} run ${run.id}` };
  const parsed = parseGoal(goalInput);
  if (!parsed.ok) throw new Error(`${run.id}: goal invalid: ${parsed.issues.join("; ")}`);
  writeFileAtomic(join(dir, "goal.json"), `${JSON.stringify(goalInput, null, 2)}\n`);
  if (run.patch !== undefined) writeFileAtomic(join(raw, "patch.diff"), run.patch);
  if (options.layout === "trajectory") {
    const lines = run.steps.map((s) => JSON.stringify(TrajectoryStepSchema.parse(s)));
    writeFileAtomic(join(raw, "trajectory.jsonl"), `${lines.join("\n")}\n`);
    const source: TrajectorySource = TrajectorySourceSchema.parse({
      schema_version: 1,
      ...run.source,
      file: options.file,
      sha256: createHash("sha256").update(readFileSync(options.file)).digest("hex"),
      imported_at: options.now.toISOString(),
      ...(options.origin !== undefined ? { origin: options.origin } : {}),
      ...(options.license !== undefined ? { license: options.license } : {}),
    });
    writeFileAtomic(join(raw, "source.json"), `${JSON.stringify(source, null, 2)}\n`);
    if (run.report !== undefined)
      writeFileAtomic(join(raw, "report.json"), `${JSON.stringify(run.report, null, 2)}\n`);
  } else {
    writeFileAtomic(join(raw, "cursor.md"), renderLegacyChat(run));
    const term = renderLegacyTerm(run.steps);
    if (term !== "") writeFileAtomic(join(raw, "term.log"), term);
  }
  const labels = labelsFromFacts({
    goal: parsed.value.goal,
    ...(run.patch !== undefined ? { patch: run.patch } : {}),
    ...(run.report !== undefined ? { report: run.report } : {}),
    instanceId: run.source.session_id ?? run.id,
  });
  writeFileAtomic(join(dir, "labels.json"), `${JSON.stringify(labels, null, 2)}\n`);
  return { labels };
}

/** The original lab's goal field names (`allowed_paths`, `forbidden_paths`) → timewarp's, as the reporter mapped them by hand; other unknown keys dropped. Pure. */
export function mapLabGoal(lab: Record<string, unknown>): Record<string, unknown> {
  const known = new Set([
    "objective",
    "whitelist",
    "blacklist",
    "protected",
    "checkpoints",
    "required_tests",
    "baseline",
    "run_id",
    "difficulty",
    "instance_id",
  ]);
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(lab)) {
    if (k === "allowed_paths") out.whitelist = v;
    else if (k === "forbidden_paths") out.blacklist = v;
    else if (known.has(k)) out[k] = v;
  }
  return out;
}

/** A lab run (a Cursor chat split per question, with the lab's goal) as the reporter ran it: raw/cursor.md + the hand-mapped goal + labels. */
export function writeCursorRunDir(
  dir: string,
  input: { chat: string; goal: Record<string, unknown> },
): { labels: RunLabels } {
  const raw = join(dir, "raw");
  mkdirSync(raw, { recursive: true });
  const goalInput = mapLabGoal(input.goal);
  const parsed = parseGoal(goalInput);
  if (!parsed.ok) throw new Error(`goal invalid: ${parsed.issues.join("; ")}`);
  writeFileAtomic(join(dir, "goal.json"), `${JSON.stringify(goalInput, null, 2)}\n`);
  writeFileAtomic(join(raw, "cursor.md"), input.chat);
  const labels = labelsFromFacts({ goal: parsed.value.goal });
  writeFileAtomic(join(dir, "labels.json"), `${JSON.stringify(labels, null, 2)}\n`);
  return { labels };
}
