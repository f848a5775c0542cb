import { readFileSync } from "node:fs";
import { basename } from "node:path";
import {
  callKind,
  clipInput,
  headJsonLines,
  isRecord,
  numberSteps,
  parseJsonLines,
  replacementDiff,
  safeRunId,
  sessionPath,
  str,
} from "./import-common.ts";
import {
  type CallKind,
  clipOutput,
  type TrajectoryImporter,
  type TrajectoryStep,
} from "./trajectory.ts";

/**
 * Claude Code's session log, `~/.claude/projects/<project>/<session>.jsonl`: one record per line;
 * `type: "assistant"` records hold `tool_use` blocks, the next `type: "user"` records their
 * `tool_result` blocks (paired by id), with the harness's `toolUseResult` beside them (a Bash
 * call's stdout and stderr). Other record types (attachments, queue operations, summaries, the
 * client's request records) are not the conversation.
 */

const TOOLS: Record<string, CallKind> = {
  Bash: "shell",
  Edit: "edit",
  MultiEdit: "edit",
  Write: "edit",
  NotebookEdit: "edit",
  Read: "read",
  Grep: "read",
  Glob: "read",
  LS: "read",
  NotebookRead: "read",
  TodoWrite: "plan",
  ExitPlanMode: "plan",
};

type Step = Omit<TrajectoryStep, "i">;

function resultText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map((b) => (isRecord(b) && b.type === "text" ? (str(b.text) ?? "") : ""))
    .filter((t) => t !== "")
    .join("\n");
}

/** What a tool_use says about its files and change, by the tool's input fields. */
function editFacts(
  tool: string,
  input: Record<string, unknown>,
  cwd: string | undefined,
): Pick<Step, "paths" | "diff"> {
  const file = str(input.file_path) ?? str(input.notebook_path) ?? str(input.path);
  const paths = file !== undefined ? [sessionPath(file, cwd)] : undefined;
  let diff: string | undefined;
  if (tool === "Edit")
    diff = replacementDiff(str(input.old_string) ?? "", str(input.new_string) ?? "");
  else if (tool === "MultiEdit" && Array.isArray(input.edits))
    diff = input.edits
      .filter(isRecord)
      .map((e) => replacementDiff(str(e.old_string) ?? "", str(e.new_string) ?? ""))
      .join("\n");
  else if (tool === "Write") diff = replacementDiff("", str(input.content) ?? "");
  else if (tool === "NotebookEdit") diff = replacementDiff("", str(input.new_source) ?? "");
  return { ...(paths ? { paths } : {}), ...(diff !== undefined ? { diff } : {}) };
}

/**
 * The edit as Claude Code applied it: `toolUseResult.structuredPatch` (hunks with line numbers)
 * in git's diff format, or undefined when the harness kept none (a refused edit).
 */
function appliedDiff(
  harness: Record<string, unknown>,
  cwd: string | undefined,
): string | undefined {
  const file = str(harness.filePath);
  if (file === undefined || !Array.isArray(harness.structuredPatch)) return undefined;
  const hunks = harness.structuredPatch.filter(isRecord).map((h) => {
    const lines = Array.isArray(h.lines) ? h.lines.filter((l) => typeof l === "string") : [];
    return `@@ -${h.oldStart},${h.oldLines} +${h.newStart},${h.newLines} @@\n${lines.map((l) => `${l}\n`).join("")}`;
  });
  if (hunks.length === 0) return undefined;
  const path = sessionPath(file, cwd);
  const created = harness.type === "create";
  return `--- ${created ? "/dev/null" : `a/${path}`}\n+++ b/${path}\n${hunks.join("")}`;
}

