import { existsSync } from "node:fs";
import { join } from "node:path";
import { appendEvent, type Clock, systemClock, workspacePaths } from "../core/index.ts";
import { readGoal } from "./goal.ts";
import { checkEdit } from "./guards.ts";

/** A proposed edit as a guard sees it: the tool, the paths it writes, and its text. */
export interface GuardedEdit {
  tool: string;
  paths: string[];
  /** The new text (an Edit's new_string, a Write's content). */
  content?: string;
  /** The change as a diff (a patch, or the diff an MCP edit tool planned). */
  diff?: string;
}

/** `none`: no goal is set, so nothing was checked. */
export interface GuardVerdict {
  action: "none" | "ok" | "warn" | "rollback";
  score: number;
  reasons: string[];
}

/**
 * Score a proposed edit against the workspace's goal, if one is set, and record a
 * `guard.checked` event (unless `record` is false). The one home of the check every door into an edit makes: the agents'
 * PreToolUse hooks and timewarp's own MCP edit tools. No goal: `none`. An invalid goal.json
 * throws GOAL_INVALID.
 */
export function guardEdit(options: {
  root: string;
  edit: GuardedEdit;
  sessionId?: string;
  clock?: Clock;
  /** Default true; false for a dry run, which writes nothing, not even the event. */
  record?: boolean;
}): GuardVerdict {
  const { root, edit } = options;
  const file = workspacePaths(root).goal;
  if (!existsSync(file)) return { action: "none", score: 0, reasons: [] };
  const { goal } = readGoal(file);
  const check = checkEdit(
    goal,
    {
      paths: edit.paths,
      tool: edit.tool,
      ...(edit.content === undefined ? {} : { content: edit.content }),
      ...(edit.diff === undefined ? {} : { diff: edit.diff }),
    },
    { root, gitWorkTree: existsSync(join(root, ".git")) },
  );
  if (options.record !== false)
    appendEvent(
      workspacePaths(root).events,
      "guard.checked",
      {
        action: check.action,
        score: check.drift_score,
        tool: edit.tool,
        paths: edit.paths,
        ...(options.sessionId === undefined ? {} : { session_id: options.sessionId }),
      },
      options.clock ?? systemClock,
    );
  return { action: check.action, score: check.drift_score, reasons: check.reasons };
}
