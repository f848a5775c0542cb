import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { readHookServer } from "../src/hooks/index.ts";
import { runCli } from "./helpers/cli.ts";
import { cleanups, runCleanups, waitUntil, workspace } from "./helpers/scripted-hook-server.ts";

// The prompt hook as the watch daemon serves it: the agent's answer comes once the checkpoint is
// scanned, the record is written after, and the workspace lock is free again once it is.

beforeAll(() => {
  // vitest.config.ts turns watch daemons off for the other tests; this one needs one
  delete process.env.TIMEWARP_WATCH;
});
afterEach(runCleanups);

describe("turn checkpoints served by the watch daemon", () => {
  it("answers the prompt, writes the checkpoint after, and leaves the workspace lock free", async () => {
    const root = workspace();
    mkdirSync(join(root, "src"));
    writeFileSync(join(root, "src", "a.ts"), "export const a = 1;\n");
    const started = runCli(["watch", "start", "--json", "-C", root]);
    expect(started.status, started.stderr).toBe(0);
    cleanups.push(() => runCli(["watch", "stop", "-C", root]));
    await waitUntil(() => readHookServer(root) !== null);
    const hook = (event: string, payload: object) => {
      const r = runCli(["hook", event, "--agent", "claude-code", "-C", root], {
        input: JSON.stringify({ session_id: "s1", cwd: root, ...payload }),
      });
      expect(r.status, r.stderr).toBe(0);
      // UserPromptSubmit's stdout would reach the model: nothing goes there.
      expect(r.stdout).toBe("");
    };
    const turnFile = (n: number) => join(root, ".timewarp", "turns", "s1", `00000${n}.json`);

    hook("session-start", { hook_event_name: "SessionStart", source: "startup" });
    writeFileSync(join(root, "src", "a.ts"), "export const a = 2;\n");
    hook("user-prompt-submit", { hook_event_name: "UserPromptSubmit", prompt: "first" });
    await waitUntil(() => existsSync(turnFile(1)));
    writeFileSync(join(root, "src", "b.ts"), "export const b = 1;\n");
    hook("user-prompt-submit", { hook_event_name: "UserPromptSubmit", prompt: "second" });
    await waitUntil(() => existsSync(turnFile(2)));
    await waitUntil(() => (readHookServer(root)?.served ?? 0) >= 3);
    const status = runCli(["watch", "status", "--json", "-C", root]).json() as {
      hooks: { timings: Record<string, { count: number }> };
    };
    expect(status.hooks.timings["user-prompt-submit"]?.count).toBe(2);
    const turn1 = JSON.parse(readFileSync(turnFile(1), "utf8")) as { snapshot_id: string };
    expect(existsSync(join(root, ".timewarp", "snapshots", turn1.snapshot_id))).toBe(true);

    // The lock the checkpoint held through its deferred writing is free: a command that takes
    // it at once (no waiting) gets it.
    const snap = runCli(["snapshot", "create", "--json", "-C", root]);
    expect(snap.status, snap.stdout).toBe(0);

    writeFileSync(join(root, "src", "a.ts"), "export const a = 3;\n");
    const r = runCli(["rewind", "1", "--json", "-C", root]);
    expect(r.status, r.stdout).toBe(0);
    expect(readFileSync(join(root, "src", "a.ts"), "utf8")).toBe("export const a = 2;\n");
    expect(existsSync(join(root, "src", "b.ts"))).toBe(false);
  }, 180_000);
});