export const claudeCodeImporter: TrajectoryImporter = {
  format: "claude-code",
  detect(_path, head) {
    // a conversation record, or the client's own bookkeeping records of a session (a session can
    // open with more than 64 KiB of them: queued prompts, file snapshots, attachments)
    return headJsonLines(head).some(
      (r) =>
        typeof r.sessionId === "string" &&
        typeof r.projectHash !== "string" &&
        (((r.type === "user" || r.type === "assistant") && isRecord(r.message)) ||
          typeof r.uuid === "string" ||
          r.type === "queue-operation"),
    );
  },
  read(path) {
    const { records, warnings } = parseJsonLines(readFileSync(path, "utf8"), basename(path));
    const steps: Step[] = [];
    const pending = new Map<string, Step>();
    let sessionId: string | undefined;
    let cwd: string | undefined;
    for (const { line, value } of records) {
      if (!isRecord(value)) continue;
      sessionId ??= str(value.sessionId);
      cwd ??= str(value.cwd);
      if (value.type !== "user" && value.type !== "assistant") continue;
      if (value.isMeta === true || value.isSidechain === true) continue;
      const message = value.message;
      if (!isRecord(message)) {
        warnings.push(`${basename(path)}:${line}: a ${value.type} record without a message`);
        continue;
      }
      const ts = str(value.timestamp);
      const content = message.content;
      if (typeof content === "string") {
        if (content.trim() !== "")
          steps.push({ kind: value.type, text: content, ...(ts ? { ts } : {}) });
        continue;
      }
      if (!Array.isArray(content)) continue;
      for (const block of content) {
        if (!isRecord(block)) continue;
        if (block.type === "text") {
          const text = str(block.text) ?? "";
          if (text.trim() !== "") steps.push({ kind: value.type, text, ...(ts ? { ts } : {}) });
        } else if (block.type === "tool_use") {
          const tool = str(block.name) ?? "tool";
          const input = isRecord(block.input) ? block.input : {};
          const call = callKind(TOOLS, tool);
          const step: Step = {
            kind: "tool",
            tool,
            call,
            ...(call === "shell" && str(input.command) !== undefined
              ? { command: str(input.command) }
              : {}),
            ...(call === "edit" || call === "read" ? editFacts(tool, input, cwd) : {}),
            ...(clipInput(input) ? { input: clipInput(input) } : {}),
            ...(ts ? { ts } : {}),
          };
          steps.push(step);
          const id = str(block.id);
          if (id !== undefined) pending.set(id, step);
        } else if (block.type === "tool_result") {
          const id = str(block.tool_use_id);
          const step = id !== undefined ? pending.get(id) : undefined;
          if (step === undefined) {
            warnings.push(
              `${basename(path)}:${line}: a tool_result for no known tool_use (${id ?? "no id"})`,
            );
            continue;
          }
          if (id !== undefined) pending.delete(id);
          const text = resultText(block.content);
          const isError = block.is_error === true;
          const harness = isRecord(value.toolUseResult) ? value.toolUseResult : undefined;
          // a Bash call's own streams when the harness kept them, else what the model was shown
          const streams =
            harness !== undefined &&
            (typeof harness.stdout === "string" || typeof harness.stderr === "string")
              ? [str(harness.stdout) ?? "", str(harness.stderr) ?? ""]
                  .filter((s) => s !== "")
                  .join("\n")
              : undefined;
          step.output = clipOutput(streams !== undefined && streams !== "" ? streams : text);
          step.is_error = isError;
          if (step.call === "edit" && harness !== undefined && !isError) {
            const applied = appliedDiff(harness, cwd);
            if (applied !== undefined) step.diff = clipOutput(applied);
          }
          if (step.call === "shell") {
            const code = /^Exit code (\d+)/.exec(text);
            step.exit_code = code ? Number(code[1]) : isError ? null : 0;
          }
        }
      }
    }
    for (const [id, step] of pending)
      warnings.push(
        `${basename(path)}: the ${step.tool} call ${id} has no result (the session ended before it)`,
      );
    return {
      runs: [
        {
          id: safeRunId(sessionId ?? basename(path, ".jsonl")),
          steps: numberSteps(steps),
          source: { format: "claude-code", ...(sessionId ? { session_id: sessionId } : {}) },
        },
      ],
      warnings,
    };
  },
};
