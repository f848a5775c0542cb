/**
 * Transcripts → chat entries (pure). Keeps only what the seed's chat.md wants (§10: "dialogue +
 * tool input/output only"): user and assistant text, tool calls with their input, tool results.
 * Thinking blocks, system/meta records, summaries, usage counters and file-history records go.
 *
 * Formats: Claude Code JSONL (`type: user|assistant`, `message.content` string or blocks),
 * OpenAI-style JSONL (`{role, content}`), Codex rollouts (`response_item` payloads), Gemini CLI
 * chat recordings (JSONL of messages `{id, type: user|gemini, content, toolCalls}` rewritten in
 * place by id, and `{"$set": {messages}}` records; or one JSON document with `messages`), and
 * plain text or markdown transcripts (`[user]`, `User:`, `## Assistant`, `**Human:**` turn
 * markers; without any marker the whole text is one entry).
 */

export type ChatEntry =
  | { kind: "user" | "assistant"; text: string }
  | { kind: "tool_input"; tool: string; id?: string; text: string }
  | { kind: "tool_output"; tool: string; id?: string; text: string };

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function str(v: unknown): string | undefined {
  return typeof v === "string" ? v : undefined;
}

/** Text of a tool_result's content: a string, or blocks of `{type: "text", text}` (images noted). */
function resultText(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content
      .map((b) => {
        if (!isRecord(b)) return "";
        if (b.type === "text") return str(b.text) ?? "";
        if (b.type === "image") return "[image]";
        return "";
      })
      .filter((s) => s !== "")
      .join("\n");
  }
  return content === undefined || content === null ? "" : JSON.stringify(content);
}

function blocksToEntries(
  role: "user" | "assistant",
  content: unknown,
  toolNames: Map<string, string>,
): ChatEntry[] {
  if (typeof content === "string")
    return content.trim() === "" ? [] : [{ kind: role, text: content }];
  if (!Array.isArray(content)) return [];
  const out: ChatEntry[] = [];
  for (const block of content) {
    if (!isRecord(block)) continue;
    switch (block.type) {
      case "text":
      case "input_text":
      case "output_text": {
        const text = str(block.text);
        if (text && text.trim() !== "") out.push({ kind: role, text });
        break;
      }
      case "tool_use": {
        const tool = str(block.name) ?? "tool";
        const id = str(block.id);
        if (id) toolNames.set(id, tool);
        out.push({
          kind: "tool_input",
          tool,
          ...(id ? { id } : {}),
          text: JSON.stringify(block.input ?? {}),
        });
        break;
      }
      case "tool_result": {
        const id = str(block.tool_use_id);
        out.push({
          kind: "tool_output",
          tool: (id && toolNames.get(id)) ?? "tool",
          ...(id ? { id } : {}),
          text: resultText(block.content),
        });
        break;
      }
      default:
        // thinking, redacted_thinking, images from the user, … are not dialogue
        break;
    }
  }
  return out;
}

function jsonLineToEntries(value: unknown, toolNames: Map<string, string>): ChatEntry[] {
  if (!isRecord(value)) return [];
  // Claude Code: {type, message: {role, content}, isMeta?, isSidechain?}
  if ((value.type === "user" || value.type === "assistant") && isRecord(value.message)) {
    if (value.isMeta === true) return [];
    return blocksToEntries(value.type, value.message.content, toolNames);
  }
  // Codex rollout: {type: "response_item", payload: {...}}
  if (value.type === "response_item" && isRecord(value.payload)) {
    const p = value.payload;
    if (p.type === "message" && (p.role === "user" || p.role === "assistant")) {
      return blocksToEntries(p.role, p.content, toolNames);
    }
    if (p.type === "function_call") {
      const tool = str(p.name) ?? "tool";
      const id = str(p.call_id);
      if (id) toolNames.set(id, tool);
      return [{ kind: "tool_input", tool, ...(id ? { id } : {}), text: str(p.arguments) ?? "" }];
    }
    if (p.type === "function_call_output") {
      const id = str(p.call_id);
      const out = isRecord(p.output) ? str(p.output.content) : str(p.output);
      return [
        {
          kind: "tool_output",
          tool: (id && toolNames.get(id)) ?? "tool",
          ...(id ? { id } : {}),
          text: out ?? "",
        },
      ];
    }
    return [];
  }
  // OpenAI-style: {role, content}
  if (value.role === "user" || value.role === "assistant") {
    return blocksToEntries(value.role, value.content, toolNames);
  }
  if (value.role === "tool") {
    return [
      { kind: "tool_output", tool: str(value.name) ?? "tool", text: resultText(value.content) },
    ];
  }
  return [];
}

