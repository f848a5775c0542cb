import type { Hono } from "hono";
import type { UiContext } from "../context.ts";

/** The snapshots view's routes (being built). */
export function snapshotRoutes(_api: Hono, _ctx: UiContext): void {}
