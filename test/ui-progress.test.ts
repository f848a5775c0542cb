import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createProgressChannel, type ProgressRecord, progressDir } from "../src/core/index.ts";
import { startUiServer, type UiServer } from "../src/ui/index.ts";
import { makeTempDir } from "./helpers/cli.ts";

const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function serve(): Promise<{ root: string; server: UiServer }> {
  const t = makeTempDir("tw-ui-progress-");
  cleanups.push(t.cleanup);
  mkdirSync(join(t.dir, ".timewarp"));
  const server = await startUiServer({ root: t.dir });
  cleanups.push(() => server.close());
  return { root: t.dir, server };
}

function get(server: UiServer, path: string, init: RequestInit = {}): Promise<Response> {
  return fetch(`${server.origin}${path}`, {
    ...init,
    headers: { authorization: `Bearer ${server.token}` },
  });
}

/** Server-sent events of one `progress` kind, read from a streaming response. */
function sseReader(res: Response): () => Promise<{ items: ProgressRecord[] }> {
  const reader = res.body?.getReader();
  if (reader === undefined) throw new Error("no body");
  const decoder = new TextDecoder();
  let buffer = "";
  return async () => {
    for (;;) {
      const end = buffer.indexOf("\n\n");
      if (end >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const data = block
          .split("\n")
          .filter((l) => l.startsWith("data:"))
          .map((l) => l.slice(5).trimStart())
          .join("\n");
        if (/^event: ?progress$/m.test(block)) return JSON.parse(data);
        continue;
      }
      const { value, done } = await reader.read();
      if (done) throw new Error("stream ended");
      buffer += decoder.decode(value, { stream: true });
    }
  };
}

describe("/api/progress", () => {
  it("lists the live records and streams their changes until the work ends", async () => {
    const { root, server } = await serve();
    const first = await get(server, "/api/progress");
    expect(first.status).toBe(200);
    expect(await first.json()).toEqual({ items: [], next: null, total: 0 });

    const abort = new AbortController();
    cleanups.push(() => abort.abort());
    const stream = await get(server, "/api/progress/stream", { signal: abort.signal });
    expect(stream.headers.get("content-type")).toContain("text/event-stream");
    const next = sseReader(stream);
    expect((await next()).items).toEqual([]);

    const channel = createProgressChannel({
      root,
      command: "fsck",
      clock: { now: () => new Date() },
      intervalMs: 0,
    });
    cleanups.push(() => channel.end());
    channel.update({ phase: "check objects", done: 40, total: 100 });
    const running = await next();
    expect(running.items).toMatchObject([
      { command: "fsck", phase: "check objects", done: 40, total: 100, pid: process.pid },
    ]);
    const listed = (await (await get(server, "/api/progress")).json()) as {
      items: ProgressRecord[];
    };
    expect(listed.items.map((r) => r.command)).toEqual(["fsck"]);

    channel.end();
    expect((await next()).items).toEqual([]);
  });

  it("leaves out a record whose process is gone", async () => {
    const { root, server } = await serve();
    mkdirSync(progressDir(root), { recursive: true });
    const dead: ProgressRecord = {
      schema_version: 1,
      pid: 2 ** 22 + 7, // above Linux's pid_max: no process has it
      process_start: null,
      command: "gc",
      phase: "sweep",
      message: null,
      done: 1,
      total: 2,
      started_at: "2026-11-27T02:00:00.000Z",
      updated_at: "2026-11-27T02:00:00.000Z",
    };
    writeFileSync(join(progressDir(root), `${dead.pid}.json`), JSON.stringify(dead));
    const res = await get(server, "/api/progress");
    expect(await res.json()).toMatchObject({ items: [], total: 0 });
  });

  it("needs the token like every route", async () => {
    const { server } = await serve();
    const res = await fetch(`${server.origin}/api/progress`);
    expect(res.status).toBe(401);
  });
});
