import { spawn } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import type { Client } from "@modelcontextprotocol/client";
import { afterEach, describe, expect, it } from "vitest";
import { processStartOf } from "../src/core/index.ts";
import { makeTempDir } from "./helpers/cli.ts";
import { connectMcp } from "./helpers/mcp.ts";

/**
 * Issue 16, class 5: the ledger lock in a long-lived process. Parallel tool calls to one server
 * (and to two servers on one workspace) must all succeed, one after the other, each recorded,
 * with no lock left behind; a lock whose pid now names another process must not block.
 */
describe("parallel ledger calls over MCP stdio", () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  const workspace = () => {
    const tmp = makeTempDir("tw-mcp-parallel-");
    cleanups.push(tmp.cleanup);
    writeFileSync(join(tmp.dir, "w.txt"), "v0\n");
    return tmp.dir;
  };
  const server = async (dir: string) => {
    const s = await connectMcp(dir);
    cleanups.push(s.close);
    return s.client;
  };
  const write = (client: Client, content: string) =>
    client.callTool({ name: "ApplyWholeFileEdit", arguments: { path: "w.txt", content } });

  /**
   * Every edit rewrote the same file: if they ran one after the other, each one's pre-image is
   * the previous one's post-image, so the recorded diffs form one chain from v0 through all of
   * them (an interleaved read-modify-write would break it or record a pre-image twice).
   */
  const expectOneChain = async (client: Client, contents: string[]) => {
    const history = (
      await client.callTool({
        name: "GetEditHistory",
        arguments: { includeDiffs: true, limit: 100 },
      })
    ).structuredContent as { history: { diff: string }[]; pagination: { total: number } };
    expect(history.pagination.total).toBe(contents.length);
    const next = new Map<string, string>();
    for (const { diff } of history.history) {
      const from = /^-(v\S+)$/m.exec(diff)?.[1];
      const to = /^\+(v\S+)$/m.exec(diff)?.[1];
      expect(from).toBeDefined();
      expect(next.has(from as string)).toBe(false);
      next.set(from as string, to as string);
    }
    const walked: string[] = [];
    for (let at = next.get("v0"); at !== undefined; at = next.get(at)) walked.push(at);
    expect([...walked].sort()).toEqual([...contents].sort());
  };

  it("10 parallel ApplyWholeFileEdit to one server all succeed, serialized, each recorded, no lock left", async () => {
    const dir = workspace();
    const client = await server(dir);
    const contents = Array.from({ length: 10 }, (_, i) => `v${i + 1}`);
    const results = await Promise.all(contents.map((c) => write(client, `${c}\n`)));
    for (const r of results) {
      expect(r.isError, JSON.stringify(r.content)).toBeFalsy();
      expect(r.structuredContent).toMatchObject({ success: true, snapshotId: expect.any(String) });
    }
    const ids = results.map((r) => (r.structuredContent as { snapshotId: string }).snapshotId);
    expect(new Set(ids).size).toBe(10);
    await expectOneChain(client, contents);
    expect(contents).toContain(readFileSync(join(dir, "w.txt"), "utf8").trim());
    expect(existsSync(join(dir, ".timewarp", "history", "lock"))).toBe(false);
  });

  it("two servers on one workspace, called in parallel, all succeed", async () => {
    const dir = workspace();
    const [a, b] = await Promise.all([server(dir), server(dir)]);
    const contents = Array.from({ length: 12 }, (_, i) => `v${i + 1}`);
    const results = await Promise.all(contents.map((c, i) => write(i % 2 === 0 ? a : b, `${c}\n`)));
    for (const r of results) expect(r.isError, JSON.stringify(r.content)).toBeFalsy();
    await expectOneChain(a, contents);
    expect(existsSync(join(dir, ".timewarp", "history", "lock"))).toBe(false);
  });

  it.runIf(process.platform === "linux")(
    "takes over a lock naming a live pid that belongs to a process started at another time",
    async () => {
      const dir = workspace();
      const client = await server(dir);
      // a live process that never held the lock: its pid in the lock, with another start time,
      // is what a reused pid looks like
      const stranger = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], {
        stdio: "ignore",
      });
      cleanups.push(() => {
        stranger.kill("SIGKILL");
      });
      const pid = stranger.pid as number;
      const start = processStartOf(pid);
      expect(start).not.toBeNull();
      const lock = join(dir, ".timewarp", "history", "lock");
      expect((await write(client, "v1\n")).isError).toBeFalsy(); // creates .timewarp/history/
      writeFileSync(
        lock,
        JSON.stringify({
          pid,
          host: hostname(),
          started_at: "2026-01-01T00:00:00.000Z",
          command: "ApplyWholeFileEdit",
          process_start: `${start}7`,
        }),
      );
      const r = await write(client, "v2\n");
      expect(r.isError, JSON.stringify(r.content)).toBeFalsy();
      expect(readFileSync(join(dir, "w.txt"), "utf8")).toBe("v2\n");
      expect(existsSync(lock)).toBe(false);
    },
  );
});
