import { readFileSync } from "node:fs";
import { basename } from "node:path";
import {
  callKind,
  clipInput,
  isRecord,
  numberSteps,
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
 * `opencode export <sessionID>` (OpenCode keeps sessions in its database under
 * `~/.local/share/opencode/`; the export is how a user gets one out): one JSON document,
 * `{info: {id: "ses_…", directory, title, …}, messages: [{info: {role, time}, parts}]}`. A part
 * is `text`, `reasoning`, `step-start`/`step-finish`, `patch`, or `tool` with `tool` (its name)
 * and `state: {status, input, output | error, metadata, time}`.
 */

const TOOLS: Record<string, CallKind> = {
  bash: "shell",
  edit: "edit",
  write: "edit",
  patch: "edit",
  apply_patch: "edit",
  multiedit: "edit",
  read: "read",
  grep: "read",
  glob: "read",
  list: "read",
  todowrite: "plan",
  todoread: "plan",
};

type Step = Omit<TrajectoryStep, "i">;

function isoTime(ms: unknown): string | undefined {
  return typeof ms === "number" && Number.isFinite(ms) ? new Date(ms).toISOString() : undefined;
}

function toolStep(part: Record<string, unknown>, cwd: string | undefined): Step {
  const tool = str(part.tool) ?? "tool";
  const state = isRecord(part.state) ? part.state : {};
  const input = isRecord(state.input) ? state.input : {};
  const meta = isRecord(state.metadata) ? state.metadata : {};
  const call = callKind(TOOLS, tool);
  const status = str(state.status);
  const output = str(state.output) ?? str(state.error) ?? "";
  const ts = isoTime(isRecord(state.time) ? state.time.start : undefined);
  const step: Step = {
    kind: "tool",
    tool,
    call,
    ...(clipInput(input) ? { input: clipInput(input) } : {}),
    ...(status === "completed" || status === "error" ? { output: clipOutput(output) } : {}),
    ...(status === "error"
      ? { is_error: true }
      : status === "completed"
        ? { is_error: false }
        : {}),
    ...(ts ? { ts } : {}),
  };
  if (call === "shell") {
    if (str(input.command) !== undefined) step.command = str(input.command);
    // the command's own output and code, beside what the model was shown
    if (typeof meta.exit === "number") step.exit_code = meta.exit;
    else if (status === "error") step.exit_code = null;
  }
  const file = str(input.filePath) ?? str(input.path);
  if ((call === "edit" || call === "read") && file !== undefined)
    step.paths = [sessionPath(file, cwd)];
  if (call === "edit") {
    const diff = str(meta.diff);
    if (diff !== undefined && diff !== "") step.diff = clipOutput(diff);
    else if (tool === "edit")
      step.diff = replacementDiff(str(input.oldString) ?? "", str(input.newString) ?? "");
    else if (tool === "write") step.diff = replacementDiff("", str(input.content) ?? "");
    else if (str(input.patchText) !== undefined) step.diff = clipOutput(str(input.patchText) ?? "");
  }
  return step;
}

export const opencodeImporter: TrajectoryImporter = {
  format: "opencode",
  detect(_path, head) {
    return /^\s*\{\s*"info"\s*:\s*\{/.test(head) && /"id"\s*:\s*"ses_/.test(head);
  },
  read(path) {
    const name = basename(path);
    let doc: unknown;
    try {
      doc = JSON.parse(readFileSync(path, "utf8"));
    } catch (error) {
      return {
        runs: [],
        warnings: [
          `${name}: not a JSON document (${error instanceof Error ? error.message : String(error)})`,
        ],
      };
    }
    const info = isRecord(doc) && isRecord(doc.info) ? doc.info : {};
    const messages = isRecord(doc) && Array.isArray(doc.messages) ? doc.messages : [];
    const sessionId = str(info.id);
    const cwd = str(info.directory);
    const warnings: string[] = [];
    const steps: Step[] = [];
    messages.forEach((m, k) => {
      const mi = isRecord(m) && isRecord(m.info) ? m.info : undefined;
      if (mi === undefined || !isRecord(m) || !Array.isArray(m.parts)) {
        warnings.push(`${name}: messages[${k}] is not {info, parts}, skipped`);
        return;
      }
      const role = mi.role === "user" ? "user" : "assistant";
      const ts = isoTime(isRecord(mi.time) ? mi.time.created : undefined);
      for (const part of m.parts) {
        if (!isRecord(part)) continue;
        if (part.type === "text" && part.synthetic !== true) {
          const text = str(part.text) ?? "";
          if (text.trim() !== "") steps.push({ kind: role, text, ...(ts ? { ts } : {}) });
        } else if (part.type === "tool") steps.push(toolStep(part, cwd));
      }
    });
    return {
      runs: [
        {
          id: safeRunId(sessionId ?? name.replace(/\.json$/, "")),
          steps: numberSteps(steps),
          source: { format: "opencode", ...(sessionId ? { session_id: sessionId } : {}) },
        },
      ],
      warnings,
    };
  },
};
