/**
 * A scripted model in the OpenAI Responses API's wire format, as Codex (`wire_api =
 * "responses"`) speaks it: `POST …/responses` with `stream: true`, answered by server-sent events
 * (`response.created`, `response.output_item.added`/`.done` per item, `response.completed`).
 *
 * Main-loop requests are those carrying the conversation (`input`) and the tools: each gets the
 * next step of the script, chosen by how many tool results the conversation already holds (so a
 * retried request gets the same step again). Anything else Codex asks for (the model list, a
 * request without tools such as a title or a summary) is answered harmlessly and recorded.
 */
import type { ServerResponse } from "node:http";
import type { ModelRequest } from "./harness.ts";

/** One scripted model turn: a tool call (JSON arguments or freeform input) or the final answer. */
export type ResponsesStep =
  | {
      type: "function_call";
      name: string;
      arguments: Record<string, unknown>;
      /** A deferred tool's namespace (`mcp__<server>`), as `tool_search` handed it out. */
      namespace?: string;
    }
  | { type: "custom_tool_call"; name: string; input: string }
  /** Codex defers MCP tools behind its client-side `tool_search`: the model searches first. */
  | { type: "tool_search_call"; arguments: { query: string; limit?: number } }
  | { type: "message"; text: string };

/** The tool results (`*_call_output`, `tool_search_output` items) a request's conversation holds. */
export function toolOutputs(req: ModelRequest): { call_id: string; output: unknown }[] {
  const input = (req.body as { input?: unknown } | null)?.input;
  if (!Array.isArray(input)) return [];
  return input.filter(
    (item): item is { type: string; call_id: string; output: unknown } =>
      typeof item === "object" &&
      item !== null &&
      typeof (item as { type?: unknown }).type === "string" &&
      ((item as { type: string }).type.endsWith("_call_output") ||
        (item as { type: string }).type === "tool_search_output"),
  );
}

/** Whether a request is one of the agent's main loop (the conversation, with tools to call). */
export function isMainLoop(req: ModelRequest): boolean {
  if (req.method !== "POST" || !/\/responses$/.test(req.path.split("?")[0] ?? "")) return false;
  const body = req.body as { input?: unknown; tools?: unknown } | null;
  return Array.isArray(body?.input) && Array.isArray(body?.tools) && body.tools.length > 0;
}

/** The names of the tools a main-loop request offers the model (function, custom, namespaced). */
export function toolNames(req: ModelRequest): string[] {
  const tools = (req.body as { tools?: unknown[] } | null)?.tools ?? [];
  const names: string[] = [];
  for (const t of tools) {
    if (typeof t !== "object" || t === null) continue;
    const tool = t as { name?: unknown; type?: unknown; tools?: unknown[] };
    if (typeof tool.name === "string") names.push(tool.name);
    for (const inner of tool.tools ?? []) {
      const n = (inner as { name?: unknown } | null)?.name;
      if (typeof n === "string") names.push(`${String(tool.name ?? tool.type)}.${n}`);
    }
  }
  return names;
}

function sse(res: ServerResponse, event: string, data: Record<string, unknown>): void {
  res.write(`event: ${event}\ndata: ${JSON.stringify({ type: event, ...data })}\n\n`);
}

function itemOf(step: ResponsesStep, n: number): Record<string, unknown> {
  switch (step.type) {
    case "function_call":
      return {
        type: "function_call",
        id: `fc_${n}`,
        call_id: `call_${n}`,
        name: step.name,
        ...(step.namespace !== undefined ? { namespace: step.namespace } : {}),
        arguments: JSON.stringify(step.arguments),
        status: "completed",
      };
    case "custom_tool_call":
      return {
        type: "custom_tool_call",
        id: `ctc_${n}`,
        call_id: `call_${n}`,
        name: step.name,
        input: step.input,
        status: "completed",
      };
    case "tool_search_call":
      return {
        type: "tool_search_call",
        id: `ts_${n}`,
        call_id: `call_${n}`,
        execution: "client",
        status: "completed",
        arguments: step.arguments,
      };
    case "message":
      return {
        type: "message",
        id: `msg_${n}`,
        role: "assistant",
        status: "completed",
        content: [{ type: "output_text", text: step.text, annotations: [] }],
      };
  }
}

/** Stream one response holding `step` (an id of its own, usage counted as zero). */
export function streamStep(res: ServerResponse, step: ResponsesStep, n: number): void {
  const id = `resp_${n}`;
  res.writeHead(200, {
    "content-type": "text/event-stream",
    "cache-control": "no-cache",
    connection: "keep-alive",
  });
  sse(res, "response.created", { response: { id, status: "in_progress", output: [] } });
  const item = itemOf(step, n);
  sse(res, "response.output_item.added", { output_index: 0, item });
  if (step.type === "message")
    sse(res, "response.output_text.delta", { output_index: 0, content_index: 0, delta: step.text });
  sse(res, "response.output_item.done", { output_index: 0, item });
  sse(res, "response.completed", {
    response: {
      id,
      status: "completed",
      output: [item],
      usage: {
        input_tokens: 0,
        input_tokens_details: { cached_tokens: 0 },
        output_tokens: 0,
        output_tokens_details: { reasoning_tokens: 0 },
        total_tokens: 0,
      },
    },
  });
  res.end();
}

export interface ResponsesModel {
  respond: (req: ModelRequest, res: ServerResponse) => void;
  /** The main-loop requests, in order. */
  main: ModelRequest[];
  /** Every other request (model list, titles, summaries…). */
  auxiliary: ModelRequest[];
}

/**
 * The scripted model: the main-loop request whose conversation holds k tool results gets
 * `script[k]` (past the end: the last step, which should be the final answer).
 */
export function responsesModel(script: ResponsesStep[]): ResponsesModel {
  const main: ModelRequest[] = [];
  const auxiliary: ModelRequest[] = [];
  let served = 0;
  const respond = (req: ModelRequest, res: ServerResponse): void => {
    if (isMainLoop(req)) {
      main.push(req);
      const k = Math.min(toolOutputs(req).length, script.length - 1);
      const step = script[k];
      if (step === undefined) throw new Error("empty script");
      served++;
      streamStep(res, step, served);
      return;
    }
    auxiliary.push(req);
    const path = req.path.split("?")[0] ?? "";
    if (req.method === "GET" && path.endsWith("/models")) {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ object: "list", data: [], models: [] }));
      return;
    }
    if (req.method === "POST" && path.endsWith("/responses")) {
      served++;
      streamStep(res, { type: "message", text: "ok" }, served);
      return;
    }
    res.writeHead(404, { "content-type": "application/json" });
    res.end(JSON.stringify({ error: { message: `mock: nothing at ${req.method} ${path}` } }));
  };
  return { respond, main, auxiliary };
}
