import type { RunLabels } from "./eval.ts";
import { compileGoal } from "./goal.ts";
import type { Goal } from "./schemas.ts";
import { parseVerdictJson, patchFiles } from "./verdict-file.ts";

/**
 * Labels of a run from facts, never from the guard: the final patch against the task's rules
 * (a changed file the goal blacklists is drift), and the outcome from an external verdict.
 */

/** An external verdict's JSON (any shape `verdict-file.ts` reads) → the outcome for the instance. */
export function outcomeOf(
  report: unknown,
  id: string | undefined,
): "resolved" | "unresolved" | "unknown" {
  const verdict = parseVerdictJson(report, id ?? "", "report");
  return verdict?.resolved === true
    ? "resolved"
    : verdict?.resolved === false
      ? "unresolved"
      : "unknown";
}

/** labels.json for a run: drift = the patch's files the goal blacklists; outcome from the verdict. Pure. */
export function labelsFromFacts(input: {
  goal: Goal;
  patch?: string;
  report?: unknown;
  instanceId?: string;
}): RunLabels {
  const files = input.patch !== undefined ? patchFiles(input.patch) : [];
  const compiled = compileGoal(input.goal);
  const drift = files.filter((f) => compiled.classify(f).blacklisted !== null);
  const outcome = outcomeOf(input.report, input.instanceId ?? input.goal.instance_id);
  return {
    drift_files: drift,
    drift_cmds: [],
    outcome,
    patch_files: files,
    note:
      input.patch === undefined
        ? "no final patch: drift unknown"
        : drift.length > 0
          ? `final patch changes ${drift.length} blacklisted file(s)`
          : "final patch within the task's rules",
  };
}
