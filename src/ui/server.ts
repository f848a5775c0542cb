import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import { type Context, Hono } from "hono";
import { getCookie, setCookie } from "hono/cookie";
import { type Clock, ErrorCode, systemClock, toTimewarpError } from "../core/index.ts";
import { apiRoutes } from "./api/index.ts";
import { checkRequest, type GateConfig, newToken, tokenCookie } from "./auth.ts";
import { packageCliCommand, type UiContext } from "./context.ts";
import { pageRoutes, pageShell, workspaceInfo } from "./page.ts";

export interface UiServerOptions {
  root: string;
  /** 0 (the default) takes a free port. */
  port?: number;
  allowActions?: boolean;
  clock?: Clock;
  /** Tests pass their own; a launch makes a fresh one. */
  token?: string;
  /** What runs the CLI for actions (default: this Node with the package's `bin/timewarp.cjs`). */
  cliCommand?: string[];
}

export interface UiServer {
  /** The URL to open, token included. */
  url: string;
  /** The URL without the token (what a page shows and links to). */
  origin: string;
  token: string;
  port: number;
  close(): Promise<void>;
}

/**
 * `timewarp ui`: an HTTP server on 127.0.0.1 only. It answers with the page, its assets, the
 * front-end libraries on an allow-list and `/api/*` (thin routes over the library); every
 * request goes through the gate (`auth.ts`) first.
 */
export async function startUiServer(options: UiServerOptions): Promise<UiServer> {
  const gate: GateConfig = {
    token: options.token ?? newToken(),
    port: options.port ?? 0,
    allowActions: options.allowActions === true,
  };
  const ctx: UiContext = {
    root: options.root,
    allowActions: gate.allowActions,
    clock: options.clock ?? systemClock,
    cliCommand: options.cliCommand ?? packageCliCommand(),
  };
  const app = createUiApp(ctx, gate);
  const server = serve({ fetch: app.fetch, hostname: "127.0.0.1", port: gate.port });
  await new Promise<void>((resolve, reject) => {
    server.once("listening", () => resolve());
    server.once("error", (error) => reject(toTimewarpError(error)));
  });
  gate.port = (server.address() as AddressInfo).port;
  const origin = `http://127.0.0.1:${gate.port}`;
  return {
    url: `${origin}/?token=${gate.token}`,
    origin,
    token: gate.token,
    port: gate.port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        // Server-sent event streams never end on their own.
        (server as { closeAllConnections?: () => void }).closeAllConnections?.();
      }),
  };
}

/** The app without a socket (tests call `app.request`). */
export function createUiApp(ctx: UiContext, gate: GateConfig): Hono {
  const app = new Hono();
  app.use("*", async (c, next) => {
    const refusal = checkRequest(
      {
        method: c.req.method,
        host: c.req.header("host"),
        origin: c.req.header("origin"),
        tokens: [
          c.req.query("token"),
          getCookie(c, tokenCookie(gate.port)),
          c.req.header("authorization")?.replace(/^Bearer\s+/i, ""),
        ],
      },
      gate,
    );
    securityHeaders(c);
    if (refusal !== undefined) return refuse(c, refusal.status, refusal.code, refusal.message);
    const token = c.req.query("token");
    if (token !== undefined && c.req.method === "GET" && !c.req.path.startsWith("/api/")) {
      // The token moves from the URL into a cookie only this origin's requests carry.
      setCookie(c, tokenCookie(gate.port), gate.token, {
        httpOnly: true,
        sameSite: "Strict",
        path: "/",
      });
      const url = new URL(c.req.url);
      url.searchParams.delete("token");
      return c.redirect(`${url.pathname}${url.search}`, 302);
    }
    await next();
  });
  app.onError((error, c) => {
    const tw = toTimewarpError(error);
    return refuse(c, statusOf(tw.code), tw.code, tw.message, tw.data);
  });
  app.get("/api/workspace", (c) => c.json(workspaceInfo(ctx)));
  const api = apiRoutes(ctx);
  app.route("/api", api);
  app.all("/api/*", (c) => refuse(c, 404, ErrorCode.NOT_FOUND, `no such route: ${c.req.path}`));
  pageRoutes(app, ctx, api);
  return app;
}

/** An action the time machine's state refuses now (409: it may work later), not a fault. */
const STATE_REFUSALS: ReadonlySet<string> = new Set([
  ErrorCode.LOCKED,
  ErrorCode.NOT_IN_PAST,
  ErrorCode.REWIND_IN_PAST,
  ErrorCode.NOTHING_TO_UNDO,
  ErrorCode.NOTHING_TO_RECOVER,
  ErrorCode.TRANSITION_INTERRUPTED,
  ErrorCode.SNAPSHOT_IN_USE,
  ErrorCode.SNAPSHOT_PINNED,
]);

/** The HTTP status of an error code: the caller's mistakes 4xx, everything else 500. */
function statusOf(code: string): 400 | 403 | 404 | 409 | 500 {
  if (code === ErrorCode.INVALID_INPUT || code === ErrorCode.RANGE_INVALID) return 400;
  if (code === ErrorCode.UNSAFE_PATH || code === ErrorCode.PROTECTED_PATH) return 403;
  if (code.endsWith("NOT_FOUND")) return 404;
  if (code.endsWith("CONFLICT") || code.startsWith("NESTED_") || STATE_REFUSALS.has(code))
    return 409;
  return 500;
}

function refuse(
  c: Context,
  status: number,
  code: string,
  message: string,
  data?: Record<string, unknown>,
): Response {
  const error = data === undefined ? { code, message } : { code, message, data };
  if (c.req.path.startsWith("/api/") || c.req.header("accept")?.includes("json"))
    return c.json({ error }, status as 400);
  return c.text(`${code}: ${message}\n`, status as 400);
}

function securityHeaders(c: Context): void {
  c.header("Content-Security-Policy", pageShell().csp);
  c.header("X-Content-Type-Options", "nosniff");
  c.header("Referrer-Policy", "no-referrer");
  c.header("X-Frame-Options", "DENY");
  c.header("Cache-Control", "no-store");
}
