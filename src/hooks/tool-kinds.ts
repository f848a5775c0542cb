import { homedir, tmpdir } from "node:os";
import { isAbsolute, join, relative, resolve, sep } from "node:path";
import { parseApplyPatch } from "./parse-apply-patch.ts";
import type { HookPayload } from "./payload.ts";

/**
 * The agents' own file-editing tools: Claude Code (`Edit`, `Write`, `NotebookEdit`, `MultiEdit`),
 * Codex (`apply_patch`), Gemini CLI (`write_file`, `replace`).
 */
export const EDIT_TOOLS: ReadonlySet<string> = new Set([
  "Edit",
  "Write",
  "NotebookEdit",
  "MultiEdit",
  "apply_patch",
  "write_file",
  "replace",
]);

/** Shell tools, after which a rescan finds what the command changed. */
export const SHELL_TOOLS: ReadonlySet<string> = new Set([
  "Bash",
  "run_shell_command",
  "shell",
  "exec_command",
  "local_shell",
]);

export type ToolKind = "edit" | "shell" | "other";

/** Pure. */
export function toolKind(toolName: string | undefined): ToolKind {
  if (toolName === undefined) return "other";
  if (EDIT_TOOLS.has(toolName)) return "edit";
  if (SHELL_TOOLS.has(toolName)) return "shell";
  return "other";
}

/** Field names the agents use for the one file an edit tool writes. */
const PATH_FIELDS = ["file_path", "notebook_path", "filePath", "path", "absolute_path"] as const;
/** Field names under which the patch text of `apply_patch` arrives. */
const PATCH_FIELDS = ["command", "patch", "input", "patchText"] as const;

export interface EditTargets {
  /** Workspace-relative, forward-slash paths the edit may touch, in order, without duplicates. */
  paths: string[];
  /** Absolute paths named by the tool that lie outside the workspace (not recorded). */
  outside: string[];
}

/**
 * The files an edit tool call will touch, relative to `root`. Relative paths in the payload are
 * taken against the payload's `cwd` (the agent's working directory), else against `root`. Pure.
 */
export function editTargets(payload: HookPayload, root: string): EditTargets {
  const base = payload.cwd ?? root;
  const named: string[] = [];
  const input = payload.tool_input;
  if (payload.tool_name === "apply_patch") {
    const text = typeof input === "string" ? input : firstString(input, PATCH_FIELDS);
    for (const t of parseApplyPatch(text ?? "")) {
      named.push(t.path);
      if (t.moveTo !== undefined) named.push(t.moveTo);
    }
  } else if (typeof input === "object") {
    const path = firstString(input, PATH_FIELDS);
    if (path !== undefined) named.push(path);
  }
  const out: EditTargets = { paths: [], outside: [] };
  for (const p of named) {
    const abs = resolve(base, p);
    const rel = relative(root, abs);
    if (rel === "" || rel.startsWith(`..${sep}`) || rel === ".." || isAbsolute(rel)) {
      if (!out.outside.includes(abs)) out.outside.push(abs);
      continue;
    }
    const norm = rel.split(sep).join("/");
    if (!out.paths.includes(norm)) out.paths.push(norm);
  }
  return out;
}

function firstString(
  input: Record<string, unknown> | undefined,
  fields: readonly string[],
): string | undefined {
  if (input === undefined) return undefined;
  for (const f of fields) {
    const v = input[f];
    if (typeof v === "string" && v !== "") return v;
  }
  return undefined;
}

/**
 * Where agents keep their own state (plans, memories, settings, scratch files): an edit there is
 * the agent's housekeeping, not work on the project, and no goal scores it. Every other path
 * outside the workspace is scored as outside it (the Scope guard's 1).
 */
export function isAgentStatePath(abs: string, home = homedir(), temp = tmpdir()): boolean {
  const dirs = [
    join(home, ".claude"),
    join(home, ".gemini"),
    join(home, ".codex"),
    join(home, ".config", "opencode"),
    join(home, ".local", "share", "opencode"),
    join(home, ".local", "state", "opencode"),
    temp,
  ];
  return dirs.some((d) => {
    const rel = relative(d, abs);
    return rel !== "" && rel !== ".." && !rel.startsWith(`..${sep}`) && !isAbsolute(rel);
  });
}
