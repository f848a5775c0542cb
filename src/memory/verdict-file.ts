import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import type { Goal, GuardRecord, MemoryEvent } from "./schemas.ts";
import { type ExternalVerdict, type RunVerdict, runVerdict } from "./verdict.ts";

/**
 * External verdicts a run directory may hold, in this order (the first that names the run
 * decides):
 *
 * - `raw/report.json` or `raw/results.json`, in one of three shapes:
 *   - SWE-bench's per-instance harness report: `{ "<instance_id>": { "resolved": true|false, … } }`
 *     (the entry of the run's instance id; a file with a single entry is that run's);
 *   - a flat record: `{ "resolved": true|false, "instance_id"?: "…" }`;
 *   - SWE-bench's run summary: `{ "resolved_ids": […], "unresolved_ids": […], "empty_patch_ids"?: […], "error_ids"?: […] }`
 *     (resolved / unresolved / empty patch = unresolved / error = decides nothing).
 * - `raw/predictions.jsonl`: one JSON object per line with `instance_id` and a boolean
 *   `resolved` (a predictions file a harness annotated); the line of the run's instance id, or
 *   the only line.
 *
 * The run's instance id is goal.instance_id, else the run directory's name. A file that names
 * another instance, or has no resolved flag, is no verdict; a file that does not parse is a
 * warning.
 */

const ResolvedEntry = z.object({ resolved: z.boolean() }).passthrough();
const PerInstance = z.record(z.string(), ResolvedEntry);
const Flat = z.object({ resolved: z.boolean(), instance_id: z.string().optional() }).passthrough();
const Summary = z
  .object({
    resolved_ids: z.array(z.string()),
    unresolved_ids: z.array(z.string()).default([]),
    empty_patch_ids: z.array(z.string()).default([]),
    error_ids: z.array(z.string()).default([]),
  })
  .passthrough();
const PredictionLine = z.object({ instance_id: z.string(), resolved: z.boolean() }).passthrough();

export const VERDICT_FILES = ["raw/report.json", "raw/results.json", "raw/predictions.jsonl"];

/** Parse one verdict file's JSON for `instanceId` (pure): a verdict, or null when it does not name the run. */
export function parseVerdictJson(
  json: unknown,
  instanceId: string,
  source: string,
): ExternalVerdict | null {
  const flat = Flat.safeParse(json);
  if (flat.success) {
    if (flat.data.instance_id !== undefined && flat.data.instance_id !== instanceId) return null;
    return { resolved: flat.data.resolved, source };
  }
  const summary = Summary.safeParse(json);
  if (summary.success) {
    const s = summary.data;
    if (s.resolved_ids.includes(instanceId))
      return { resolved: true, source, detail: `${instanceId} in resolved_ids` };
    if (s.unresolved_ids.includes(instanceId))
      return { resolved: false, source, detail: `${instanceId} in unresolved_ids` };
    if (s.empty_patch_ids.includes(instanceId))
      return { resolved: false, source, detail: `${instanceId}: empty patch` };
    if (s.error_ids.includes(instanceId))
      return { resolved: null, source, detail: `${instanceId}: the harness errored` };
    return null;
  }
  const per = PerInstance.safeParse(json);
  if (per.success) {
    const keys = Object.keys(per.data);
    const key = keys.includes(instanceId) ? instanceId : keys.length === 1 ? keys[0] : undefined;
    const entry = key !== undefined ? per.data[key] : undefined;
    if (key === undefined || entry === undefined) return null;
    return { resolved: entry.resolved, source, detail: `instance ${key}` };
  }
  return null;
}

/** Read the run's external verdict (see the file comment), with warnings for files that do not parse. */
export function readExternalVerdict(
  dir: string,
  instanceId: string,
): { verdict: ExternalVerdict | null; warnings: string[] } {
  const warnings: string[] = [];
  for (const rel of VERDICT_FILES) {
    const file = join(dir, rel);
    if (!existsSync(file)) continue;
    const text = readFileSync(file, "utf8");
    if (rel.endsWith(".jsonl")) {
      const lines: z.infer<typeof PredictionLine>[] = [];
      text.split("\n").forEach((line, n) => {
        if (line.trim() === "") return;
        try {
          const r = PredictionLine.safeParse(JSON.parse(line));
          if (r.success) lines.push(r.data);
        } catch {
          warnings.push(`${rel} line ${n + 1}: not valid JSON, skipped`);
        }
      });
      const hit =
        lines.find((l) => l.instance_id === instanceId) ??
        (lines.length === 1 ? lines[0] : undefined);
      if (hit !== undefined)
        return {
          verdict: { resolved: hit.resolved, source: rel, detail: `instance ${hit.instance_id}` },
          warnings,
        };
      continue;
    }
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch (error) {
      warnings.push(
        `${rel}: not valid JSON (${error instanceof Error ? error.message : String(error)}), ignored`,
      );
      continue;
    }
    const v = parseVerdictJson(json, instanceId, rel);
    if (v !== null) return { verdict: v, warnings };
  }
  return { verdict: null, warnings };
}

/**
 * The verdict of the run in `dir` from its events and guards plus what the directory holds: the
 * external verdict (its instance id is goal.instance_id, else `runId`) and the final patch's files
 * (returned too).
 * One path for `memory card` and `memory eval`, so both judge a run alike.
 */
export function readRunVerdict(input: {
  dir: string;
  runId: string;
  goal: Goal;
  events: readonly MemoryEvent[];
  guards: readonly GuardRecord[];
}): { verdict: RunVerdict; warnings: string[]; finalFiles: string[] | undefined } {
  const { dir, goal, events, guards } = input;
  const external = readExternalVerdict(dir, goal.instance_id ?? input.runId);
  const finalFiles = finalPatchFiles(dir);
  const verdict = runVerdict({
    goal,
    events,
    guards,
    external: external.verdict,
    ...(finalFiles !== undefined ? { final_files: finalFiles } : {}),
  });
  return { verdict, warnings: external.warnings, finalFiles };
}

/** The files `raw/patch.diff` changes (new paths, the old one for a delete), or undefined without a patch. */
export function finalPatchFiles(dir: string): string[] | undefined {
  const file = join(dir, "raw/patch.diff");
  if (!existsSync(file)) return undefined;
  return patchFiles(readFileSync(file, "utf8"));
}

/** The files a unified diff changes (`diff --git a/x b/y`, else `+++ b/y` / `--- a/x` for a deletion), in order, once each. */
export function patchFiles(patch: string): string[] {
  const files: string[] = [];
  const add = (p: string | undefined) => {
    if (p === undefined || p === "" || p === "/dev/null") return;
    const clean = p.replace(/^"|"$/g, "").replace(/\t.*$/, "");
    if (!files.includes(clean)) files.push(clean);
  };
  let minus: string | undefined;
  for (const line of patch.split("\n")) {
    const git = /^diff --git a\/(.+) b\/(.+)$/.exec(line);
    if (git) {
      add(git[2]);
      continue;
    }
    if (line.startsWith("--- ")) minus = line.slice(4).replace(/^a\//, "");
    else if (line.startsWith("+++ ")) {
      const plus = line.slice(4);
      add(plus === "/dev/null" ? minus : plus.replace(/^b\//, ""));
    }
  }
  return files;
}
