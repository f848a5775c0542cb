import type { Hono } from "hono";
import type { UiContext } from "../context.ts";

/** The timeline view's routes (being built). */
export function timelineRoutes(_api: Hono, _ctx: UiContext): void {}
