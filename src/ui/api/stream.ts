import type { Hono } from "hono";
import { type SSEStreamingApi, streamSSE } from "hono/streaming";
import { workspacePaths } from "../../core/index.ts";
import type { UiContext } from "../context.ts";
import { busEnd, scanBusFrom, type TailedEvent, watchBus } from "./bus-tail.ts";

/** How long a browser waits before it reconnects a dropped stream (the `retry:` line). */
const RETRY_MS = 2000;
/** A comment line this often keeps proxies and idle timeouts from closing a quiet stream. */
const HEARTBEAT_MS = 15_000;
/** A reconnect further behind than this many events is told to reload (`gap`), not replayed. */
const MAX_CATCH_UP = 1000;

/**
 * `GET /api/stream`: the event bus as server-sent events, from now on. Each bus event is one
 * `event: bus` message whose `id:` is the bus offset after its line, so a browser that
 * reconnects (it sends `Last-Event-ID`) resumes exactly where it left. The stream follows the
 * bus through fs.watch with a slow poll behind it, sends a comment every 15 s, and ends when the
 * page goes or the server closes.
 */
export function streamRoutes(api: Hono, ctx: UiContext): void {
  api.get("/stream", (c) =>
    streamSSE(c, async (stream) => {
      const path = workspacePaths(ctx.root).events;
      const from = Number(c.req.header("last-event-id") ?? Number.NaN);
      const resumed = Number.isSafeInteger(from) && from >= 0;
      const tail = { offset: resumed ? from : busEnd(path), ino: 0, busy: false, again: false };
      await stream.write(`retry: ${RETRY_MS}\n\n`);
      await stream.writeSSE({
        event: "ready",
        id: String(tail.offset),
        data: JSON.stringify({ offset: tail.offset, resumed }),
      });
      const pump = () => pumpBus(stream, path, tail);
      const unsubscribe = watchBus(path, () => void pump());
      const beat = setInterval(() => void stream.write(": keep-alive\n\n"), HEARTBEAT_MS);
      beat.unref();
      try {
        await pump();
        await new Promise<void>((resolve) => {
          stream.onAbort(() => resolve());
          c.req.raw.signal.addEventListener("abort", () => resolve(), { once: true });
          if (stream.aborted || c.req.raw.signal.aborted) resolve();
        });
      } finally {
        clearInterval(beat);
        unsubscribe();
      }
    }),
  );
}

/** Send what the bus got since `tail.offset`; one pass at a time, again if it grew meanwhile. */
async function pumpBus(
  stream: SSEStreamingApi,
  path: string,
  tail: { offset: number; ino: number; busy: boolean; again: boolean },
): Promise<void> {
  if (tail.busy) {
    tail.again = true;
    return;
  }
  tail.busy = true;
  try {
    do {
      tail.again = false;
      const events: TailedEvent[] = [];
      let count = 0;
      const scan = scanBusFrom(path, tail, {
        reset: () => {
          events.length = 0;
          count = 0;
        },
        event: (t) => {
          if (++count <= MAX_CATCH_UP) events.push(t);
        },
      });
      tail.ino = scan.ino;
      if (count > MAX_CATCH_UP) {
        await stream.writeSSE({
          event: "gap",
          id: String(scan.end),
          data: JSON.stringify({ skipped: count }),
        });
      } else {
        for (const { end, event } of events) {
          if (stream.aborted) return;
          await stream.writeSSE({ event: "bus", id: String(end), data: JSON.stringify(event) });
        }
      }
      tail.offset = scan.end;
    } while (tail.again && !stream.aborted);
  } finally {
    tail.busy = false;
  }
}
