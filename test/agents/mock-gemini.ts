/**
 * The Gemini API as Gemini CLI speaks it, scripted: `POST /v1beta/models/<model>:streamGenerateContent?alt=sse`
 * (the main loop, server-sent events), `:generateContent` (the CLI's helpers: the model router's
 * classifier, the next-speaker check, summaries: JSON answers under `responseJsonSchema`),
 * `:countTokens`, and the model list. A request of the main loop is one that declares the CLI's
 * own tools (`run_shell_command` among them); it gets the next step of the script. Everything
 * else is auxiliary and gets a harmless answer: a minimal object of the schema it asks for (the
 * router then picks its default model), or a short text.
 */
import type { ServerResponse } from "node:http";
import type { ModelRequest } from "./harness.ts";

/** One answer of the main loop: a tool call, or the final text that ends the turn. */
export type GeminiStep =
  | { call: { name: string; args: Record<string, unknown> } }
  | { text: string };

/** A step may depend on the request it answers (an MCP tool's name is read off its declarations). */
export type ScriptedStep = GeminiStep | ((req: ModelRequest) => GeminiStep);

interface FunctionDeclaration {
  name: string;
}
interface GeminiRequestBody {
  contents?: unknown[];
  tools?: { functionDeclarations?: FunctionDeclaration[] }[];
  generationConfig?: { responseJsonSchema?: unknown; responseSchema?: unknown };
}

/** The names of the functions a request declares. */
export function declaredTools(req: ModelRequest): string[] {
  const body = req.body as GeminiRequestBody | null;
  if (body === null || typeof body !== "object") return [];
  return (body.tools ?? []).flatMap((t) => (t.functionDeclarations ?? []).map((f) => f.name));
}

/** A request of the agent's main loop (not a helper's): it streams and offers the shell tool. */
export function isMainLoop(req: ModelRequest): boolean {
  return (
    req.method === "POST" &&
    req.path.includes(":streamGenerateContent") &&
    declaredTools(req).includes("run_shell_command")
  );
}

/** The declared name of an MCP tool (Gemini CLI may prefix it with its server's name). */
export function mcpToolName(req: ModelRequest, tool: string): string {
  const names = declaredTools(req);
  const found = names.find((n) => n === tool) ?? names.find((n) => n.endsWith(tool));
  if (found === undefined) {
    throw new Error(`no MCP tool ${tool} declared; the request offers ${names.join(", ")}`);
  }
  return found;
}

/** The least value of a (Gemini or JSON) schema: what a helper asking for JSON is given. */
function minimalOf(schema: unknown): unknown {
  if (typeof schema !== "object" || schema === null) return null;
  const s = schema as {
    type?: string | string[];
    enum?: unknown[];
    properties?: Record<string, unknown>;
    items?: unknown;
    anyOf?: unknown[];
  };
  if (Array.isArray(s.enum) && s.enum.length > 0) return s.enum[0];
  if (Array.isArray(s.anyOf) && s.anyOf.length > 0) return minimalOf(s.anyOf[0]);
  const type = (Array.isArray(s.type) ? s.type[0] : s.type)?.toLowerCase();
  switch (type) {
    case "object": {
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(s.properties ?? {})) out[k] = minimalOf(v);
      return out;
    }
    case "array":
      return [];
    case "string":
      return "ok";
    case "integer":
    case "number":
      return 1;
    case "boolean":
      return false;
    default:
      return null;
  }
}

function candidate(parts: unknown[]): object {
  return {
    candidates: [{ content: { role: "model", parts }, finishReason: "STOP", index: 0 }],
    usageMetadata: { promptTokenCount: 100, candidatesTokenCount: 10, totalTokenCount: 110 },
    modelVersion: "mock",
  };
}

function sendJson(res: ServerResponse, body: unknown): void {
  res.writeHead(200, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
}

function sendSse(res: ServerResponse, chunk: unknown): void {
  res.writeHead(200, { "content-type": "text/event-stream" });
  res.end(`data: ${JSON.stringify(chunk)}\r\n\r\n`);
}

export interface GeminiMock {
  /** `startModelServer`'s responder. */
  respond: (req: ModelRequest, res: ServerResponse) => void;
  /** The main-loop requests, in order: request i was answered with step i. */
  main: ModelRequest[];
}

/**
 * A scripted Gemini model: main-loop request i gets `script[i]`; past the script, "Done.".
 * `onMain` runs before each main-loop answer (the test's clock for "before step i").
 */
export function geminiMock(
  script: ScriptedStep[],
  options: { onMain?: (index: number, req: ModelRequest) => void } = {},
): GeminiMock {
  const main: ModelRequest[] = [];
  const respond = (req: ModelRequest, res: ServerResponse): void => {
    if (req.path.includes(":countTokens")) {
      sendJson(res, { totalTokens: 100 });
      return;
    }
    if (req.method === "GET" && /\/models(\?|$)/.test(req.path)) {
      sendJson(res, { models: [] });
      return;
    }
    if (isMainLoop(req)) {
      const index = main.length;
      main.push(req);
      options.onMain?.(index, req);
      const scripted = script[index];
      const step: GeminiStep =
        scripted === undefined
          ? { text: "Done." }
          : typeof scripted === "function"
            ? scripted(req)
            : scripted;
      sendSse(
        res,
        candidate("call" in step ? [{ functionCall: step.call }] : [{ text: step.text }]),
      );
      return;
    }
    const body = req.body as GeminiRequestBody | null;
    const schema =
      body?.generationConfig?.responseJsonSchema ?? body?.generationConfig?.responseSchema;
    const text = schema !== undefined ? JSON.stringify(minimalOf(schema)) : "ok";
    if (req.path.includes(":streamGenerateContent")) sendSse(res, candidate([{ text }]));
    else if (req.path.includes(":generateContent")) sendJson(res, candidate([{ text }]));
    else {
      res.writeHead(404, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { code: 404, message: `mock: no ${req.path}` } }));
    }
  };
  return { respond, main };
}
