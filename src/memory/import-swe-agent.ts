import { existsSync, readFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { ErrorCode, parseJsonText, readInputFile, TimewarpError } from "../core/index.ts";
import { SWE_AGENT_READ_COMMANDS } from "./swe-agent-commands.ts";
import {
  type CallKind,
  clipOutput,
  type ImportedRun,
  type TrajectoryImporter,
  type TrajectoryStep,
} from "./trajectory.ts";

/**
 * SWE-agent (`.traj`) and mini-swe-agent (`.traj.json`) trajectories → trajectory steps.
 *
 * Both agents solve SWE-bench-style tasks: a problem statement, a repository, a final patch
 * (`info.submission`). The goal each run gets is the task's: the problem statement's first
 * sentence as the objective, and the SWE-bench rule "do not modify tests or configuration"
 * as the blacklist below (README.md, "Imported SWE-bench runs", says why each glob is there).
 */

/** The SWE-bench task rule as gitignore globs: test files and the packaging/test configuration. */
export const SWE_TASK_BLACKLIST: readonly string[] = [
  "tests/",
  "test/",
  "test_*.py",
  "*_test.py",
  "conftest.py",
  "setup.py",
  "setup.cfg",
  "pyproject.toml",
  "tox.ini",
  "pytest.ini",
  ".coveragerc",
  "requirements*.txt",
  ".github/",
];

/** The objective's length at most: the first sentence of an issue title is usually well below it. */
export const OBJECTIVE_MAX = 200;

/** The problem statement's first line (its first sentence when the line is long), clipped. */
export function objectiveOf(problem: string): string {
  const line =
    problem
      .split("\n")
      .map((l) => l.trim())
      .find((l) => l !== "") ?? "";
  let text = line;
  if (text.length > OBJECTIVE_MAX) {
    const end = text.search(/[.!?](\s|$)/);
    if (end > 0 && end < OBJECTIVE_MAX) text = text.slice(0, end + 1);
  }
  return text.length > OBJECTIVE_MAX ? `${text.slice(0, OBJECTIVE_MAX - 1)}…` : text;
}

/** A SWE-bench instance id: `<owner>__<repo>-<pull number>` (`django__django-11099`). */
export const SWE_BENCH_ID = /^[\w.-]+__[\w.-]+-\d+$/;

/**
 * The goal of a task: the objective from the problem statement; for a SWE-bench instance, its
 * rule (tests and configuration are not the fix) as the blacklist. Other tasks (SWE-agent's CTF
 * demonstrations, its toy test repository whose bug lives in `tests/`) state no such rule.
 */
export function sweTaskGoal(problem: string, instanceId: string): Record<string, unknown> {
  const objective = objectiveOf(problem);
  const swebench = SWE_BENCH_ID.test(instanceId);
  return {
    schema_version: 1,
    objective: objective === "" ? `resolve ${instanceId}` : objective,
    ...(swebench ? { blacklist: [...SWE_TASK_BLACKLIST], instance_id: instanceId } : {}),
  };
}

/** The issue text inside an agent's task message (`<pr_description>`, SWE-agent's `ISSUE:` block), else the whole message. */
export function problemStatementOf(message: string): string {
  const tagged =
    /<(pr_description|issue_description|issue|problem_statement)>([\s\S]*?)<\/\1>/.exec(message);
  if (tagged?.[2] !== undefined) {
    return tagged[2].replace(/^\s*Consider the following (PR description|issue):\s*/i, "").trim();
  }
  const issue = /ISSUE:\n([\s\S]*?)(\n\s*INSTRUCTIONS:|$)/.exec(message);
  if (issue?.[1] !== undefined) return issue[1].trim();
  return message.trim();
}

function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content))
    return content
      .map((p) =>
        typeof p === "string"
          ? p
          : typeof p === "object" &&
              p !== null &&
              typeof (p as { text?: unknown }).text === "string"
            ? (p as { text: string }).text
            : "",
      )
      .join("");
  return "";
}

function asRecord(v: unknown): Record<string, unknown> | undefined {
  return typeof v === "object" && v !== null && !Array.isArray(v)
    ? (v as Record<string, unknown>)
    : undefined;
}

