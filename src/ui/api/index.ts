import { Hono } from "hono";
import type { UiContext } from "../context.ts";
import { editRoutes } from "./edits.ts";
import { issueRoutes } from "./issues.ts";
import { memoryRoutes } from "./memory.ts";
import { progressRoutes } from "./progress.ts";
import { runRoutes } from "./runs.ts";
import { snapshotRoutes } from "./snapshots.ts";
import { streamRoutes } from "./stream.ts";
import { timelineRoutes } from "./timeline.ts";

/** Every `/api/*` route, one module per view. */
export function apiRoutes(ctx: UiContext): Hono {
  const api = new Hono();
  timelineRoutes(api, ctx);
  streamRoutes(api, ctx);
  editRoutes(api, ctx);
  snapshotRoutes(api, ctx);
  issueRoutes(api, ctx);
  runRoutes(api, ctx);
  memoryRoutes(api, ctx);
  progressRoutes(api, ctx);
  return api;
}
