// timewarp for OpenCode: a session snapshot when a session is created, a turn checkpoint on each
// user message (what `timewarp rewind` goes back to), the goal and the pattern cards from earlier
// runs that fit the task in the system prompt, pre-images and drift
// guards before the agent's edits, ledger records after its edits and shell commands, the
// session's end, and this session's chat exported (through OpenCode's client API, since a tool
// call carries no transcript) before the MCP server's issue_report reads it. The tools
// themselves (timewarp_travel, issue_report, ApplyEditBlock, …) have one home: the MCP server
// that `timewarp install opencode` puts in opencode.json.
//
// Install: `timewarp install opencode` copies this file to .opencode/plugins/timewarp.js.
// Dependency-free: it shells out to the `timewarp` CLI (`--json`).

import { spawn, spawnSync } from "node:child_process";
import { mkdirSync, renameSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";

// `timewarp install opencode --command "…"` rewrites this line.
const TIMEWARP_COMMAND = ["timewarp"];

// Hooks go through `timewarp-hook`, the shell client npm installs beside `timewarp`: when the
// project's watch daemon serves hooks, it hands them over without starting Node. Only for a
// plain `timewarp` command or a path to it or to the package's `bin/timewarp.cjs` (as install
// writes it; not `npx …`), and not on Windows; where it is missing, the CLI.
const HOOK_CLIENT =
  process.platform !== "win32" &&
  TIMEWARP_COMMAND.length === 1 &&
  /(^|\/)timewarp(\.cjs)?$/.test(TIMEWARP_COMMAND[0])
    ? TIMEWARP_COMMAND[0].replace(/(\.cjs)?$/, "-hook")
    : null;

/** OpenCode's tool names → the names `timewarp hook` knows (Claude Code's). */
const TOOL_NAMES = {
  edit: "Edit",
  write: "Write",
  multiedit: "MultiEdit",
  patch: "apply_patch",
  apply_patch: "apply_patch",
  bash: "Bash",
};

function runTimewarp(args, options) {
  return run([...TIMEWARP_COMMAND, ...args], options);
}

/** Run a command; `code: -1` when it could not start (not installed). */
function run([bin, ...args], { cwd, input = "" }) {
  return new Promise((resolve) => {
    let stdout = "";
    let stderr = "";
    let child;
    try {
      child = spawn(bin, args, { cwd, stdio: ["pipe", "pipe", "pipe"] });
    } catch (error) {
      resolve({ code: -1, stdout, stderr: String(error) });
      return;
    }
    child.stdout.on("data", (d) => {
      stdout += d;
    });
    child.stderr.on("data", (d) => {
      stderr += d;
    });
    child.on("error", (error) => resolve({ code: -1, stdout, stderr: String(error) }));
    child.on("close", (code) => resolve({ code: code ?? -1, stdout, stderr }));
    child.stdin.on("error", () => undefined); // a command that did not start: reported above
    child.stdin.end(input);
  });
}

/**
 * The same, blocking: for a session end, which OpenCode does not wait for. Its `event` hooks are
 * called without being awaited, and a CLI like `opencode session delete` (or the process, at
 * exit) is gone before an asynchronous child has read its stdin. A run past the timeout is
 * killed and counts as failed, not as "could not start" (which would start it a second time).
 */
function runSync([bin, ...args], { cwd, input = "" }) {
  const res = spawnSync(bin, args, { cwd, input, encoding: "utf8", timeout: 30_000 });
  if (res.error !== undefined && res.error.code !== "ETIMEDOUT")
    return { code: -1, stdout: "", stderr: String(res.error) };
  return { code: res.status ?? 1, stdout: res.stdout ?? "", stderr: res.stderr ?? "" };
}

function parseJson(text) {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function safeName(id) {
  return String(id).replace(/[^A-Za-z0-9._-]/g, "_");
}

/** Where this session's chat is kept for issue_report (remembered as its transcript_path). */
function transcriptFile(directory, sessionID) {
  return join(directory, ".timewarp", "hooks", "opencode", `${safeName(sessionID)}.jsonl`);
}

/** OpenCode messages → Claude-Code-style JSONL, a transcript format timewarp parses. */
function messagesToJsonl(messages) {
  const lines = [];
  for (const m of messages) {
    const role = m?.info?.role === "assistant" ? "assistant" : "user";
    const content = [];
    const results = [];
    for (const part of m?.parts ?? []) {
      if (part.type === "text" && typeof part.text === "string" && !part.synthetic) {
        content.push({ type: "text", text: part.text });
      } else if (part.type === "tool") {
        const id = part.callID ?? part.id;
        content.push({ type: "tool_use", id, name: part.tool, input: part.state?.input ?? {} });
        const output = part.state?.output ?? part.state?.error;
        if (output !== undefined)
          results.push({ type: "tool_result", tool_use_id: id, content: String(output) });
      }
    }
    if (content.length > 0) lines.push(JSON.stringify({ type: role, message: { role, content } }));
    if (results.length > 0)
      lines.push(JSON.stringify({ type: "user", message: { role: "user", content: results } }));
  }
  return lines.join("\n") + (lines.length > 0 ? "\n" : "");
}

async function exportChat(client, directory, sessionID) {
  const res = await client.session.messages({ path: { id: sessionID } });
  const messages = Array.isArray(res) ? res : (res?.data ?? []);
  const file = transcriptFile(directory, sessionID);
  mkdirSync(dirname(file), { recursive: true });
  const temp = `${file}.tw-tmp-${process.pid}`;
  writeFileSync(temp, messagesToJsonl(messages));
  renameSync(temp, file);
  return file;
}

/**
 * OpenCode's tool arguments (camelCase: `edit` {filePath, oldString, newString, replaceAll},
 * `write` {filePath, content}, `multiedit` {filePath, edits[]}, `apply_patch` {patchText}) →
 * Claude Code's names, which the hook reads: the guard checks `new_string`/`content`/the patch
 * for test tampering, the ledger records `file_path`.
 */
function toolInput(name, args) {
  const a = args ?? {};
  const file_path = a.filePath ?? a.file_path ?? a.path;
  const edit = (e) => ({
    old_string: e?.oldString ?? e?.old_string,
    new_string: e?.newString ?? e?.new_string,
    replace_all: e?.replaceAll ?? e?.replace_all,
  });
  switch (name) {
    case "apply_patch":
      return { command: a.patchText ?? a.patch ?? a.input ?? "" };
    case "Bash":
      return { command: a.command ?? "" };
    case "Edit":
      return { file_path, ...edit(a) };
    case "Write":
      return { file_path, content: a.content };
    case "MultiEdit":
      return { file_path, edits: Array.isArray(a.edits) ? a.edits.map(edit) : [] };
    default:
      return { ...a, file_path };
  }
}

function hookPayload(directory, input, args, event) {
  const name = TOOL_NAMES[input.tool] ?? input.tool;
  return {
    session_id: input.sessionID,
    cwd: directory,
    hook_event_name: event,
    tool_name: name,
    tool_input: toolInput(name, args),
    tool_use_id: input.callID,
  };
}

async function hook(event, payload, directory) {
  const args = [event, "--agent", "opencode", "--json"];
  const options = { cwd: directory, input: JSON.stringify(payload) };
  let res = HOOK_CLIENT === null ? undefined : await run([HOOK_CLIENT, ...args], options);
  if (res === undefined || res.code === -1) res = await runTimewarp(["hook", ...args], options);
  return { code: res.code, result: parseJson(res.stdout), stderr: res.stderr };
}

/** `hook`, blocking (`runSync`). */
function hookSync(event, payload, directory) {
  const args = [event, "--agent", "opencode", "--json"];
  const options = { cwd: directory, input: JSON.stringify(payload) };
  let res = HOOK_CLIENT === null ? undefined : runSync([HOOK_CLIENT, ...args], options);
  if (res === undefined || res.code === -1)
    res = runSync([...TIMEWARP_COMMAND, "hook", ...args], options);
  return { code: res.code, result: parseJson(res.stdout), stderr: res.stderr };
}

/** OpenCode hands the tool's result to the model after this hook: the warning goes with it. */
function appendWarnings(output, warnings) {
  const text = warnings.filter((w) => typeof w === "string" && w !== "").join("\n");
  if (text === "" || output === null || typeof output !== "object") return;
  const before = typeof output.output === "string" ? output.output : "";
  output.output = before === "" ? text : `${before}\n\n${text}`;
}

export const TimewarpPlugin = async ({ client, directory }) => {
  /** callID → the args seen before the tool ran (the after hook does not always carry them). */
  const argsByCall = new Map();
  /** callID → the drift warning `tool.execute.before` got, for the model to read afterwards. */
  const warningsByCall = new Map();
  /**
   * Sessions this process started and has not ended. `opencode run` never deletes its session,
   * so they end when OpenCode disposes of the plugin, or at the latest when the process exits.
   */
  const openSessions = new Set();
  /**
   * Session starts under way (OpenCode does not wait for them): a tool call waits for them, and
   * so does an end, where it can.
   */
  const starting = new Set();
  /**
   * sessionID → what timewarp's memory offered it (the goal line, cards from earlier runs): the
   * session start's and each prompt's `context`. Each is offered once; the system-prompt hook
   * puts them in every request of the session, as OpenCode rebuilds the system prompt each time.
   */
  const contextBySession = new Map();
  const keepContext = (id, res) => {
    const text = res?.result?.context;
    if (typeof text !== "string" || text === "") return;
    const list = contextBySession.get(id) ?? [];
    list.push(text);
    contextBySession.set(id, list);
  };
  const endSession = (id, reason) => {
    openSessions.delete(id);
    contextBySession.delete(id);
    hookSync("session-end", { session_id: id, cwd: directory, reason }, directory);
  };
  const endOpenSessions = (reason) => {
    for (const id of [...openSessions]) endSession(id, reason);
  };
  const onExit = () => endOpenSessions("exit");
  process.on("exit", onExit);
  return {
    dispose: async () => {
      process.off("exit", onExit);
      await Promise.all(starting);
      endOpenSessions("dispose");
    },
    event: async ({ event }) => {
      if (event?.type === "session.created") {
        const id = event.properties?.info?.id;
        if (!id) return;
        openSessions.add(id);
        const started = hook(
          "session-start",
          {
            session_id: id,
            cwd: directory,
            source: "startup",
            transcript_path: transcriptFile(directory, id),
          },
          directory,
        );
        starting.add(started);
        keepContext(id, await started);
        starting.delete(started);
      } else if (event?.type === "session.deleted") {
        // Ended before this handler returns: nobody waits for it.
        const id = event.properties?.info?.id ?? event.properties?.sessionID;
        if (id) endSession(id, "deleted");
      }
    },
    // Each user message is a turn: OpenCode awaits this before the model sees the message, so
    // the checkpoint holds the workspace as the prompt found it. It never stops the message.
    "chat.message": async (input, output) => {
      const id = input?.sessionID ?? output?.message?.sessionID;
      if (!id) return;
      // after the session's start, whose handler OpenCode does not await
      if (starting.size > 0) await Promise.all(starting);
      const prompt = (output?.parts ?? [])
        .filter((p) => p?.type === "text" && typeof p.text === "string" && !p.synthetic)
        .map((p) => p.text)
        .join("\n");
      keepContext(
        id,
        await hook("user-prompt-submit", { session_id: id, cwd: directory, prompt }, directory),
      );
    },
    // What memory offered the session reaches the model in the system prompt (OpenCode's
    // `experimental.chat.system.transform`, run before each model request with its sessionID).
    "experimental.chat.system.transform": async (input, output) => {
      const id = input?.sessionID;
      if (!id || !Array.isArray(output?.system)) return;
      if (starting.size > 0) await Promise.all(starting);
      const texts = contextBySession.get(id);
      if (texts !== undefined && texts.length > 0) output.system.push(texts.join("\n\n"));
    },
    "tool.execute.before": async (input, output) => {
      // The MCP server's issue_report (`timewarp_issue_report` in OpenCode) reads the session's
      // remembered transcript: refresh it first.
      if (/issue_report$/.test(input.tool)) {
        await exportChat(client, directory, input.sessionID).catch(() => undefined);
      }
      if (!TOOL_NAMES[input.tool]) return;
      // OpenCode does not wait for the session.created handler: a session start still under
      // way (a first snapshot of a large tree) is waited for here, or the first edit would land
      // before the snapshot of the session it belongs to is taken, and be in it.
      if (starting.size > 0) await Promise.all(starting);
      argsByCall.set(input.callID, output.args);
      const res = await hook(
        "pre-tool-use",
        hookPayload(directory, input, output.args, "tool.execute.before"),
        directory,
      );
      // Only a guard's block stops the tool; a broken hook never does.
      if (res.code === 2 || res.result?.kind === "block") {
        throw new Error(res.result?.reason ?? (res.stderr.trim() || "blocked by timewarp"));
      }
      // A throw is the only thing the before hook can say, and it stops the tool: a warning
      // waits for the tool's output, which is what the model reads next.
      if (res.result?.kind === "warn") warningsByCall.set(input.callID, res.result.reason);
    },
    "tool.execute.after": async (input, output) => {
      if (!TOOL_NAMES[input.tool]) return;
      const args = argsByCall.get(input.callID) ?? input.args ?? {};
      argsByCall.delete(input.callID);
      const warnings = [warningsByCall.get(input.callID)];
      warningsByCall.delete(input.callID);
      const res = await hook(
        "post-tool-use",
        hookPayload(directory, input, args, "tool.execute.after"),
        directory,
      );
      if (res.result?.kind === "warn") warnings.push(res.result.reason);
      appendWarnings(output, warnings);
    },
  };
};
