/**
 * A scripted model for clients that speak OpenAI-compatible chat completions (OpenCode through
 * `@ai-sdk/openai-compatible`): `POST …/chat/completions` answered as server-sent events, one
 * chunk per delta as the OpenAI API streams them. A request that offers tools is the agent's main
 * loop and gets the next step of the script; one without tools is auxiliary (a session title, a
 * summary, a compaction) and gets a short harmless text; `GET …/models` lists the one model.
 */
import type { ServerResponse } from "node:http";
import type { ModelRequest } from "./harness.ts";

/** One tool call the model makes; `arguments` is sent as the JSON string the API carries. */
export interface ChatToolCall {
  name: string;
  arguments: Record<string, unknown>;
}

/** What the model answers to one main-loop request: tool calls, or a final text. */
export type ChatStep = { toolCalls: ChatToolCall[] } | { text: string };

export interface ChatScript {
  respond(req: ModelRequest, res: ServerResponse): void;
  /** The main-loop requests, in order: request `i` is answered with step `i`. */
  main: ModelRequest[];
  /** Titles, summaries, model listings: everything not in the main loop. */
  auxiliary: ModelRequest[];
  /** When each main-loop answer was written out (ms since the epoch), by step. */
  answeredAt: number[];
}

interface ChatBody {
  model?: string;
  stream?: boolean;
  tools?: unknown[];
}

function isChatBody(body: unknown): body is ChatBody {
  return typeof body === "object" && body !== null;
}

/**
 * The script's server side. Past the last step the model keeps saying `done` (a client that
 * asks again must still end, not hang on the test); the assertions count the main loop.
 */
export function chatCompletionsScript(
  steps: ChatStep[],
  options: { model?: string; auxiliaryText?: string } = {},
): ChatScript {
  const model = options.model ?? "scripted";
  const main: ModelRequest[] = [];
  const auxiliary: ModelRequest[] = [];
  const answeredAt: number[] = [];
  let callSeq = 0;

  const respond = (req: ModelRequest, res: ServerResponse): void => {
    if (req.method === "GET" && /\/models\/?$/.test(req.path)) {
      auxiliary.push(req);
      json(res, 200, { object: "list", data: [{ id: model, object: "model", owned_by: "mock" }] });
      return;
    }
    if (req.method !== "POST" || !/\/chat\/completions\/?$/.test(req.path)) {
      auxiliary.push(req);
      json(res, 404, { error: { message: `not served here: ${req.method} ${req.path}` } });
      return;
    }
    const body = isChatBody(req.body) ? req.body : {};
    const stream = body.stream === true;
    if (!Array.isArray(body.tools) || body.tools.length === 0) {
      auxiliary.push(req);
      answer(res, { stream, model, step: { text: options.auxiliaryText ?? "Scripted session" } });
      return;
    }
    const index = main.length;
    main.push(req);
    const step = steps[index] ?? { text: "done" };
    const ids = "toolCalls" in step ? step.toolCalls.map(() => `call_${++callSeq}`) : [];
    answer(res, { stream, model, step, ids });
    answeredAt[index] = Date.now();
  };
  return { respond, main, auxiliary, answeredAt };
}

function json(res: ServerResponse, status: number, value: unknown): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(value));
}

const USAGE = { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 };

function answer(
  res: ServerResponse,
  o: { stream: boolean; model: string; step: ChatStep; ids?: string[] },
): void {
  const id = `chatcmpl-${Math.random().toString(36).slice(2, 10)}`;
  const created = Math.floor(Date.now() / 1000);
  const calls =
    "toolCalls" in o.step
      ? o.step.toolCalls.map((c, i) => ({
          id: o.ids?.[i] ?? `call_${i}`,
          type: "function" as const,
          function: { name: c.name, arguments: JSON.stringify(c.arguments) },
        }))
      : [];
  const text = "text" in o.step ? o.step.text : null;
  const finish = calls.length > 0 ? "tool_calls" : "stop";
  if (!o.stream) {
    json(res, 200, {
      id,
      object: "chat.completion",
      created,
      model: o.model,
      choices: [
        {
          index: 0,
          message: {
            role: "assistant",
            content: text,
            ...(calls.length > 0 ? { tool_calls: calls } : {}),
          },
          finish_reason: finish,
        },
      ],
      usage: USAGE,
    });
    return;
  }
  res.writeHead(200, {
    "content-type": "text/event-stream",
    "cache-control": "no-cache",
    connection: "keep-alive",
  });
  const chunk = (delta: Record<string, unknown>, finishReason: string | null, usage?: object) =>
    res.write(
      `data: ${JSON.stringify({
        id,
        object: "chat.completion.chunk",
        created,
        model: o.model,
        choices: [{ index: 0, delta, finish_reason: finishReason }],
        ...(usage !== undefined ? { usage } : {}),
      })}\n\n`,
    );
  chunk({ role: "assistant", content: "" }, null);
  if (text !== null) chunk({ content: text }, null);
  calls.forEach((call, index) => {
    chunk({ tool_calls: [{ index, ...call }] }, null);
  });
  chunk({}, finish, USAGE);
  res.end("data: [DONE]\n\n");
}