const TURN_MARKER =
  /^\s*(?:#{1,6}\s*|\*\*|\[)?(user|human|you|assistant|ai|agent|claude|model)(?::\*\*|\*\*:|\]|:)?\s*(?::\s*)?(.*)$/i;

function markerRole(line: string): { role: "user" | "assistant"; rest: string } | undefined {
  const m = line.match(TURN_MARKER);
  if (!m?.[1]) return undefined;
  // a bare word at the start of a prose line is not a marker: require some punctuation/heading
  const head = line.slice(0, line.length - (m[2] ?? "").length);
  if (!/[:\]#*]/.test(head)) return undefined;
  const who = m[1].toLowerCase();
  return { role: ["user", "human", "you"].includes(who) ? "user" : "assistant", rest: m[2] ?? "" };
}

function parsePlain(text: string): ChatEntry[] {
  const out: ChatEntry[] = [];
  let current: { role: "user" | "assistant"; lines: string[] } | undefined;
  const flush = () => {
    if (current) {
      const body = current.lines.join("\n").trim();
      if (body !== "") out.push({ kind: current.role, text: body });
    }
  };
  let sawMarker = false;
  for (const line of text.split("\n")) {
    const marker = markerRole(line);
    if (marker) {
      sawMarker = true;
      flush();
      current = { role: marker.role, lines: marker.rest === "" ? [] : [marker.rest] };
    } else if (current) {
      current.lines.push(line);
    }
  }
  flush();
  if (!sawMarker && text.trim() !== "") return [{ kind: "user", text: text.trim() }];
  return out;
}

/** A Gemini CLI chat message: `{id, type, content}` without Claude Code's `message`. */
function isGeminiMessage(value: unknown): value is Record<string, unknown> & { id: string } {
  return (
    isRecord(value) &&
    typeof value.id === "string" &&
    typeof value.type === "string" &&
    "content" in value &&
    !("message" in value)
  );
}

/** Text of Gemini content: a string, or parts of which the `text` ones count. */
export function geminiText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map((p) => (isRecord(p) ? (str(p.text) ?? "") : ""))
    .filter((t) => t !== "")
    .join("\n");
}

/** What a Gemini CLI tool call returned: its function responses' output (or error). */
function geminiResult(call: Record<string, unknown>): string | undefined {
  if (!Array.isArray(call.result)) return str(call.resultDisplay);
  const texts = call.result.map((part) => {
    const response = isRecord(part) && isRecord(part.functionResponse) ? part.functionResponse : {};
    const body = isRecord(response.response) ? response.response : {};
    return str(body.output) ?? str(body.error) ?? JSON.stringify(body);
  });
  return texts.join("\n");
}

/**
 * Gemini CLI messages, in order. A user message's function responses are left out: the model
 * message's `toolCalls` carry each call with its result. The `<session_context>` setup message
 * the CLI sends first is not dialogue; nor are thoughts, `info`, `error` and `warning` messages.
 */
function geminiEntries(messages: Iterable<Record<string, unknown>>): ChatEntry[] {
  const out: ChatEntry[] = [];
  for (const m of messages) {
    const text = geminiText(m.content);
    if (m.type === "user") {
      if (text.trim() !== "" && !/^\s*<session_context>[\s\S]*<\/session_context>\s*$/.test(text))
        out.push({ kind: "user", text });
      continue;
    }
    if (m.type !== "gemini") continue;
    if (text.trim() !== "") out.push({ kind: "assistant", text });
    for (const call of Array.isArray(m.toolCalls) ? m.toolCalls : []) {
      if (!isRecord(call)) continue;
      const tool = str(call.name) ?? "tool";
      const id = str(call.id);
      out.push({
        kind: "tool_input",
        tool,
        ...(id ? { id } : {}),
        text: JSON.stringify(call.args ?? {}),
      });
      const result = geminiResult(call);
      if (result !== undefined)
        out.push({ kind: "tool_output", tool, ...(id ? { id } : {}), text: result });
    }
  }
  return out;
}

/**
 * A Gemini CLI chat recording's messages, in order: the last version of each id at the place
 * of the first (the CLI writes a message again, whole, as it grows: its tool calls, their
 * results; a `{"$set": {"messages": [...]}}` record is the whole list anew — the first record,
 * or a rewind). Reads both forms: JSONL (0.4x on, `session-*.jsonl`) and one JSON document
 * holding `messages` (older `session-*.json`). `undefined` when the text is not a recording;
 * `badLines` are the 1-based lines that were not JSON (a torn last line while it was written).
 */
export function readGeminiRecording(
  text: string,
): { messages: Record<string, unknown>[]; badLines: number[] } | undefined {
  const whole = parsesAsJson(text) ? (JSON.parse(text) as unknown) : undefined;
  if (isRecord(whole) && Array.isArray(whole.messages))
    return { messages: whole.messages.filter(isGeminiMessage), badLines: [] };
  const messages = new Map<string, Record<string, unknown>>();
  const badLines: number[] = [];
  let seen = false;
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? "";
    if (line.trim() === "") continue;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      badLines.push(i + 1);
      continue;
    }
    const set = isRecord(value) && isRecord(value.$set) ? value.$set : undefined;
    if (set === undefined && !isGeminiMessage(value)) continue;
    seen = true;
    let list: unknown[] = [value];
    if (set !== undefined) {
      list = Array.isArray(set.messages) ? set.messages : [];
      if (Array.isArray(set.messages)) messages.clear();
    }
    for (const m of list) if (isGeminiMessage(m)) messages.set(m.id, m);
  }
  return seen ? { messages: [...messages.values()], badLines } : undefined;
}

