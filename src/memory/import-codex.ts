import { readFileSync } from "node:fs";
import { basename } from "node:path";
import {
  callKind,
  clipInput,
  firstJsonLine,
  isRecord,
  numberSteps,
  parseJsonLines,
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
 * Codex's rollout, `~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl`: `{timestamp, type,
 * payload}` lines. `session_meta` first; `response_item` payloads are the conversation (a
 * `message`, a `function_call` / `custom_tool_call` / `local_shell_call` and its `*_output` by
 * `call_id`); `event_msg` payloads report what the harness saw (`exec_command_end`,
 * `patch_apply_end`, and since 0.1xx `item_completed` with the command's exit code and status).
 */

const TOOLS: Record<string, CallKind> = {
  shell: "shell",
  exec_command: "shell",
  local_shell: "shell",
  container_exec: "shell",
  "container.exec": "shell",
  shell_command: "shell",
  apply_patch: "edit",
  update_plan: "plan",
  view_image: "read",
};

type Step = Omit<TrajectoryStep, "i">;

/** User messages Codex writes itself (context, instructions), not what the user typed. */
const INJECTED =
  /^\s*(<environment_context>|<user_instructions>|<permissions|<skills_instructions>|# AGENTS\.md instructions|<INSTRUCTIONS>|<turn_aborted>)/;

function messageText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map((b) => (isRecord(b) ? (str(b.text) ?? "") : ""))
    .filter((t) => t !== "")
    .join("\n");
}

/** The files an `apply_patch` envelope names (`*** Add File:`, `*** Update File:`, `*** Delete File:`, `*** Move to:`). */
export function patchEnvelopeFiles(patch: string): string[] {
  const files: string[] = [];
  for (const m of patch.matchAll(
    /^\*\*\* (?:Add|Update|Delete) File: (.+)$|^\*\*\* Move to: (.+)$/gm,
  )) {
    const file = (m[1] ?? m[2] ?? "").trim();
    if (file !== "" && !files.includes(file)) files.push(file);
  }
  return files;
}

/** The shell command a call ran: `exec_command {cmd}`, `shell {command: [argv]}` (`bash -lc X` is X). */
function shellCommand(args: Record<string, unknown>): string | undefined {
  const cmd = str(args.cmd) ?? str(args.command);
  if (cmd !== undefined) return cmd;
  const argv = Array.isArray(args.command) ? args.command.filter((a) => typeof a === "string") : [];
  if (argv.length === 0) return undefined;
  if (
    argv.length === 3 &&
    /(^|\/)(ba|z|da)?sh$/.test(argv[0] ?? "") &&
    /^-l?c$/.test(argv[1] ?? "")
  )
    return argv[2];
  return argv.join(" ");
}

/**
 * A tool output as Codex hands it to the model: a header (`Exit code: N` / `Process exited with
 * code N`, wall time, …) then `Output:` and the streams. Returns the code and the streams.
 */
function splitOutput(text: string): { exit_code?: number; output: string } {
  const head = /^(?:[\s\S]*?\n)?(?:Exit code: |Process exited with code )(-?\d+)\n/.exec(text);
  const body = /(?:^|\n)Output:\n?([\s\S]*)$/.exec(text);
  return {
    ...(head ? { exit_code: Number(head[1]) } : {}),
    output: head && body ? (body[1] ?? "") : text,
  };
}

function outputText(output: unknown): string {
  if (typeof output === "string") {
    // older rollouts: a JSON string `{"output": "...", "metadata": {"exit_code": 0}}`
    try {
      const v: unknown = JSON.parse(output);
      if (isRecord(v) && typeof v.output === "string") {
        const code = isRecord(v.metadata) ? v.metadata.exit_code : undefined;
        return typeof code === "number" ? `Exit code: ${code}\nOutput:\n${v.output}` : v.output;
      }
    } catch {
      // plain text
    }
    return output;
  }
  if (isRecord(output) && typeof output.content === "string") return output.content;
  return messageText(output);
}

/**
 * The change as the harness applied it, in git's diff format: `FileChange.changes` (0.1xx:
 * `{path: {type: "update", unified_diff}}`, `{type: "add", content}`) or `patch_apply_end.changes`
 * (older: `{path: {update: {unified_diff}}}`, `{add: {content}}`, `{delete: {content}}`).
 */
function appliedDiff(changes: Record<string, unknown>, cwd: string | undefined): string {
  const out: string[] = [];
  const lines = (text: string, mark: string) =>
    text === ""
      ? ""
      : `${text
          .replace(/\n$/, "")
          .split("\n")
          .map((l) => `${mark}${l}`)
          .join("\n")}\n`;
  for (const [abs, raw] of Object.entries(changes)) {
    if (!isRecord(raw)) continue;
    const path = sessionPath(abs, cwd);
    const kind =
      str(raw.type) ?? Object.keys(raw).find((k) => ["add", "update", "delete"].includes(k));
    const body = isRecord(raw[kind ?? ""]) ? (raw[kind ?? ""] as Record<string, unknown>) : raw;
    if (kind === "update" && typeof body.unified_diff === "string") {
      const moved = str(body.move_path);
      const to = moved !== undefined ? sessionPath(moved, cwd) : path;
      out.push(`--- a/${path}\n+++ b/${to}\n${body.unified_diff}`);
    } else if (kind === "add" && typeof body.content === "string") {
      const n = body.content.replace(/\n$/, "").split("\n").length;
      out.push(`--- /dev/null\n+++ b/${path}\n@@ -0,0 +1,${n} @@\n${lines(body.content, "+")}`);
    } else if (kind === "delete") {
      const content = str(body.content) ?? "";
      const n = content === "" ? 0 : content.replace(/\n$/, "").split("\n").length;
      out.push(`--- a/${path}\n+++ /dev/null\n@@ -1,${n} +0,0 @@\n${lines(content, "-")}`);
    }
  }
  return out.map((d) => (d.endsWith("\n") ? d : `${d}\n`)).join("");
}

export const codexImporter: TrajectoryImporter = {
  format: "codex",
  detect(_path, head) {
    const first = firstJsonLine(head);
    return first?.type === "session_meta" && isRecord(first.payload);
  },
  read(path) {
    const { records, warnings } = parseJsonLines(readFileSync(path, "utf8"), basename(path));
    const steps: Step[] = [];
    const calls = new Map<string, Step>();
    let sessionId: string | undefined;
    let cwd: string | undefined;
    for (const { line, value } of records) {
      if (!isRecord(value) || !isRecord(value.payload)) continue;
      const p = value.payload;
      const ts = str(value.timestamp);
      const at = ts ? { ts } : {};
      if (value.type === "session_meta") {
        sessionId ??= str(p.id) ?? str(p.session_id);
        cwd ??= str(p.cwd);
        continue;
      }
      if (value.type === "event_msg") {
        // the harness's own report of a call: exit code, failure, the change as applied
        const item = p.type === "item_completed" && isRecord(p.item) ? p.item : p;
        const id = str(item.id) ?? str(item.call_id);
        const step = id !== undefined ? calls.get(id) : undefined;
        if (step === undefined) continue;
        if (typeof item.exit_code === "number") step.exit_code = item.exit_code;
        if (step.call === "edit" && isRecord(item.changes)) {
          const applied = appliedDiff(item.changes, cwd);
          if (applied !== "") step.diff = clipOutput(applied);
        }
        if (item.status === "failed" || item.status === "declined" || item.success === false)
          step.is_error = true;
        else if (item.status === "completed" || item.success === true) step.is_error ??= false;
        continue;
      }
      if (value.type !== "response_item") continue;
      switch (p.type) {
        case "message": {
          const text = messageText(p.content);
          if (text.trim() === "") break;
          if (p.role === "user" && !INJECTED.test(text)) steps.push({ kind: "user", text, ...at });
          else if (p.role === "assistant") steps.push({ kind: "assistant", text, ...at });
          break;
        }
        case "function_call":
        case "custom_tool_call":
        case "local_shell_call": {
          const tool = str(p.name) ?? (p.type === "local_shell_call" ? "local_shell" : "tool");
          let args: Record<string, unknown> = {};
          if (p.type === "function_call") {
            try {
              const v: unknown = JSON.parse(str(p.arguments) ?? "{}");
              if (isRecord(v)) args = v;
            } catch {
              warnings.push(`${basename(path)}:${line}: ${tool} arguments are not JSON`);
            }
          } else if (p.type === "custom_tool_call") args = { input: str(p.input) ?? "" };
          else if (isRecord(p.action)) args = p.action;
          const call = callKind(TOOLS, tool);
          const step: Step = { kind: "tool", tool, call, ...at };
          if (call === "shell") {
            const command = shellCommand(args);
            if (command !== undefined) step.command = command;
          }
          if (call === "edit") {
            const patch = str(args.input) ?? str(args.patch) ?? "";
            step.paths = patchEnvelopeFiles(patch).map((f) => sessionPath(f, cwd));
            step.diff = clipOutput(patch);
          }
          if (call === "read" && str(args.path) !== undefined)
            step.paths = [sessionPath(str(args.path) ?? "", cwd)];
          const input = clipInput(args);
          if (input) step.input = input;
          steps.push(step);
          const id = str(p.call_id) ?? str(p.id);
          if (id !== undefined) calls.set(id, step);
          break;
        }
        case "function_call_output":
        case "custom_tool_call_output": {
          const id = str(p.call_id);
          const step = id !== undefined ? calls.get(id) : undefined;
          if (step === undefined) {
            warnings.push(`${basename(path)}:${line}: output for no known call (${id ?? "no id"})`);
            break;
          }
          const text = outputText(p.output);
          const split = splitOutput(text);
          step.output = clipOutput(split.output);
          if (split.exit_code !== undefined) step.exit_code ??= split.exit_code;
          // a hook's refusal is the harness's word that the call never ran
          if (/^Command blocked by \w+ hook/.test(text)) step.is_error = true;
          else if (
            step.exit_code !== undefined &&
            step.exit_code !== null &&
            step.is_error === undefined
          )
            step.is_error = step.exit_code !== 0;
          break;
        }
        default:
          break;
      }
    }
    return {
      runs: [
        {
          id: safeRunId(sessionId ?? basename(path, ".jsonl")),
          steps: numberSteps(steps),
          source: { format: "codex", ...(sessionId ? { session_id: sessionId } : {}) },
        },
      ],
      warnings,
    };
  },
};
