import { z } from "zod";
import { ErrorCode, formatZodIssues, TimewarpError } from "../../core/index.ts";

/** `?limit=` (default 50, max 500) and `?cursor=` (opaque: the previous page's `next`). */
export const PageQuerySchema = z.object({
  limit: z.coerce.number().int().min(1).max(500).default(50),
  cursor: z.string().regex(/^\d+$/, "cursor: expected the `next` of the previous page").optional(),
});

export type PageQuery = z.infer<typeof PageQuerySchema>;

/** One page of a list already in order: `{ items, next, total }` (the dashboard's list shape). */
export function pageOf<T>(
  items: readonly T[],
  query: PageQuery,
): { items: T[]; next: string | null; total: number } {
  const start = query.cursor === undefined ? 0 : Number(query.cursor);
  const end = start + query.limit;
  return {
    items: items.slice(start, end),
    next: end < items.length ? String(end) : null,
    total: items.length,
  };
}

/**
 * A request's query string (`c.req.query()`) against `schema`: the value, or INVALID_INPUT naming
 * each field that is wrong (the issues in `data`). Every route's one query parser.
 */
export function parseQuery<S extends z.ZodType>(
  schema: S,
  query: Record<string, string>,
): z.infer<S> {
  const parsed = schema.safeParse(query);
  if (parsed.success) return parsed.data;
  throw new TimewarpError(ErrorCode.INVALID_INPUT, formatZodIssues(parsed.error.issues), {
    data: { issues: parsed.error.issues },
  });
}
