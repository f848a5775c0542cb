import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { makeTempDir } from "../../test/helpers/cli.ts";
import { readEvents, systemClock, systemRandom, workspacePaths } from "../core/index.ts";
import { endSession, readStatus } from "../timemachine/index.ts";
import { runHook } from "./run-hook.ts";

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

function workspace(): string {
  const t = makeTempDir("tw-run-hook-");
  cleanups.push(t.cleanup);
  writeFileSync(join(t.dir, "a.txt"), "a\n");
  return t.dir;
}

const start = (root: string, sessionId: string, deferAfterAnswer?: boolean) =>
  runHook({
    event: "session-start",
    input: JSON.stringify({
      session_id: sessionId,
      cwd: root,
      transcript_path: null,
      hook_event_name: "SessionStart",
      source: "startup",
    }),
    agent: "claude-code",
    deferAfterAnswer,
    clock: systemClock,
    random: systemRandom,
  });

const snapshotExists = (root: string, id: string | null) =>
  id !== null && existsSync(join(workspacePaths(root).snapshots, id));

/** A session that ended, its snapshot left for the next session start's cleanup. */
async function endedSession(root: string): Promise<string | null> {
  expect((await start(root, "before")).outcome.kind).toBe("ok");
  const id = readStatus(root).session_snapshot_id;
  endSession({ root, sessionId: "before" });
  writeFileSync(join(root, "a.txt"), "changed\n");
  return id;
}

describe("runHook: work left for after the answer", () => {
  it("a session start answers with its snapshot recorded and cleans up in `after`", async () => {
    const root = workspace();
    const old = await endedSession(root);
    const run = await start(root, "now", true);
    expect(run.outcome.kind).toBe("ok");
    expect(run.exitCode).toBe(0);
    const current = readStatus(root).session_snapshot_id;
    expect(current).not.toBe(old);
    expect(snapshotExists(root, current)).toBe(true);
    expect(snapshotExists(root, old)).toBe(true); // the cleanup has not run yet
    expect(run.after).toBeTypeOf("function");
    await run.after?.();
    expect(snapshotExists(root, old)).toBe(false);
    expect(snapshotExists(root, current)).toBe(true);
  });

  it("without deferAfterAnswer the cleanup runs before the answer", async () => {
    const root = workspace();
    const old = await endedSession(root);
    const run = await start(root, "now");
    expect(run.after).toBeUndefined();
    expect(snapshotExists(root, old)).toBe(false);
  });

  it("a cleanup that fails after the answer is a hook.failed event; before it, the answer says so (exit 0)", async () => {
    const root = workspace();
    await endedSession(root);
    const sessions = workspacePaths(root).sessions;
    mkdirSync(sessions, { recursive: true });
    writeFileSync(join(sessions, "torn.json"), "{");

    const deferred = await start(root, "now", true);
    expect(deferred.outcome.kind).toBe("ok");
    await expect(deferred.after?.()).resolves.toBeUndefined();
    const failed = readEvents(workspacePaths(root).events).events.filter(
      (e) => e.type === "hook.failed",
    );
    expect(failed).toHaveLength(1);
    expect(failed[0]?.data.message).toContain("torn.json");

    const inline = await start(root, "later");
    expect(inline.outcome.kind).toBe("failed");
    expect(inline.exitCode).toBe(0);
    expect(inline.stderr).toContain("torn.json");
  });
});