function readJson(path: string, what: string): Record<string, unknown>;
function readJson(path: string, what: string, arrays: true): Record<string, unknown> | unknown[];
function readJson(path: string, what: string, arrays = false): Record<string, unknown> | unknown[] {
  const text = readInputFile(path, { what }).toString("utf8");
  const value = parseJsonText(
    text,
    (reason) =>
      new TimewarpError(ErrorCode.INVALID_INPUT, `${path}: not JSON (${reason})`, {
        data: { input: path },
      }),
  );
  if (arrays && Array.isArray(value)) return value;
  const obj = asRecord(value);
  if (obj === undefined)
    throw new TimewarpError(ErrorCode.INVALID_INPUT, `${path}: expected a JSON object`, {
      data: { input: path },
    });
  return obj;
}

/**
 * The SWE-bench verdict beside a trajectory, in report.json's shape `{ "<id>": { resolved } }`:
 * `report.json` or `<id>.report.json` beside the file, the experiments layout
 * (`trajs/<id>/<id>.traj.json` ↔ `logs/<id>/report.json`, `trajs/<id>.traj` ↔ `logs/<id>/report.json`),
 * or `results/results.json` (`{ "resolved": [ids], … }`) one level up from `trajs/`.
 */
export function findVerdict(
  path: string,
  id: string,
  warnings: string[],
): Record<string, unknown> | undefined {
  const dir = dirname(path);
  const candidates = [
    join(dir, "report.json"),
    join(dir, `${id}.report.json`),
    join(dir, "..", "..", "logs", id, "report.json"),
    join(dir, "..", "logs", id, "report.json"),
  ];
  for (const c of candidates) {
    if (!existsSync(c)) continue;
    let value: unknown;
    try {
      value = JSON.parse(readFileSync(c, "utf8"));
    } catch {
      warnings.push(`${c}: not JSON (verdict ignored)`);
      continue;
    }
    const obj = asRecord(value);
    const inner = asRecord(obj?.[id]);
    if (inner !== undefined && typeof inner.resolved === "boolean") return { [id]: inner };
    if (obj !== undefined && typeof obj.resolved === "boolean") return { [id]: obj };
    warnings.push(`${c}: no "resolved" flag for ${id} (verdict ignored)`);
  }
  for (const results of [join(dir, "..", "results", "results.json")]) {
    if (!existsSync(results)) continue;
    try {
      const obj = asRecord(JSON.parse(readFileSync(results, "utf8")));
      const resolved = obj?.resolved;
      if (!Array.isArray(resolved)) continue;
      if (resolved.includes(id)) return { [id]: { resolved: true, source: "results.json" } };
      const unknown = ["no_generation", "no_logs"].some((k) => {
        const list = obj?.[k];
        return Array.isArray(list) && list.includes(id);
      });
      if (!unknown) return { [id]: { resolved: false, source: "results.json" } };
    } catch {
      warnings.push(`${results}: not JSON (verdict ignored)`);
    }
  }
  return undefined;
}

/**
 * Split a tool invocation into words as a POSIX shell would quote them (single quotes literal,
 * double quotes with backslash escapes, words across lines): SWE-agent's tools take quoted,
 * multi-line arguments (`str_replace_editor str_replace f --old_str '…' --new_str '…'`).
 * This reads the agent's own tool syntax; shell commands themselves are left to the extractor.
 */
export function splitToolArgs(text: string): string[] {
  const words: string[] = [];
  let cur = "";
  let inWord = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i] as string;
    if (ch === "'") {
      const end = text.indexOf("'", i + 1);
      const stop = end < 0 ? text.length : end;
      cur += text.slice(i + 1, stop);
      i = stop;
      inWord = true;
    } else if (ch === '"') {
      i++;
      while (i < text.length && text[i] !== '"') {
        if (text[i] === "\\" && i + 1 < text.length && '"\\$`'.includes(text[i + 1] as string)) i++;
        cur += text[i];
        i++;
      }
      inWord = true;
    } else if (ch === "\\" && i + 1 < text.length) {
      cur += text[i + 1];
      i++;
      inWord = true;
    } else if (/\s/.test(ch)) {
      if (inWord) words.push(cur);
      cur = "";
      inWord = false;
    } else {
      cur += ch;
      inWord = true;
    }
  }
  if (inWord) words.push(cur);
  return words;
}

function lines(prefix: "-" | "+", text: string): string[] {
  if (text === "") return [];
  return text
    .replace(/\n$/, "")
    .split("\n")
    .map((l) => `${prefix}${l}`);
}

