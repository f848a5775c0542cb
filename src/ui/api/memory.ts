import type { Hono } from "hono";
import { z } from "zod";
import type { UiContext } from "../context.ts";
import { PageQuerySchema, pageOf, parseQuery } from "./paging.ts";

const RunQuery = PageQuerySchema.extend({
  kind: z.enum(["edit", "plan", "shell"]).optional(),
  user: z
    .string()
    .regex(/^[A-Za-z0-9._-]{1,64}$/)
    .optional(),
});

/**
 * The memory view (runs of `.timewarp/memory/runs/`): `/api/memory` (the runs, most recently
 * changed first, paged, each with its objective and guard counts) and `/api/memory/:run` (its
 * events paged and filtered by `kind`, every guard record for the drift chart, the thresholds,
 * the cards it gave rendered for `?user=`, the users with a profile).
 */
export function memoryRoutes(api: Hono, ctx: UiContext): void {
  api.get("/memory", async (c) => {
    const q = parseQuery(PageQuerySchema, c.req.query());
    const { labRunOverview, listLabRuns } = await memoryLibrary();
    const page = pageOf(listLabRuns(ctx.root), q);
    return c.json({
      ...page,
      items: page.items.map((r) => ({
        ...labRunOverview(ctx.root, r.run_id),
        modified_at: r.modified_at,
      })),
    });
  });
  api.get("/memory/:run", async (c) => {
    const q = parseQuery(RunQuery, c.req.query());
    const { readLabRun } = await memoryLibrary();
    const run = readLabRun({ root: ctx.root, clock: ctx.clock }, c.req.param("run"), {
      ...(q.user === undefined ? {} : { user: q.user }),
    });
    const events = q.kind === undefined ? run.events : run.events.filter((e) => e.tool === q.kind);
    return c.json({
      ...run,
      events: { ...pageOf(events, q), all: run.events.length },
    });
  });
}

/**
 * The memory capability (its retrieval index, redaction rules and shell parser: ~11 MB of the
 * server's memory) is loaded when the Memory view is first asked for, not at start.
 */
function memoryLibrary(): Promise<typeof import("../../memory/index.ts")> {
  return import("../../memory/index.ts");
}
