/**
 * A scripted model behind the Anthropic Messages API (`POST /v1/messages`, SSE when the request
 * says `stream: true`), as Claude Code speaks it. The main loop's requests (those offering the
 * agent's own tools) get the script's steps in order: the step is the number of assistant turns
 * the conversation already holds, so a retried request gets the same answer again. Every other
 * request (token counting, a model listing, a probe, a request without the agent's tools such as
 * a title or a quota check) gets a harmless answer and never advances the script.
 */
import type { ServerResponse } from "node:http";
import type { ModelRequest } from "./harness.ts";

/** One tool call the model makes. */
export interface ToolCall {
  name: string;
  input: Record<string, unknown>;
}

/** One main-loop answer: tool calls (run by the client, in one assistant turn) or a final text. */
export type AnthropicStep = { tools: ToolCall[] } | { text: string };

interface MessagesBody {
  model?: string;
  stream?: boolean;
  tools?: { name?: string }[];
  messages?: { role?: string; content?: unknown }[];
}

const asBody = (req: ModelRequest): MessagesBody =>
  typeof req.body === "object" && req.body !== null ? (req.body as MessagesBody) : {};

/** A request of the agent's main loop: a message request that offers the client's Bash tool. */
export function isMainLoop(req: ModelRequest): boolean {
  if (req.method !== "POST" || !/^\/v1\/messages(?:\?|$)/.test(req.path)) return false;
  return asBody(req).tools?.some((t) => t.name === "Bash") === true;
}

/** How many assistant turns the conversation of a main-loop request already holds. */
export function turnOf(req: ModelRequest): number {
  return (asBody(req).messages ?? []).filter((m) => m.role === "assistant").length;
}

/** The `tool_use_id`s of a step, stable per step and call so results can be found again. */
export const toolUseId = (step: number, call: number): string => `toolu_tw_${step}_${call}`;

/**
 * The tool result a main-loop request carries for one tool call (what the client told the model
 * the call did: its text, and whether it is flagged as an error), or null when it holds none.
 */
export function toolResult(
  req: ModelRequest,
  id: string,
): { text: string; isError: boolean } | null {
  for (const m of asBody(req).messages ?? []) {
    if (!Array.isArray(m.content)) continue;
    for (const block of m.content as {
      type?: string;
      tool_use_id?: string;
      content?: unknown;
      is_error?: boolean;
    }[]) {
      if (block.type !== "tool_result" || block.tool_use_id !== id) continue;
      const text =
        typeof block.content === "string"
          ? block.content
          : Array.isArray(block.content)
            ? (block.content as { text?: unknown }[])
                .map((c) => (typeof c.text === "string" ? c.text : ""))
                .join("\n")
            : JSON.stringify(block.content ?? "");
      return { text, isError: block.is_error === true };
    }
  }
  return null;
}

/**
 * The responder for `startModelServer`. `onStep` runs before step `n` is answered (the test's
 * hook to look at the workspace between two tool calls).
 */
export function anthropicScript(
  steps: AnthropicStep[],
  options: { onStep?: (step: number, req: ModelRequest) => void } = {},
): {
  respond: (req: ModelRequest, res: ServerResponse) => void;
  /** The main-loop requests, in order of arrival. */
  main: ModelRequest[];
  /** Every other request, in order of arrival. */
  auxiliary: ModelRequest[];
} {
  const main: ModelRequest[] = [];
  const auxiliary: ModelRequest[] = [];
  const respond = (req: ModelRequest, res: ServerResponse): void => {
    const body = asBody(req);
    if (req.method !== "POST") {
      auxiliary.push(req);
      // a probe or a model listing
      json(res, /\/v1\/models/.test(req.path) ? { data: [], has_more: false } : {});
      return;
    }
    if (/\/count_tokens/.test(req.path)) {
      auxiliary.push(req);
      json(res, { input_tokens: 100 });
      return;
    }
    if (!isMainLoop(req)) {
      auxiliary.push(req);
      message(res, body, [{ type: "text", text: "ok" }], "end_turn");
      return;
    }
    main.push(req);
    const n = turnOf(req);
    options.onStep?.(n, req);
    const step = steps[n] ?? { text: "done" };
    if ("text" in step) {
      message(res, body, [{ type: "text", text: step.text }], "end_turn");
      return;
    }
    message(
      res,
      body,
      step.tools.map((call, i) => ({
        type: "tool_use",
        id: toolUseId(n, i),
        name: call.name,
        input: call.input,
      })),
      "tool_use",
    );
  };
  return { respond, main, auxiliary };
}

type Block =
  | { type: "text"; text: string }
  | { type: "tool_use"; id: string; name: string; input: Record<string, unknown> };

function json(res: ServerResponse, value: unknown): void {
  res.writeHead(200, { "content-type": "application/json" });
  res.end(JSON.stringify(value));
}

let messageCount = 0;

/** One assistant message, streamed as the API streams it, or whole. */
function message(
  res: ServerResponse,
  body: MessagesBody,
  content: Block[],
  stopReason: "end_turn" | "tool_use",
): void {
  const id = `msg_tw_${++messageCount}`;
  const model = body.model ?? "claude-test";
  const usage = { input_tokens: 100, output_tokens: 10 };
  if (body.stream !== true) {
    json(res, {
      id,
      type: "message",
      role: "assistant",
      model,
      content,
      stop_reason: stopReason,
      stop_sequence: null,
      usage,
    });
    return;
  }
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  const event = (type: string, data: Record<string, unknown>): void => {
    res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
  };
  event("message_start", {
    message: {
      id,
      type: "message",
      role: "assistant",
      model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: 100, output_tokens: 1 },
    },
  });
  content.forEach((block, index) => {
    if (block.type === "text") {
      event("content_block_start", { index, content_block: { type: "text", text: "" } });
      event("content_block_delta", { index, delta: { type: "text_delta", text: block.text } });
    } else {
      event("content_block_start", {
        index,
        content_block: { type: "tool_use", id: block.id, name: block.name, input: {} },
      });
      event("content_block_delta", {
        index,
        delta: { type: "input_json_delta", partial_json: JSON.stringify(block.input) },
      });
    }
    event("content_block_stop", { index });
  });
  event("message_delta", {
    delta: { stop_reason: stopReason, stop_sequence: null },
    usage: { output_tokens: 10 },
  });
  event("message_stop", {});
  res.end();
}