/** Parse a transcript of any supported format into chat entries, in order. */
export function parseTranscript(text: string): ChatEntry[] {
  const gemini = readGeminiRecording(text);
  if (gemini !== undefined) return geminiEntries(gemini.messages);
  const lines = text.split("\n").filter((l) => l.trim() !== "");
  const looksJsonl =
    lines.length > 0 && lines.every((l) => l.trimStart().startsWith("{")) && parsesAsJson(lines[0]);
  if (!looksJsonl) return parsePlain(text);
  const toolNames = new Map<string, string>();
  const out: ChatEntry[] = [];
  for (const line of lines) {
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      continue; // a torn last line of a transcript still being written
    }
    out.push(...jsonLineToEntries(value, toolNames));
  }
  return out;
}

function parsesAsJson(line: string | undefined): boolean {
  if (line === undefined) return false;
  try {
    JSON.parse(line);
    return true;
  } catch {
    return false;
  }
}

export type ChatSelection = { before: number; after: number } | "all";

/** The zh seed's chat.md header default: `selection: window(before=6, after=2)`. */
export const DEFAULT_CHAT_WINDOW: ChatSelection = { before: 6, after: 2 };

/**
 * The window around the friction point: the anchor is the agent's own `issue_report` call if
 * the transcript has one (the last), else the end. `before`/`after` count dialogue messages
 * (user or assistant text); the tool calls and results between them come along.
 */
