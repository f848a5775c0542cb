import { randomBytes, timingSafeEqual } from "node:crypto";
import { ErrorCode } from "../core/index.ts";

/**
 * The dashboard's gate, pure: every request must carry the launch's token, come to the server by
 * its own name (`Host`: DNS rebinding gives a foreign page our address under another name) and,
 * when a browser says where it comes from (`Origin`), from the server's own page. A request that
 * changes state also needs `--allow-actions` and an `Origin` (a browser always sends one on a
 * POST; a form on another site cannot forge it).
 */
export interface GateConfig {
  token: string;
  port: number;
  allowActions: boolean;
}

export interface GateRequest {
  method: string;
  host: string | undefined;
  origin: string | undefined;
  /** The token as the request carries it: `?token=`, the cookie, or `Authorization: Bearer`. */
  tokens: (string | undefined)[];
}

export interface GateRefusal {
  status: 401 | 403;
  code: ErrorCode;
  message: string;
}

/**
 * The cookie a page load with `?token=` sets, so links, fetches and EventSource carry it. Cookies
 * are kept per host, not per port: the port in the name keeps two dashboards from replacing each
 * other's token.
 */
export function tokenCookie(port: number): string {
  return `tw_token_${port}`;
}

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/** A fresh per-launch token: 192 random bits, URL-safe. */
export function newToken(): string {
  return randomBytes(24).toString("base64url");
}

/** The names the server answers to: 127.0.0.1 and localhost, at its port. */
export function ownHosts(port: number): string[] {
  return [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`];
}

export function checkRequest(req: GateRequest, config: GateConfig): GateRefusal | undefined {
  const hosts = ownHosts(config.port);
  if (req.host === undefined || !hosts.includes(req.host.toLowerCase()))
    return {
      status: 403,
      code: ErrorCode.FOREIGN_ORIGIN,
      message: `Host ${JSON.stringify(req.host ?? "")} is not this server's (127.0.0.1:${config.port})`,
    };
  if (req.origin !== undefined && !hosts.some((h) => req.origin?.toLowerCase() === `http://${h}`))
    return {
      status: 403,
      code: ErrorCode.FOREIGN_ORIGIN,
      message: `Origin ${JSON.stringify(req.origin)} is not this server's`,
    };
  if (!req.tokens.some((t) => t !== undefined && sameToken(t, config.token)))
    return {
      status: 401,
      code: ErrorCode.UNAUTHORIZED,
      message: "this dashboard needs the token printed by `timewarp ui` (open the URL it printed)",
    };
  if (!SAFE_METHODS.has(req.method.toUpperCase())) {
    if (!config.allowActions)
      return {
        status: 403,
        code: ErrorCode.ACTIONS_DISABLED,
        message: "the dashboard is read-only: start it with `timewarp ui --allow-actions`",
      };
    if (req.origin === undefined)
      return {
        status: 403,
        code: ErrorCode.FOREIGN_ORIGIN,
        message: "a state-changing request must come from the dashboard's page (no Origin)",
      };
  }
  return undefined;
}

function sameToken(given: string, token: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}
