import type { Hono } from "hono";
import type { UiContext } from "../context.ts";

/** The edits view's routes (being built). */
export function editRoutes(_api: Hono, _ctx: UiContext): void {}