export function selectWindow(entries: ChatEntry[], selection: ChatSelection): ChatEntry[] {
  if (selection === "all") return entries;
  let anchor = entries.length;
  for (let i = entries.length - 1; i >= 0; i--) {
    const e = entries[i];
    if (e?.kind === "tool_input" && /issue_report$/.test(e.tool)) {
      anchor = i;
      break;
    }
  }
  let start = anchor;
  let seen = 0;
  while (start > 0 && seen < selection.before) {
    start--;
    const k = entries[start]?.kind;
    if (k === "user" || k === "assistant") seen++;
  }
  let end = anchor;
  seen = 0;
  while (end < entries.length) {
    const k = entries[end]?.kind;
    if ((k === "user" || k === "assistant") && seen === selection.after) break;
    if (k === "user" || k === "assistant") seen++;
    end++;
  }
  return entries.slice(start, end);
}

export function formatSelection(selection: ChatSelection): string {
  return selection === "all"
    ? "all"
    : `window(before=${selection.before}, after=${selection.after})`;
}

function formatEntry(e: ChatEntry): string {
  switch (e.kind) {
    case "user":
    case "assistant":
      return `[${e.kind}] ${e.text}`;
    case "tool_input":
      return `[tool:${e.tool}] input: ${e.text}`;
    case "tool_output":
      return `[tool:${e.tool}] output: ${e.text}`;
  }
}

export interface ChatMarkdownOptions {
  sessionId: string | null;
  capturedAt: string;
  selection: ChatSelection;
  entries: ChatEntry[];
  /** Where the transcript came from; a note in the body when there was none. */
  source: string | null;
}

/** chat.md with the zh seed's fixed header (§5), for machines first. Redaction happens after. */
export function formatChatMarkdown(options: ChatMarkdownOptions): string {
  const header = [
    `session_id: ${options.sessionId ?? "unknown"}`,
    `captured_at: ${options.capturedAt}`,
    `selection: ${formatSelection(options.selection)}`,
    "redaction: applied",
    "",
    "---",
    "",
    "",
  ].join("\n");
  if (options.source === null) {
    return `${header}(no transcript: the session did not register one and none was given with --transcript)\n`;
  }
  if (options.entries.length === 0) return `${header}(the transcript has no dialogue)\n`;
  return `${header}${options.entries.map(formatEntry).join("\n\n")}\n`;
}

/** chat.md read back (pure): its header fields and its entries, or the note it holds instead. */
export interface ParsedChat {
  header: Record<string, string>;
  entries: ChatEntry[];
  /** The body when it holds no entries (no transcript, no dialogue). */
  note: string | null;
}

const ENTRY_START = /^(?:\[(user|assistant)\] |\[tool:([^\]\n]*)\] (input|output): )/;

/**
 * chat.md as `formatChatMarkdown` writes it, read back into its header and entries (pure). An
 * entry starts at a line `[user] `, `[assistant] ` or `[tool:NAME] input|output: ` after a blank
 * line; anything else continues the entry before it (a message with blank lines of its own).
 */
export function parseChatMarkdown(text: string): ParsedChat {
  const cut = text.indexOf("\n---\n");
  const headText = cut < 0 ? "" : text.slice(0, cut);
  const body = cut < 0 ? text : text.slice(cut + 5);
  const header: Record<string, string> = {};
  for (const line of headText.split("\n")) {
    const m = /^([a-z_]+): (.*)$/.exec(line);
    if (m?.[1] !== undefined) header[m[1]] = m[2] ?? "";
  }
  const entries: ChatEntry[] = [];
  let previousBlank = true;
  for (const line of body.replace(/^\n+/, "").split("\n")) {
    const m = previousBlank ? ENTRY_START.exec(line) : null;
    previousBlank = line === "";
    const last = entries[entries.length - 1];
    if (m === null) {
      if (last !== undefined) last.text += `\n${line}`;
      continue;
    }
    const text = line.slice(m[0].length);
    if (m[1] === "user" || m[1] === "assistant") entries.push({ kind: m[1], text });
    else
      entries.push({
        kind: m[3] === "output" ? "tool_output" : "tool_input",
        tool: m[2] ?? "",
        text,
      });
  }
  for (const e of entries) e.text = e.text.replace(/\n+$/, "");
  const note = entries.length === 0 ? body.trim() || null : null;
  return { header, entries, note };
}
