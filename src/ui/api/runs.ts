import type { Hono } from "hono";
import type { UiContext } from "../context.ts";

/** The runs view's routes (being built). */
export function runRoutes(_api: Hono, _ctx: UiContext): void {}
