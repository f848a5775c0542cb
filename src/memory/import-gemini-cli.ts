import { readFileSync } from "node:fs";
import { basename } from "node:path";
import { geminiText, readGeminiRecording } from "../timemachine/index.ts";
import {
  callKind,
  clipInput,
  firstJsonLine,
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
 * Gemini CLI's chat recording, `~/.gemini/tmp/<project hash or name>/chats/session-*.json(l)`:
 * messages `{id, type: user|gemini|info|error, content, toolCalls}`; each tool call carries its
 * args, its result (`functionResponse.response.output` or `.error`) and a `status`. The
 * recording is read by the time machine's reader (`readGeminiRecording`), which keeps the last
 * version of each message.
 */

const TOOLS: Record<string, CallKind> = {
  run_shell_command: "shell",
  replace: "edit",
  edit: "edit",
  write_file: "edit",
  read_file: "read",
  read_many_files: "read",
  glob: "read",
  search_file_content: "read",
  grep_search: "read",
  grep: "read",
  list_directory: "read",
  ls: "read",
  write_todos: "plan",
};

type Step = Omit<TrajectoryStep, "i">;

/** The result the model got: each function response's output, or its error. */
function callResult(call: Record<string, unknown>): { text: string; error: boolean } {
  if (!Array.isArray(call.result)) return { text: str(call.resultDisplay) ?? "", error: false };
  let error = false;
  const texts = call.result.map((part) => {
    const fr = isRecord(part) && isRecord(part.functionResponse) ? part.functionResponse : {};
    const body = isRecord(fr.response) ? fr.response : {};
    if (typeof body.error === "string") error = true;
    return str(body.output) ?? str(body.error) ?? "";
  });
  return { text: texts.join("\n"), error };
}

function callPaths(args: Record<string, unknown>, cwd: string | undefined): string[] {
  const one =
    str(args.file_path) ?? str(args.absolute_path) ?? str(args.path) ?? str(args.dir_path);
  const many = Array.isArray(args.paths) ? args.paths.filter((p) => typeof p === "string") : [];
  return [...(one !== undefined ? [one] : []), ...many].map((p) => sessionPath(p, cwd));
}

export const geminiCliImporter: TrajectoryImporter = {
  format: "gemini-cli",
  detect(_path, head) {
    const first = firstJsonLine(head);
    if (first !== undefined && typeof first.projectHash === "string") return true;
    // the older one-document recording (its first line is `{`)
    return /^\s*\{/.test(head) && /"projectHash"\s*:/.test(head) && /"messages"\s*:/.test(head);
  },
  read(path) {
    const text = readFileSync(path, "utf8");
    const name = basename(path);
    const recording = readGeminiRecording(text);
    if (recording === undefined)
      return { runs: [], warnings: [`${name}: no Gemini CLI messages found`] };
    const warnings = recording.badLines.map((n) => `${name}:${n}: not a JSON record, skipped`);
    let sessionId: string | undefined;
    try {
      const head = firstJsonLine(text) ?? (JSON.parse(text) as Record<string, unknown>);
      sessionId = str(head.sessionId);
    } catch {
      // no header: the file name is the id
    }
    const steps: Step[] = [];
    for (const m of recording.messages) {
      const ts = str(m.timestamp);
      const at = ts ? { ts } : {};
      const text = geminiText(m.content);
      if (m.type === "user") {
        // the setup context the CLI sends first, and function responses, are not prompts
        if (text.trim() !== "" && !/^\s*<session_context>/.test(text))
          steps.push({ kind: "user", text, ...at });
        continue;
      }
      if (m.type !== "gemini") continue;
      if (text.trim() !== "") steps.push({ kind: "assistant", text, ...at });
      for (const call of Array.isArray(m.toolCalls) ? m.toolCalls : []) {
        if (!isRecord(call)) continue;
        const tool = str(call.name) ?? "tool";
        const args = isRecord(call.args) ? call.args : {};
        const kind = callKind(TOOLS, tool);
        const result = callResult(call);
        const output = result.text.replace(
          /^<untrusted_context>\n?|\n?<\/untrusted_context>$/g,
          "",
        );
        const step: Step = {
          kind: "tool",
          tool,
          call: kind,
          ...(clipInput(args) ? { input: clipInput(args) } : {}),
          output: clipOutput(output),
          is_error: call.status === "error" || call.status === "cancelled" || result.error,
          ...(str(call.timestamp) ? { ts: str(call.timestamp) } : at),
        };
        if (kind === "shell") {
          if (str(args.command) !== undefined) step.command = str(args.command);
          const code = /^Exit Code: (-?\d+)$/m.exec(output);
          step.exit_code = code ? Number(code[1]) : step.is_error ? null : 0;
        }
        if (kind === "edit" || kind === "read") {
          const paths = callPaths(args, undefined);
          if (paths.length > 0) step.paths = paths;
        }
        if (tool === "replace" || tool === "edit")
          step.diff = replacementDiff(str(args.old_string) ?? "", str(args.new_string) ?? "");
        else if (tool === "write_file") step.diff = replacementDiff("", str(args.content) ?? "");
        steps.push(step);
      }
    }
    return {
      runs: [
        {
          id: safeRunId(sessionId ?? basename(path).replace(/\.jsonl?$/, "")),
          steps: numberSteps(steps),
          source: { format: "gemini-cli", ...(sessionId ? { session_id: sessionId } : {}) },
        },
      ],
      warnings,
    };
  },
};
