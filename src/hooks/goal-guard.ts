import { existsSync } from "node:fs";
import { join } from "node:path";
import { appendEvent, workspacePaths } from "../core/index.ts";
import type { HookContext } from "./run-hook.ts";

/**
 * Where a hook looks for the goal of the work in progress: `.timewarp/memory/goal.json` (the
 * memory lab's goal schema). No file, no guard: the edit passes.
 */
export function goalFile(root: string): string {
  return join(workspacePaths(root).memory, "goal.json");
}

export interface GoalVerdict {
  action: "none" | "ok" | "warn" | "rollback";
  reasons: string[];
}

/** The new text an edit tool is about to write, for the tamper check (Edit, Write, MultiEdit…). */
export function proposedText(input: unknown): { content?: string; diff?: string } {
  if (typeof input === "string") return { diff: input };
  if (typeof input !== "object" || input === null) return {};
  const r = input as Record<string, unknown>;
  if (typeof r.content === "string") return { content: r.content };
  if (typeof r.new_string === "string") return { content: r.new_string };
  if (typeof r.new_source === "string") return { content: r.new_source };
  if (Array.isArray(r.edits)) {
    const parts = r.edits.flatMap((e) =>
      typeof e === "object" &&
      e !== null &&
      typeof (e as { new_string?: unknown }).new_string === "string"
        ? [(e as { new_string: string }).new_string]
        : [],
    );
    if (parts.length > 0) return { content: parts.join("\n") };
  }
  if (typeof r.command === "string" && r.command.includes("*** Begin Patch"))
    return { diff: r.command };
  return {};
}

/**
 * Run the memory lab's drift guards on a proposed edit (Scope and Plan; the edit's own text is
 * checked for test-tampering markers). Records a `guard.checked` event. A missing goal passes; an
 * invalid goal.json throws GOAL_INVALID, which the hook reports without blocking.
 */
export async function checkGoal(ctx: HookContext, paths: string[]): Promise<GoalVerdict> {
  const file = goalFile(ctx.root);
  if (!existsSync(file)) return { action: "none", reasons: [] };
  const { checkEdit, readGoal } = await import("../memory/index.ts");
  const { goal } = readGoal(file);
  const tool = ctx.payload.tool_name ?? "edit";
  const check = checkEdit(
    goal,
    { paths, tool, ...proposedText(ctx.payload.tool_input) },
    { root: ctx.root, gitWorkTree: existsSync(join(ctx.root, ".git")) },
  );
  appendEvent(
    workspacePaths(ctx.root).events,
    "guard.checked",
    {
      action: check.action,
      score: check.drift_score,
      tool,
      paths,
      session_id: ctx.payload.session_id,
    },
    ctx.clock,
  );
  return { action: check.action, reasons: check.reasons };
}
