import type { Context } from "hono";
import type { z } from "zod";
import { ErrorCode, formatZodIssues, TimewarpError } from "../../core/index.ts";
import type { UiContext } from "../context.ts";

/**
 * The dashboard's state-changing calls (revert, travel, return, rewind) run one at a time per
 * server, in arrival order: two clicks never race inside this process (another process holding
 * the workspace is the library's to refuse, with LOCKED). The queue waits without blocking the
 * event loop, and a confirmed action runs in the CLI's own process (`cli-action.ts`), so the
 * pages keep loading while it works.
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
