import type { Hono } from "hono";
import { z } from "zod";
import type { UiContext } from "../context.ts";
import { parseQuery } from "./paging.ts";
import { timelineIndexOf } from "./timeline-index.ts";
import type { TimelineFilters } from "./timeline-query.ts";
import { ROW_KINDS, type RowKind } from "./timeline-rows.ts";

const time = (name: string) =>
  z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (v === undefined || v === "") return undefined;
      const ms = Date.parse(v);
      if (!Number.isFinite(ms)) {
        ctx.addIssue({
          code: "custom",
          message: `${name} ${JSON.stringify(v)} is not a time (e.g. 2026-01-06T14:30:00Z)`,
        });
        return z.NEVER;
      }
      return ms;
    });

const text = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v === "" ? undefined : v));

/** `GET /api/timeline`'s query string. */
export const TimelineQuerySchema = z.object({
  limit: z.coerce.number().int().min(1).max(500).default(50),
  cursor: text,
  after: text,
  agent: text,
  glob: text,
  session: text,
  since: time("since"),
  until: time("until"),
  /** Comma-separated row kinds (edit,guard,job…); absent: all. */
  kind: text.transform((v, ctx) => {
    if (v === undefined) return undefined;
    const kinds = v.split(",").filter((k) => k !== "");
    const bad = kinds.filter((k) => !(ROW_KINDS as readonly string[]).includes(k));
    if (bad.length > 0) {
      ctx.addIssue({
        code: "custom",
        message: `unknown kind ${bad.join(", ")} (kinds: ${ROW_KINDS.join(", ")})`,
      });
      return z.NEVER;
    }
    return new Set(kinds as RowKind[]);
  }),
});

/**
 * The timeline view's route: `GET /api/timeline` — sessions, turns, edits (agent tool, shell,
 * MCP), snapshots, travels and returns, issues, guard warnings and blocks, SkillPilot jobs,
 * newest first, filtered by agent, file glob, time, kind or session, paged on the server
 * (`{ items, next, total, head, sessions, agents }`; `after=HEAD` gives what came since).
 */
export function timelineRoutes(api: Hono, ctx: UiContext): void {
  // The index is built once the server is up, not on the first page's request: the first read
  // of a large bus takes a moment, and the user is still opening the printed URL.
  setImmediate(() => {
    try {
      timelineIndexOf(ctx).query({}, { limit: 1 });
    } catch {
      // the request that needs it will say what is wrong
    }
  }).unref();
  api.get("/timeline", (c) => {
    const q = parseQuery(TimelineQuerySchema, c.req.query());
    const filters: TimelineFilters = {
      ...(q.agent === undefined ? {} : { agent: q.agent }),
      ...(q.glob === undefined ? {} : { glob: q.glob }),
      ...(q.session === undefined ? {} : { session: q.session }),
      ...(q.since === undefined ? {} : { sinceMs: q.since }),
      ...(q.until === undefined ? {} : { untilMs: q.until }),
      ...(q.kind === undefined ? {} : { kinds: q.kind }),
    };
    const page = timelineIndexOf(ctx).query(filters, {
      limit: q.limit,
      ...(q.cursor === undefined ? {} : { cursor: q.cursor }),
      ...(q.after === undefined ? {} : { after: q.after }),
    });
    return c.json({
      items: page.rows,
      next: page.next,
      total: page.total,
      head: page.head,
      truncated: page.truncated,
      sessions: page.sessions,
      agents: page.agents,
    });
  });
}
