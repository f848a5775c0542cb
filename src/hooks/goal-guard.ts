import { existsSync } from "node:fs";
import { workspacePaths } from "../core/index.ts";
import type { GuardVerdict } from "../memory/index.ts";
import type { HookContext } from "./run-hook.ts";

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
 * Run the memory lab's drift guards on the edit a PreToolUse announces (memory's `guardEdit`:
 * Scope and Plan, and the edit's own text checked for test-tampering markers). A missing goal
 * passes; an invalid goal.json throws GOAL_INVALID, which the hook reports without blocking.
 */
export async function checkGoal(ctx: HookContext, paths: string[]): Promise<GuardVerdict> {
  // No goal, no guard: decided before loading the memory lab, which an edit hook without a goal
  // never needs (every tool call pays for what a hook loads).
  if (!existsSync(workspacePaths(ctx.root).goal)) return { action: "none", score: 0, reasons: [] };
  const { guardEdit } = await import("../memory/index.ts");
  return guardEdit({
    root: ctx.root,
    edit: { tool: ctx.payload.tool_name ?? "edit", paths, ...proposedText(ctx.payload.tool_input) },
    sessionId: ctx.payload.session_id,
    clock: ctx.clock,
  });
}