/** A path as the agent named it, relative to the work tree when it is inside it. */
export function relativeTo(path: string, workdir: string | undefined): string {
  const p = path.replace(/\r$/, "");
  if (workdir !== undefined && workdir !== "" && workdir !== "/") {
    const root = workdir.endsWith("/") ? workdir : `${workdir}/`;
    if (p.startsWith(root)) return p.slice(root.length);
  }
  return p.replace(/^\.\//, "");
}

/** What SWE-agent's harness answers when it rejected an edit (the file is unchanged). */
const REJECTED =
  /^(Your proposed edit has introduced new syntax error|No replacement was performed|ERROR:|Usage: |The path \S+ does not exist)/;

interface SweState {
  open_file?: string;
  working_dir?: string;
}

function stateOf(raw: unknown): SweState {
  let v = raw;
  if (typeof v === "string") {
    try {
      v = JSON.parse(v);
    } catch {
      return {};
    }
  }
  const o = asRecord(v) ?? {};
  const s: SweState = {};
  if (typeof o.open_file === "string" && o.open_file !== "n/a") s.open_file = o.open_file;
  if (typeof o.working_dir === "string") s.working_dir = o.working_dir;
  return s;
}

const SWE_READ = new Set(SWE_AGENT_READ_COMMANDS);
const SWE_EDIT = new Set(["edit", "create", "insert", "append"]);

/** One SWE-agent action → the tool call's kind, paths and diff (from the tool's name and arguments). */
export function classifySweAction(
  action: string,
  state: SweState,
  previousOpen: string | undefined,
  /** The function call's own JSON arguments when the file keeps them (`tool_calls`): exact, unlike the rendered action. */
  callArgs?: Record<string, unknown>,
): Pick<TrajectoryStep, "tool" | "call" | "command" | "paths" | "diff"> {
  const text = action.replace(/\r\n/g, "\n").trim();
  const head = text.split(/\s/, 1)[0] ?? "";
  const wd = state.working_dir;
  const open = previousOpen ?? state.open_file;
  const rel = (p: string | undefined) => (p === undefined ? undefined : relativeTo(p, wd));
  const withPaths = (
    call: CallKind,
    tool: string,
    paths: (string | undefined)[],
    diff?: string[],
  ): ReturnType<typeof classifySweAction> => {
    const ps = [...new Set(paths.filter((p): p is string => p !== undefined && p !== ""))];
    return {
      tool,
      call,
      ...(ps.length > 0 ? { paths: ps } : {}),
      ...(diff !== undefined && diff.length > 0 ? { diff: diff.join("\n") } : {}),
    };
  };
  if (head === "submit") return { tool: "submit", call: "other" };
  if (head === "str_replace_editor") {
    const args = splitToolArgs(text);
    const fromCall = (name: string): string | undefined =>
      typeof callArgs?.[name] === "string" ? (callArgs[name] as string) : undefined;
    const sub = fromCall("command") ?? args[1] ?? "";
    const file = rel(fromCall("path") ?? args[2]);
    const opt = (name: string): string | undefined => {
      const exact = fromCall(name);
      if (exact !== undefined) return exact;
      const k = args.indexOf(`--${name}`);
      return k >= 0 ? args[k + 1] : undefined;
    };
    if (sub === "view") return withPaths("read", head, [file]);
    if (sub === "create")
      return withPaths("edit", head, [file], lines("+", opt("file_text") ?? ""));
    if (sub === "str_replace")
      return withPaths(
        "edit",
        head,
        [file],
        [...lines("-", opt("old_str") ?? ""), ...lines("+", opt("new_str") ?? "")],
      );
    if (sub === "insert") return withPaths("edit", head, [file], lines("+", opt("new_str") ?? ""));
    if (sub === "undo_edit") return withPaths("edit", head, [file]);
    return withPaths("other", head, [file]);
  }
  if (SWE_READ.has(head)) {
    const args = splitToolArgs(text.split("\n")[0] ?? "");
    if (head === "open") return withPaths("read", head, [rel(args[1])]);
    if (head === "search_file") return withPaths("read", head, [rel(args[2] ?? open)]);
    if (head === "search_dir" || head === "find_file")
      return withPaths("read", head, [rel(args[2])]);
    return withPaths("read", head, [rel(open)]);
  }
  if (SWE_EDIT.has(head)) {
    const first = text.split("\n")[0] ?? "";
    const body = text.split("\n").slice(1);
    if (body.length > 0 && /^end_of_(edit|insert|append)$/.test(body[body.length - 1] ?? ""))
      body.pop();
    if (head === "create") return withPaths("edit", head, [rel(splitToolArgs(first)[1])]);
    // `edit 'search' 'replace'` (windowed replace) or `edit N:M` + body on the open file
    const quoted = /^\w+\s+['"]/.test(text) ? splitToolArgs(text).slice(1) : [];
    if (head === "edit" && quoted.length >= 2)
      return withPaths(
        "edit",
        head,
        [rel(open)],
        [...lines("-", quoted[0] ?? ""), ...lines("+", quoted[1] ?? "")],
      );
    if (quoted.length >= 1)
      return withPaths("edit", head, [rel(open)], lines("+", quoted[0] ?? ""));
    return withPaths("edit", head, [rel(open)], lines("+", body.join("\n")));
  }
  return { tool: "bash", call: "shell", command: text };
}

function problemFromHistory(history: unknown): string | undefined {
  if (!Array.isArray(history)) return undefined;
  for (const h of history) {
    const o = asRecord(h);
    if (o?.role !== "user" || o.is_demo === true) continue;
    const text = textOf(o.content);
    if (text.startsWith("Here is a demonstration")) continue;
    if (/<pr_description>|<issue|ISSUE:|<problem_statement>/.test(text))
      return problemStatementOf(text);
  }
  for (const h of history) {
    const o = asRecord(h);
    if (o?.role === "user" && o.is_demo !== true) return problemStatementOf(textOf(o.content));
  }
  return undefined;
}

function idFromPath(path: string, suffix: RegExp): string {
  return basename(path).replace(suffix, "") || "run";
}

function safeId(id: string): string {
  return id.replace(/[^A-Za-z0-9._-]/g, "_");
}

function finish(
  path: string,
  id: string,
  format: "swe-agent" | "mini-swe-agent",
  steps: TrajectoryStep[],
  info: Record<string, unknown> | undefined,
  problem: string | undefined,
  warnings: string[],
): ImportedRun {
  const run: ImportedRun = {
    id: safeId(id),
    steps,
    source: {
      format,
      session_id: id,
      ...(typeof info?.exit_status === "string" ? { exit_status: info.exit_status } : {}),
    },
  };
  const submission = typeof info?.submission === "string" ? info.submission : undefined;
  // a CTF task submits a flag, not a patch
  if (submission !== undefined && /^(diff --git |--- )/m.test(submission))
    run.patch = `${submission.replace(/\r\n/g, "\n").replace(/^\n+/, "").replace(/\n*$/, "")}\n`;
  if (problem !== undefined) run.goal = sweTaskGoal(problem, id);
  const report = findVerdict(path, id, warnings);
  if (report !== undefined) run.report = report;
  return run;
}

/** SWE-agent `.traj`: `trajectory` (action, observation, thought, state), `history`, `info`. */
export const sweAgentImporter: TrajectoryImporter = {
  format: "swe-agent",
  detect(path, head) {
    if (/"trajectory"\s*:\s*\[/.test(head))
      return path.endsWith(".traj") || /"observation"\s*:/.test(head);
    // a demonstration with only `history`: SWE-agent's message_type / action fields
    return path.endsWith(".traj") && /"history"\s*:\s*\[/.test(head);
  },
  read(path) {
    const warnings: string[] = [];
    const doc = readJson(path, "SWE-agent trajectory");
    // a demonstration may hold only `history` (assistant messages with their action, then the tool's answer)
    let trajectory: unknown[];
    if (Array.isArray(doc.trajectory)) trajectory = doc.trajectory;
    else if (Array.isArray(doc.history)) trajectory = stepsFromHistory(doc.history);
    else
      throw new TimewarpError(
        ErrorCode.INVALID_INPUT,
        `${path}: no "trajectory" or "history" array`,
        {
          data: { input: path },
        },
      );
    const id = idFromPath(path, /\.traj(\.json)?$/);
    const problem = problemFromHistory(doc.history);
    const steps: TrajectoryStep[] = [];
    if (problem !== undefined) steps.push({ i: 0, kind: "user", text: clipOutput(problem) });
    let open: string | undefined;
    trajectory.forEach((raw, k) => {
      const s = asRecord(raw);
      if (s === undefined || typeof s.action !== "string") {
        warnings.push(`${path}: trajectory[${k}] has no action (skipped)`);
        return;
      }
      const state = stateOf(s.state);
      const thought = typeof s.thought === "string" ? s.thought.trim() : "";
      if (thought !== "")
        steps.push({ i: steps.length, kind: "assistant", text: clipOutput(thought) });
      if (s.action.trim() === "") return;
      const call = classifySweAction(s.action, state, open, callArguments(s.tool_calls));
      const observation =
        typeof s.observation === "string" ? s.observation.replace(/\r\n/g, "\n") : "";
      const step: TrajectoryStep = {
        i: steps.length,
        kind: "tool",
        ...call,
        input: { action: clipOutput(s.action, 4000) },
        output: clipOutput(observation),
      };
      if ((call.call === "edit" || call.call === "read") && REJECTED.test(observation.trim()))
        step.is_error = true;
      steps.push(step);
      // the open file, from the actions themselves: SWE-agent 0.x records the state before a
      // step, 1.x the state after it, so `state.open_file` is only the fallback
      const first = call.paths?.[0];
      if (/^(open|create)\b/.test(s.action.trim()) && first !== undefined)
        open = first.startsWith("/") ? first : join(state.working_dir ?? "", first);
      else if (open === undefined) open = state.open_file;
    });
    const info = asRecord(doc.info);
    return { runs: [finish(path, id, "swe-agent", steps, info, problem, warnings)], warnings };
  },
};

/** The first function call's arguments (`tool_calls[0].function.arguments`, a JSON string or object). */
function callArguments(toolCalls: unknown): Record<string, unknown> | undefined {
  if (!Array.isArray(toolCalls)) return undefined;
  const fn = asRecord(asRecord(toolCalls[0])?.function);
  const a = fn?.arguments;
  if (typeof a === "string") {
    try {
      return asRecord(JSON.parse(a));
    } catch {
      return undefined;
    }
  }
  return asRecord(a);
}

/** A history-only SWE-agent file as trajectory entries: each assistant action with the next tool/user message as its observation. */
function stepsFromHistory(history: unknown[]): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  history.forEach((raw, k) => {
    const h = asRecord(raw);
    if (h?.role !== "assistant" || typeof h.action !== "string" || h.is_demo === true) return;
    const next = asRecord(history[k + 1]);
    out.push({
      action: h.action,
      tool_calls: h.tool_calls,
      thought: typeof h.thought === "string" ? h.thought : textOf(h.content),
      observation:
        next !== undefined && (next.role === "tool" || next.role === "user")
          ? textOf(next.content)
          : "",
    });
  });
  return out;
}

/** The command block of an answer: ```bash, or ```mswea_bash_command in newer prompts. */
const BASH_BLOCK = /```(?:bash|mswea_bash_command)\s*\n([\s\S]*?)\n```/g;

/** The `<returncode>` and output of a mini-swe-agent observation message. */
export function readMiniObservation(text: string): {
  exit_code: number | null;
  output: string;
  timed_out: boolean;
} {
  const rc = /<returncode>\s*(-?\d+)\s*<\/returncode>/.exec(text);
  const timed_out = rc === null && /timed out and has been killed/.test(text);
  let output = text.replace(/<returncode>[\s\S]*?<\/returncode>\n?/, "");
  output = output.replace(/<warning>[\s\S]*?<\/warning>\n?/g, "");
  output = output
    .replace(/<\/?(output|output_head|output_tail)>\n?/g, "")
    .replace(/<elided_chars>\s*(\d+)[^<]*<\/elided_chars>/g, "\n… [$1 characters elided] …\n");
  return { exit_code: rc?.[1] !== undefined ? Number(rc[1]) : null, output, timed_out };
}

/** mini-swe-agent `.traj.json`: chat `messages` (a ```bash block per assistant message, the observation in the next user message), `info`. */
export const miniSweAgentImporter: TrajectoryImporter = {
  format: "mini-swe-agent",
  detect(path, head) {
    if (/"trajectory"\s*:\s*\[/.test(head)) return false;
    // a long submission can push `messages` past the head: the name and `info` tell then
    if (path.endsWith(".traj.json"))
      return /"messages"\s*:|"mini_version"|"exit_status"|^\s*\[\s*\{\s*"role"/.test(head);
    return (
      /"mini_version"|"trajectory_format"\s*:\s*"mini/.test(head) && /"messages"\s*:/.test(head)
    );
  },
  read(path) {
    const warnings: string[] = [];
    const doc = readJson(path, "mini-swe-agent trajectory", true);
    // the first trajectories were a bare array of messages
    const messages = Array.isArray(doc) ? doc : doc.messages;
    if (!Array.isArray(messages))
      throw new TimewarpError(ErrorCode.INVALID_INPUT, `${path}: no "messages" array`, {
        data: { input: path },
      });
    const top = Array.isArray(doc) ? {} : doc;
    const id =
      typeof top.instance_id === "string" && top.instance_id !== ""
        ? top.instance_id
        : idFromPath(path, /\.traj\.json$/);
    const steps: TrajectoryStep[] = [];
    let problem: string | undefined;
    /** Tool steps still waiting for their observation, oldest first (keyed by tool_call_id when given). */
    const pending: { step: TrajectoryStep; callId?: string }[] = [];
    const observe = (step: TrajectoryStep, text: string) => {
      const o = readMiniObservation(text);
      step.output = clipOutput(o.output);
      step.exit_code = o.exit_code;
      if (o.timed_out) step.is_error = true;
    };
    messages.forEach((raw, k) => {
      const m = asRecord(raw);
      if (m === undefined || typeof m.role !== "string") {
        warnings.push(`${path}: messages[${k}] has no role (skipped)`);
        return;
      }
      const text = textOf(m.content);
      if (m.role === "system") return;
      if (m.role === "user" || m.role === "tool") {
        if (problem === undefined && m.role === "user") {
          problem = problemStatementOf(text);
          steps.push({ i: steps.length, kind: "user", text: clipOutput(problem) });
          return;
        }
        const byId =
          typeof m.tool_call_id === "string"
            ? pending.findIndex((p) => p.callId === m.tool_call_id)
            : -1;
        const at = byId >= 0 ? byId : pending.length > 0 ? 0 : -1;
        const waiting = at >= 0 ? pending.splice(at, 1)[0] : undefined;
        if (waiting !== undefined) observe(waiting.step, text);
        else steps.push({ i: steps.length, kind: "user", text: clipOutput(text) });
        return;
      }
      if (m.role !== "assistant") return;
      pending.length = 0; // an unanswered call (a format error ended it) has no observation
      const toolCalls = Array.isArray(m.tool_calls) ? m.tool_calls : [];
      const commands: { command: string; callId?: string }[] = [];
      for (const c of toolCalls) {
        const fn = asRecord(asRecord(c)?.function);
        let command: string | undefined;
        try {
          const a = typeof fn?.arguments === "string" ? JSON.parse(fn.arguments) : fn?.arguments;
          command =
            typeof asRecord(a)?.command === "string" ? (asRecord(a)?.command as string) : undefined;
        } catch {
          warnings.push(`${path}: messages[${k}] tool call arguments are not JSON (skipped)`);
        }
        const callId = asRecord(c)?.id;
        if (command !== undefined)
          commands.push({ command, ...(typeof callId === "string" ? { callId } : {}) });
      }
      let prose = text;
      if (commands.length === 0) {
        const blocks = [...text.matchAll(BASH_BLOCK)];
        // mini-swe-agent runs an answer only when it holds exactly one bash block
        if (blocks.length === 1 && blocks[0]?.[1] !== undefined) {
          commands.push({ command: blocks[0][1] });
          prose = text.slice(0, blocks[0].index).trim();
        }
      }
      prose = prose.replace(/^THOUGHT:\s*/, "").trim();
      if (prose !== "") steps.push({ i: steps.length, kind: "assistant", text: clipOutput(prose) });
      for (const c of commands) {
        const step: TrajectoryStep = {
          i: steps.length,
          kind: "tool",
          tool: "bash",
          call: "shell",
          command: c.command,
        };
        steps.push(step);
        pending.push({ step, ...(c.callId !== undefined ? { callId: c.callId } : {}) });
      }
    });
    const info = asRecord(top.info);
    return { runs: [finish(path, id, "mini-swe-agent", steps, info, problem, warnings)], warnings };
  },
};
