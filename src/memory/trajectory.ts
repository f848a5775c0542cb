import { z } from "zod";

/**
 * `raw/trajectory.jsonl`: an agent run as timewarp reads it, whatever agent wrote it. The
 * importers (`memory import`) turn each agent's own format into these steps; the extractor
 * turns the steps into events. A step says what happened, never what it means: the importer
 * names the tool call's kind from the tool's name (an agent's edit tool is `edit`, its shell
 * tool is `shell`), and the extractor decides what a shell command did (parsed, not matched).
 */

/** The formats `memory import` reads (`auto` detects one of them). */
export const TRAJECTORY_FORMATS = [
  "claude-code",
  "codex",
  "gemini-cli",
  "opencode",
  "swe-agent",
  "mini-swe-agent",
  "cursor",
  "lab",
] as const;
export type TrajectoryFormat = (typeof TRAJECTORY_FORMATS)[number];

/** What a tool call is, from the tool's name: the agent's shell, its edit/write tool, a read, a plan/todo tool, or anything else. */
export const CALL_KINDS = ["shell", "edit", "read", "plan", "other"] as const;
export type CallKind = (typeof CALL_KINDS)[number];

export const TrajectoryStepSchema = z.object({
  /** 0-based position in the run. */
  i: z.number().int().nonnegative(),
  /** `user` and `assistant` are messages; `tool` is one tool call with its result. */
  kind: z.enum(["user", "assistant", "tool"]),
  /** A message's text (user prompt, assistant prose or thought). */
  text: z.string().optional(),
  /** The tool's name as the agent wrote it (`Bash`, `shell`, `run_shell_command`, `str_replace_editor`). */
  tool: z.string().optional(),
  call: z.enum(CALL_KINDS).optional(),
  /** The shell command text, for `call: "shell"`. */
  command: z.string().optional(),
  /** Workspace-relative (or as written) files an edit/read tool names in its input. */
  paths: z.array(z.string()).optional(),
  /** For edit tools: the change as a unified diff when the agent gave one, else `-old`/`+new` lines. */
  diff: z.string().optional(),
  /** The tool's input as the agent wrote it, clipped. */
  input: z.record(z.string(), z.unknown()).optional(),
  /** The tool's output (stdout and stderr as the agent saw them), clipped to head and tail. */
  output: z.string().optional(),
  exit_code: z.number().int().nullable().optional(),
  /** The agent's harness reported the call as failed (a rejected edit, a tool error). */
  is_error: z.boolean().optional(),
  /** ISO time when the format records one. */
  ts: z.string().optional(),
});
export type TrajectoryStep = z.infer<typeof TrajectoryStepSchema>;

/** `raw/source.json`: where an imported run came from. */
export const TrajectorySourceSchema = z.object({
  schema_version: z.literal(1),
  format: z.enum(TRAJECTORY_FORMATS),
  /** The imported file as given, and its sha256. */
  file: z.string(),
  sha256: z.string(),
  imported_at: z.string(),
  /** The agent's own session / instance id when the format has one. */
  session_id: z.string().optional(),
  /** For a session split per question (the lab layout): which question this run is. */
  question: z.string().optional(),
  /** How the agent's run ended as the format records it (SWE-agent's `info.exit_status`: `submitted`, `Submitted`, `LimitsExceeded`…). */
  exit_status: z.string().optional(),
  /** Where a public sample came from and under which license, when known. */
  origin: z.string().optional(),
  license: z.string().optional(),
});
export type TrajectorySource = z.infer<typeof TrajectorySourceSchema>;

/** Outputs are kept to this many characters: the head and the tail, where runners print their summaries. */
export const STEP_OUTPUT_MAX = 16_000;

/** Keep the head and the tail of a long output (test summaries are at the end). */
export function clipOutput(text: string, max = STEP_OUTPUT_MAX): string {
  if (text.length <= max) return text;
  const head = Math.floor(max / 4);
  const tail = max - head - 40;
  return `${text.slice(0, head)}\n… [${text.length - head - tail} characters cut] …\n${text.slice(-tail)}`;
}

/** One run an importer read: its steps and whatever else the format holds. */
export interface ImportedRun {
  /** A file-system-safe id, unique within one import (the agent's session id, the question's id). */
  id: string;
  steps: TrajectoryStep[];
  /** `raw/source.json` less what the import step fills in (file, sha256, imported_at). */
  source: Omit<TrajectorySource, "schema_version" | "file" | "sha256" | "imported_at">;
  /** The final patch when the format holds one (SWE-agent's submission) → `raw/patch.diff`. */
  patch?: string;
  /** An external verdict when the format holds one → `raw/report.json`. */
  report?: unknown;
  /** The task as a goal when the format holds one → `goal.json` (validated by the goal schema). */
  goal?: Record<string, unknown>;
  /** The conversation as markdown when that is the format's own form (Cursor, the lab) → `raw/cursor.md`. */
  chat?: string;
  /** The file this run was read from when it is not the imported path itself (a lab session's conversation): `raw/source.json` names and hashes it. */
  file?: string;
}

/** One format: tell it from a file's start, then read the file (or the lab's directory) into runs. */
export interface TrajectoryImporter {
  format: TrajectoryFormat;
  /** True when `head` (the first 64 KiB of a file, "" for a directory) is this format. */
  detect(path: string, head: string): boolean;
  /** Bad records become warnings naming their line or index; the rest is read. */
  read(path: string): { runs: ImportedRun[]; warnings: string[] };
}
