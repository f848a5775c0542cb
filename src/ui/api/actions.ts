import type { Context } from "hono";
import { z } from "zod";
import { ErrorCode, formatZodIssues, TimewarpError } from "../../core/index.ts";
import type { UiContext } from "../context.ts";

/**
 * The dashboard's state-changing calls (revert, travel, return, rewind) run one at a time per
 * server, in arrival order: two clicks never race inside this process (another process holding
 * the workspace is the library's to refuse, with LOCKED). The queue waits without blocking the
 * event loop; the pages keep loading while an action runs.
 */
const queues = new WeakMap<UiContext, Promise<unknown>>();

export function runAction<T>(ctx: UiContext, fn: () => Promise<T> | T): Promise<T> {
  const before = queues.get(ctx) ?? Promise.resolve();
  const run = before.then(fn, fn);
  queues.set(
    ctx,
    run.catch(() => undefined),
  );
  return run;
}

/** A POST's JSON body, checked against `schema` (INVALID_INPUT naming the field otherwise). */
export async function readBody<T extends z.ZodType>(c: Context, schema: T): Promise<z.infer<T>> {
  let raw: unknown;
  try {
    const text = await c.req.text();
    raw = text === "" ? {} : JSON.parse(text);
  } catch {
    throw new TimewarpError(ErrorCode.INVALID_INPUT, "the request body is not JSON");
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success)
    throw new TimewarpError(ErrorCode.INVALID_INPUT, formatZodIssues(parsed.error.issues), {
      data: { issues: parsed.error.issues },
    });
  return parsed.data;
}

/** A GET's query, checked against `schema`. */
export function readQuery<T extends z.ZodType>(c: Context, schema: T): z.infer<T> {
  const parsed = schema.safeParse(c.req.query());
  if (!parsed.success)
    throw new TimewarpError(ErrorCode.INVALID_INPUT, formatZodIssues(parsed.error.issues), {
      data: { issues: parsed.error.issues },
    });
  return parsed.data;
}

/** `?limit=` (1..500, default 50) and `?cursor=` as the contract pages lists. */
export const PageQuery = z.object({
  limit: z.coerce.number().int().min(1).max(500).default(50),
  cursor: z.string().max(200).optional(),
});

/** A page of `all` from an offset cursor: `{ items, next, total }`. */
export function pageOf<T>(
  all: readonly T[],
  q: { limit: number; cursor?: string | undefined },
): { items: T[]; next: string | null; total: number } {
  const start = q.cursor === undefined ? 0 : offsetOf(q.cursor);
  const end = start + q.limit;
  return {
    items: all.slice(start, end),
    next: end < all.length ? Buffer.from(`o:${end}`).toString("base64url") : null,
    total: all.length,
  };
}

function offsetOf(cursor: string): number {
  const m = /^o:(\d{1,9})$/.exec(Buffer.from(cursor, "base64url").toString("utf8"));
  if (m === null)
    throw new TimewarpError(ErrorCode.INVALID_INPUT, `not a cursor of this list: ${cursor}`);
  return Number(m[1]);
}
