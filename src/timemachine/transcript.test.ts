import { describe, expect, it } from "vitest";
import {
  formatChatMarkdown,
  parseChatMarkdown,
  parseTranscript,
  selectWindow,
} from "./transcript.ts";

const claude = [
  { type: "summary", summary: "old summary" },
  { type: "user", message: { role: "user", content: "please fix it" } },
  {
    type: "assistant",
    message: {
      role: "assistant",
      content: [
        { type: "thinking", thinking: "secret reasoning" },
        { type: "text", text: "running tests" },
        { type: "tool_use", id: "t1", name: "Bash", input: { command: "npm test" } },
      ],
      usage: { input_tokens: 10 },
    },
  },
  {
    type: "user",
    message: {
      role: "user",
      content: [
        { type: "tool_result", tool_use_id: "t1", content: [{ type: "text", text: "1 failing" }] },
      ],
    },
  },
  {
    type: "user",
    isMeta: true,
    message: { role: "user", content: "<command-name>/clear</command-name>" },
  },
  { type: "system", content: "hook ran" },
]
  .map((l) => JSON.stringify(l))
  .join("\n");

describe("parseTranscript", () => {
  it("keeps dialogue and tool input/output of Claude Code JSONL, drops thinking, meta, system, summaries", () => {
    expect(parseTranscript(`${claude}\n{"type":"user","mess`)).toEqual([
      { kind: "user", text: "please fix it" },
      { kind: "assistant", text: "running tests" },
      { kind: "tool_input", tool: "Bash", id: "t1", text: '{"command":"npm test"}' },
      { kind: "tool_output", tool: "Bash", id: "t1", text: "1 failing" },
    ]);
  });

  it("reads Codex rollouts and OpenAI-style role/content lines", () => {
    const codex = [
      {
        type: "response_item",
        payload: { type: "message", role: "user", content: [{ type: "input_text", text: "hi" }] },
      },
      {
        type: "response_item",
        payload: { type: "function_call", name: "shell", call_id: "c1", arguments: '{"cmd":"ls"}' },
      },
      {
        type: "response_item",
        payload: { type: "function_call_output", call_id: "c1", output: "a.txt" },
      },
      { role: "assistant", content: "done" },
    ]
      .map((l) => JSON.stringify(l))
      .join("\n");
    expect(
      parseTranscript(codex).map((e) => `${e.kind}:${"tool" in e ? e.tool : ""}:${e.text}`),
    ).toEqual([
      "user::hi",
      'tool_input:shell:{"cmd":"ls"}',
      "tool_output:shell:a.txt",
      "assistant::done",
    ]);
  });

  it("reads Gemini CLI chat recordings: the last version of each message, tool calls with results", () => {
    // As Gemini CLI 0.61 writes `~/.gemini/tmp/<project>/chats/session-*.jsonl` (issue 17): a
    // header, the setup context under $set, then messages, each written again as it grows.
    const call = {
      id: "replace_1",
      name: "replace",
      args: { file_path: "src/a.ts", old_string: "1", new_string: "2" },
      result: [
        {
          functionResponse: {
            id: "replace_1",
            name: "replace",
            response: { output: "Successfully modified" },
          },
        },
      ],
      status: "success",
    };
    const shell = {
      id: "sh_1",
      name: "run_shell_command",
      args: { command: "exit 3" },
      result: [
        {
          functionResponse: {
            id: "sh_1",
            name: "run_shell_command",
            response: { error: "Exit Code: 3" },
          },
        },
      ],
    };
    const lines = [
      { sessionId: "s1", projectHash: "h", startTime: "t", kind: "main" },
      {
        $set: {
          messages: [
            {
              id: "m0",
              type: "user",
              content: [{ text: "<session_context>\nThis is the Gemini CLI.\n</session_context>" }],
            },
          ],
        },
      },
      { id: "m1", type: "user", content: [{ text: "Fix it" }] },
      { $set: { lastUpdated: "t" } },
      {
        id: "m2",
        type: "gemini",
        content: "",
        thoughts: [{ subject: "s", description: "secret" }],
      },
      { id: "m2", type: "gemini", content: "", thoughts: [], toolCalls: [call, shell] },
      {
        id: "m3",
        type: "user",
        content: [
          {
            functionResponse: {
              id: "replace_1",
              name: "replace",
              response: { output: "Successfully modified" },
            },
          },
        ],
      },
      { id: "m4", type: "info", content: "Request cancelled." },
      { id: "m5", type: "gemini", content: "All done." },
    ];
    const text = lines.map((l) => JSON.stringify(l)).join("\n");
    const want = [
      "user::Fix it",
      'tool_input:replace:{"file_path":"src/a.ts","old_string":"1","new_string":"2"}',
      "tool_output:replace:Successfully modified",
      'tool_input:run_shell_command:{"command":"exit 3"}',
      "tool_output:run_shell_command:Exit Code: 3",
      "assistant::All done.",
    ];
    const show = (entries: ReturnType<typeof parseTranscript>) =>
      entries.map((e) => `${e.kind}:${"tool" in e ? e.tool : ""}:${e.text}`);
    expect(show(parseTranscript(text))).toEqual(want);
    // the older recording: one JSON document with the messages
    const legacy = JSON.stringify(
      { sessionId: "s1", messages: lines.filter((l) => "type" in l && l !== lines[4]) },
      null,
      2,
    );
    expect(show(parseTranscript(legacy))).toEqual(want);
  });

  it("splits plain text and markdown transcripts on turn markers", () => {
    const md =
      "## User\nfix the bug\nplease\n\n## Assistant\nOn it.\n**User:** thanks\n[assistant] welcome";
    expect(parseTranscript(md)).toEqual([
      { kind: "user", text: "fix the bug\nplease" },
      { kind: "assistant", text: "On it." },
      { kind: "user", text: "thanks" },
      { kind: "assistant", text: "welcome" },
    ]);
    expect(parseTranscript("User wants a fix. No markers here.")).toEqual([
      { kind: "user", text: "User wants a fix. No markers here." },
    ]);
  });
});

