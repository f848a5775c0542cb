import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { makeTempDir, runCli } from "./helpers/cli.ts";
import { connectMcp, toolError } from "./helpers/mcp.ts";

/** Issue 16, classes 4 and 9 over the MCP server: the same guards as the CLI, from a subdirectory. */
describe("ledger tools over MCP respect the time machine and VCS folders", () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  it("PROTECTED_PATH for .git unless force; TRANSITION_INTERRUPTED while a travel awaits recover", async () => {
    const tmp = makeTempDir("tw-tm-mcp-");
    cleanups.push(tmp.cleanup);
    const ws = tmp.dir;
    execFileSync("git", ["init", "-q", ws]);
    mkdirSync(join(ws, "lib"));
    writeFileSync(join(ws, "a.txt"), "v1\n");
    // started in a subdirectory: the server works on the repository's root
    const { client, close } = await connectMcp(join(ws, "lib"));
    cleanups.push(close);
    const code = (r: unknown) => toolError(r).error?.code;

    expect(code(await client.callTool({ name: "Delete", arguments: { path: ".git" } }))).toBe(
      "PROTECTED_PATH",
    );
    expect(existsSync(join(ws, ".git", "HEAD"))).toBe(true);
    const forced = await client.callTool({
      name: "ApplyWholeFileEdit",
      arguments: { path: ".git/info/note", content: "x", force: true },
    });
    expect(forced.isError).not.toBe(true);
    expect(existsSync(join(ws, ".git", "info", "note"))).toBe(true);

    const snap = runCli(["snapshot", "create", "--json"], { cwd: ws }).json() as {
      snapshot_id: string;
    };
    const killed = runCli(["travel", snap.snapshot_id, "--json"], {
      cwd: ws,
      env: { TIMEWARP_CRASH_AT: "travel:journal-restore:1" },
    });
    expect(killed.status).not.toBe(0);
    const refused = await client.callTool({
      name: "ApplyWholeFileEdit",
      arguments: { path: "b.txt", content: "b" },
    });
    expect(code(refused)).toBe("TRANSITION_INTERRUPTED");
    expect(existsSync(join(ws, "b.txt"))).toBe(false);
    expect(existsSync(join(ws, "lib", ".timewarp"))).toBe(false);
  }, 300_000);
});
