import type { Hono } from "hono";
import type { UiContext } from "../context.ts";

/** The issues view's routes (being built). */
export function issueRoutes(_api: Hono, _ctx: UiContext): void {}
