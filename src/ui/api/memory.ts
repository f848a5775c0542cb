import type { Hono } from "hono";
import type { UiContext } from "../context.ts";

/** The memory view's routes (being built). */
export function memoryRoutes(_api: Hono, _ctx: UiContext): void {}
