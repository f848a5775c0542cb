import type { Hono } from "hono";
import { streamSSE } from "hono/streaming";
import { readProgress } from "../../core/index.ts";
import type { UiContext } from "../context.ts";

/** How often the stream looks at `.timewarp/progress/` (the writers write at most ~4×/s). */
const POLL_MS = 250;
/** A comment line this often keeps proxies and the browser from timing the stream out. */
const HEARTBEAT_MS = 15_000;

/**
 * Long work in progress (issue 19 item 5): the records of the progress channel
 * (`.timewarp/progress/<pid>.json`, written by every CLI command that reports progress), live
 * ones only. `GET /api/progress` is the list now; `GET /api/progress/stream` sends it as a
 * server-sent event `progress` at once and again whenever it changes. Reads only: a record of
 * a dead process is left for the next writer to sweep.
 */
export function progressRoutes(api: Hono, ctx: UiContext): void {
  api.get("/progress", (c) => {
    const items = readProgress(ctx.root);
    return c.json({ items, next: null, total: items.length });
  });
  api.get("/progress/stream", (c) =>
    streamSSE(c, async (stream) => {
      let open = true;
      stream.onAbort(() => {
        open = false;
      });
      let last = "";
      let quiet = 0;
      while (open && !stream.aborted) {
        const text = JSON.stringify({ items: readProgress(ctx.root) });
        quiet += POLL_MS;
        if (text !== last) {
          last = text;
          quiet = 0;
          await stream.writeSSE({ event: "progress", data: text });
        } else if (quiet >= HEARTBEAT_MS) {
          quiet = 0;
          await stream.write(": still here\n\n");
        }
        await stream.sleep(POLL_MS);
      }
    }),
  );
}