describe("selectWindow", () => {
  const entries = Array.from({ length: 10 }, (_, i) => [
    { kind: i % 2 === 0 ? ("user" as const) : ("assistant" as const), text: `m${i}` },
    { kind: "tool_input" as const, tool: "Bash", text: `t${i}` },
  ]).flat();

  it("takes `before` messages before the end, with the tool traffic between them", () => {
    const w = selectWindow(entries, { before: 2, after: 2 });
    expect(w.map((e) => e.text)).toEqual(["m8", "t8", "m9", "t9"]);
  });

  it("anchors on the agent's issue_report call and takes `after` messages past it", () => {
    const withCall = [
      ...entries.slice(0, 8),
      { kind: "tool_input" as const, tool: "mcp__timewarp__issue_report", text: "{}" },
      ...entries.slice(8),
    ];
    const w = selectWindow(withCall, { before: 1, after: 2 });
    expect(w.map((e) => e.text)).toEqual(["m3", "t3", "{}", "m4", "t4", "m5", "t5"]);
    expect(selectWindow(withCall, "all")).toHaveLength(withCall.length);
  });
});

describe("formatChatMarkdown", () => {
  it("writes the zh seed's header, then one block per entry", () => {
    const md = formatChatMarkdown({
      sessionId: "sess_1",
      capturedAt: "2026-02-28T15:35:02Z",
      selection: { before: 6, after: 2 },
      source: "t.jsonl",
      entries: [
        { kind: "user", text: "hi" },
        { kind: "tool_output", tool: "bash", text: "ok" },
      ],
    });
    expect(md).toBe(
      "session_id: sess_1\ncaptured_at: 2026-02-28T15:35:02Z\nselection: window(before=6, after=2)\nredaction: applied\n\n---\n\n[user] hi\n\n[tool:bash] output: ok\n",
    );
  });
});

describe("parseChatMarkdown", () => {
  const base = {
    sessionId: "sess_1",
    capturedAt: "2026-02-28T15:35:02Z",
    selection: "all" as const,
    source: "t.jsonl",
  };

  it("reads back what formatChatMarkdown wrote: header and entries, blank lines inside kept", () => {
    const entries = [
      { kind: "user" as const, text: "fix it\n\nplease, and see [user] in the log" },
      { kind: "tool_input" as const, tool: "Bash", text: '{"command":"npm test"}' },
      { kind: "tool_output" as const, tool: "Bash", text: "1 failed\n\n[tool:x] not a start" },
      { kind: "assistant" as const, text: "done" },
    ];
    const parsed = parseChatMarkdown(formatChatMarkdown({ ...base, entries }));
    expect(parsed.header).toEqual({
      session_id: "sess_1",
      captured_at: "2026-02-28T15:35:02Z",
      selection: "all",
      redaction: "applied",
    });
    expect(parsed.entries).toEqual(entries);
    expect(parsed.note).toBeNull();
  });

  it("keeps the note of a chat without entries", () => {
    const parsed = parseChatMarkdown(formatChatMarkdown({ ...base, source: null, entries: [] }));
    expect(parsed.entries).toEqual([]);
    expect(parsed.note).toMatch(/^\(no transcript/);
  });
});
