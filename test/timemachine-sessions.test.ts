import { spawn } from "node:child_process";
import { existsSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { acquireLock, gitBlobId, workspacePaths } from "../src/core/index.ts";
import { createObjectStore, fsck, readSnapshot, readStatCache } from "../src/store/index.ts";
import {
  beginSession,
  endSession,
  getIssue,
  readStatus,
  rememberSession,
  reportIssue,
  returnToPresent,
  startSession,
  travel,
} from "../src/timemachine/index.ts";
import { makeTempDir, REPO_ROOT } from "./helpers/cli.ts";
import { writeFiles } from "./helpers/timemachine-fixtures.ts";

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.splice(0).reverse()) c();
});

function workspace(): string {
  const t = makeTempDir("tw-sess-");
  cleanups.push(t.cleanup);
  writeFiles(t.dir, { "a.txt": "a\n", "src/b.ts": "export const b = 1;\n" });
  return t.dir;
}

const snapshotDir = (root: string, id: string) => join(root, ".timewarp", "snapshots", id);
const DEAD_PID = 2 ** 22 + 12345; // above Linux's pid_max default: never a live process

describe("on_session_start", () => {
  it("reports the first snapshot's scan as it goes (the CLI's progress line), and nothing on resume", async () => {
    const root = workspace();
    const files: Record<string, string> = {};
    for (let i = 0; i < 700; i++) files[`src/m${i % 7}/f${i}.ts`] = `export const v${i} = ${i};\n`;
    writeFiles(root, files);
    const seen: { entries: number; rehashed: number }[] = [];
    await startSession({ root, sessionId: "sess_p", onProgress: (p) => seen.push(p) });
    // 702 files: the fixture's two and these 700, every one read by a first snapshot
    expect(seen.length).toBeGreaterThan(0);
    expect(seen.at(-1)?.entries).toBeGreaterThanOrEqual(702);
    expect(seen.at(-1)?.rehashed).toBe(702);
    const again: unknown[] = [];
    const resumed = await startSession({
      root,
      sessionId: "sess_p",
      onProgress: (p) => again.push(p),
    });
    expect(resumed.resumed).toBe(true);
    expect(again).toEqual([]);
  });

  it("writes snapshot.json with every seed field, the env fingerprint and the task hint", async () => {
    const root = workspace();
    const s = await startSession({ root, sessionId: "sess_1", taskHint: "fix the slug bug" });
    const record = JSON.parse(
      readFileSync(join(snapshotDir(root, s.snapshot_id), "snapshot.json"), "utf8"),
    );
    expect(record).toMatchObject({
      snapshot_id: s.snapshot_id,
      session_id: "sess_1",
      workspace_root: root,
      initial_task_hint: "fix the slug bug",
      files: 2,
      bytes: 22,
      partial: false,
    });
    expect(record.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expect(record.exclude_globs).toEqual(
      expect.arrayContaining(["node_modules/", ".timewarp/", ".venv/", "dist/"]),
    );
    expect(record.env_fingerprint).toMatchObject({
      platform: process.platform,
      node: expect.stringMatching(/^v\d+/),
    });
    expect(s.snapshot_id).toMatch(/^s_\d{8}_\d{6}_[0-9a-z]{6}$/);
    const state = JSON.parse(readFileSync(join(root, ".timewarp", "state.json"), "utf8"));
    expect(state).toMatchObject({
      session_id: "sess_1",
      session_snapshot_id: s.snapshot_id,
      mode: "present",
    });
    for (const k of [
      "workspace_root",
      "current_snapshot_id",
      "backup_path",
      "entered_at",
      "guard_token",
    ]) {
      expect(state).toHaveProperty(k);
    }
  });

  it("caches the env probes: the second start does not spawn them again", async () => {
    const root = workspace();
    await startSession({ root, sessionId: "one" });
    const cache = join(root, ".timewarp", "cache", "env-fingerprint.json");
    const doc = JSON.parse(readFileSync(cache, "utf8"));
    // poison the cached answer: if the second start re-probed, the real version would come back
    writeFileSync(
      cache,
      JSON.stringify({ ...doc, fingerprint: { ...doc.fingerprint, node: "v0.cached" } }),
    );
    const s = await startSession({ root, sessionId: "two" });
    expect(s.env_fingerprint.node).toBe("v0.cached");
    writeFiles(root, { ".nvmrc": "20\n" }); // a version file the shims read changes the key
    const t = await startSession({ root, sessionId: "three" });
    expect(t.env_fingerprint.node).not.toBe("v0.cached");
  });

  it("cleanup skips the gc when the deleted snapshots hold exactly what the new one holds", async () => {
    const root = workspace();
    writeFiles(root, { "a.txt": "a\n" });
    const gcRuns = () =>
      readFileSync(join(root, ".timewarp", "events.jsonl"), "utf8")
        .split("\n")
        .filter((l) => l.includes('"gc.completed"')).length;
    // each session ends before the next starts: then nothing holds its snapshot
    const next = async (id: string) => {
      const s = await startSession({ root, sessionId: id, pid: DEAD_PID });
      endSession({ root, sessionId: id });
      return s;
    };
    const first = await next("one");
    await next("two");
    const before = gcRuns();
    // a new session on an unchanged workspace: the ended one's snapshot goes, no gc
    const again = await next("three");
    expect(again.cleanup.deleted_snapshots.length).toBe(1);
    expect(again.cleanup.deleted_snapshots).not.toContain(again.snapshot_id);
    expect(gcRuns()).toBe(before);
    expect(existsSync(snapshotDir(root, first.snapshot_id))).toBe(false);
    // a change: the next cleanup collects the old content
    writeFiles(root, { "a.txt": "b\n" });
    const changed = await next("four");
    expect(changed.cleanup.deleted_snapshots.length).toBe(1);
    expect(gcRuns()).toBe(before + 1);
    expect(changed.cleanup.removed_objects).toBe(1);
  });

  it("cleanup collects what the deleted snapshots named; garbage from elsewhere waits for the daily whole gc", async () => {
    const root = workspace();
    const next = async (id: string) => {
      const s = await startSession({ root, sessionId: id, pid: DEAD_PID });
      endSession({ root, sessionId: id });
      return s;
    };
    writeFiles(root, { "a.txt": "v0\n", "copy.txt": "shared\n" });
    await next("one");
    writeFiles(root, { "a.txt": "v1\n" });
    // the ended session's snapshot goes, and no whole gc ever ran here: this one is whole
    const first = await next("two");
    expect(first.cleanup.removed_objects).toBe(1);
    const lastGc = join(root, ".timewarp", "last-gc");
    const wholeAt = statSync(lastGc).mtimeMs;
    const store = createObjectStore(join(root, ".timewarp", "objects"));
    const orphan = store.write(Buffer.from("written by a snapshot killed before its record\n"));
    const v1 = store.write(Buffer.from("v1\n"));
    // a.txt changes, and a second name takes the content the first snapshot alone had under copy.txt
    writeFiles(root, { "a.txt": "v2\n", "copy.txt": "v1\n" });
    const second = await next("three");
    expect(second.cleanup.deleted_snapshots.length).toBe(1);
    expect(second.cleanup.removed_objects).toBe(1); // "shared\n" only
    expect(store.has(v1)).toBe(true); // the new snapshot names it (as copy.txt)
    expect(store.has(orphan)).toBe(true); // not the cleanup's garbage
    expect(statSync(lastGc).mtimeMs).toBe(wholeAt);
    // a day later the session start runs the whole gc, which takes the orphan too
    const old = new Date(Date.now() - 25 * 60 * 60_000);
    utimesSync(lastGc, old, old);
    writeFiles(root, { "a.txt": "v3\n" });
    const third = await next("four");
    expect(third.cleanup.removed_objects).toBe(2); // "v2\n" and the orphan
    expect(store.has(orphan)).toBe(false);
    expect(statSync(lastGc).mtimeMs).toBeGreaterThan(old.getTime());
    expect(fsck(root).ok).toBe(true);
  });

  it("a start under a known session id is a resume: no snapshot, no cleanup, the first snapshot kept", async () => {
    const root = workspace();
    const first = await startSession({ root, sessionId: "agent", pid: DEAD_PID });
    expect(first.resumed).toBe(false);
    endSession({ root, sessionId: "agent" });
    writeFiles(root, { "a.txt": "changed\n" });
    const again = await startSession({ root, sessionId: "agent", pid: process.pid });
    expect(again).toMatchObject({
      resumed: true,
      snapshot_id: first.snapshot_id,
      created_at: first.created_at,
      files: 2,
      cleanup: { deleted_snapshots: [], skipped: expect.stringContaining("resumed") },
    });
    expect(existsSync(snapshotDir(root, first.snapshot_id))).toBe(true);
    const record = JSON.parse(
      readFileSync(join(root, ".timewarp", "sessions", "agent.json"), "utf8"),
    );
    expect(record).toMatchObject({
      snapshot_id: first.snapshot_id,
      ended_at: null,
      pid: process.pid,
    });
    expect(record.resumed_at).toEqual([expect.any(String)]);
    // the hook server's path resumes too, and its cleanup deletes nothing
    const begun = await beginSession({ root, sessionId: "agent", pid: process.pid });
    expect(begun.result).toMatchObject({ resumed: true, snapshot_id: first.snapshot_id });
    expect(begun.cleanUp().deleted_snapshots).toEqual([]);
    // a snapshot gone (deleted by hand) makes the next start take a new one
    rmSync(snapshotDir(root, first.snapshot_id), { recursive: true });
    const fresh = await startSession({ root, sessionId: "agent", pid: process.pid });
    expect(fresh.resumed).toBe(false);
    expect(fresh.snapshot_id).not.toBe(first.snapshot_id);
  });

  it("cleanup: deletes unreferenced snapshots and collects their objects; keeps issues', live sessions' and the new one", async () => {
    const root = workspace();
    const age = (id: string) => {
      const rec = join(root, ".timewarp", "sessions", `${id}.json`);
      writeFileSync(
        rec,
        readFileSync(rec, "utf8").replace(
          /"last_seen": "[^"]+"/,
          '"last_seen": "2000-01-01T00:00:00Z"',
        ),
      );
    };
    writeFiles(root, { "only-in-first.txt": "unique content of the first snapshot\n" });
    const first = await startSession({ root, sessionId: "old", pid: DEAD_PID });
    age("old"); // its process is gone and it was not seen for long
    writeFiles(root, { "only-in-first.txt": "changed\n" });
    const reporter = await startSession({ root, sessionId: "reporter", pid: DEAD_PID });
    expect(reporter.cleanup.expired_sessions).toEqual(["old"]);
    expect(reporter.cleanup.deleted_snapshots).toEqual([first.snapshot_id]);
    expect(reporter.cleanup.removed_objects).toBe(1); // the first file's old content, nothing else
    expect(existsSync(snapshotDir(root, first.snapshot_id))).toBe(false);

    await reportIssue({
      root,
      sessionId: "reporter",
      task_context: "t",
      symptom: "s",
      success_criteria: "c",
    });
    age("reporter");
    const alive = await startSession({ root, sessionId: "alive", pid: process.pid });
    expect(alive.cleanup.expired_sessions).toEqual(["reporter"]);
    expect(alive.cleanup.deleted_snapshots).toEqual([]); // expired, but an issue references it
    const now = await startSession({ root, sessionId: "now" });
    expect(now.cleanup.deleted_snapshots).toEqual([]);
    expect(existsSync(snapshotDir(root, reporter.snapshot_id))).toBe(true); // an issue references it
    expect(existsSync(snapshotDir(root, alive.snapshot_id))).toBe(true); // its session is alive
    expect(existsSync(snapshotDir(root, now.snapshot_id))).toBe(true); // the new one
  });

  it("a second session cannot delete the first one's snapshot, and issues link the reporter's own", async () => {
    const root = workspace();
    const agent = await startSession({ root, sessionId: "agent", pid: process.pid });
    writeFiles(root, { "a.txt": "changed by the agent\n" });
    const sub = await startSession({ root, sessionId: "subagent", pid: process.pid });
    expect(sub.cleanup.deleted_snapshots).toEqual([]);
    expect(existsSync(snapshotDir(root, agent.snapshot_id))).toBe(true);
    const mine = await reportIssue({
      root,
      sessionId: "agent",
      task_context: "t",
      symptom: "s",
      success_criteria: "c",
    });
    expect(mine.snapshot_id).toBe(agent.snapshot_id);
    const latest = await reportIssue({
      root,
      task_context: "t",
      symptom: "s",
      success_criteria: "c",
    });
    expect(latest.snapshot_id).toBe(sub.snapshot_id); // no --session-id: the most recent session
    expect(readStatus(root).session_snapshot_id).toBe(sub.snapshot_id);
  });

  it("an ended session stops holding its snapshot even while its process lives; a resume revives it", async () => {
    const root = workspace();
    const ended = await startSession({ root, sessionId: "ended", pid: process.pid });
    writeFiles(root, { "a.txt": "after the first session\n" });
    const kept = await startSession({ root, sessionId: "kept", pid: process.pid });
    expect(kept.cleanup.deleted_snapshots).toEqual([]); // both sessions are alive
    expect(endSession({ root, sessionId: "ended" })?.ended_at).toEqual(expect.any(String));
    expect(endSession({ root, sessionId: "never-started" })).toBeNull();
    writeFiles(root, { "a.txt": "after the second session\n" });
    const next = await startSession({ root, sessionId: "next", pid: process.pid });
    expect(next.cleanup.expired_sessions).toEqual(["ended"]);
    expect(next.cleanup.deleted_snapshots).toEqual([ended.snapshot_id]);
    expect(existsSync(snapshotDir(root, kept.snapshot_id))).toBe(true); // still alive

    endSession({ root, sessionId: "kept" });
    rememberSession({ root, sessionId: "kept" }); // SessionStart with source=resume
    const last = await startSession({ root, sessionId: "last", pid: process.pid });
    expect(last.cleanup.deleted_snapshots).not.toContain(kept.snapshot_id);
  });

  it("a session whose process is gone ends at once, a reused pid too; a pid of 1 bounds nothing", async () => {
    const root = workspace();
    const agent = spawn("sleep", ["600"], { stdio: "ignore" });
    const killed = await startSession({ root, sessionId: "killed", pid: agent.pid as number });
    const record = () =>
      JSON.parse(readFileSync(join(root, ".timewarp", "sessions", "killed.json"), "utf8"));
    expect(record()).toMatchObject({ pid: agent.pid, process_start: expect.any(String) });
    writeFiles(root, { "a.txt": "while the agent ran\n" });
    // a live process holds its session
    const other = await startSession({ root, sessionId: "other", pid: process.pid });
    expect(other.cleanup.expired_sessions).toEqual([]);
    // the agent killed before its SessionEnd: the next start drops it, long before the TTL
    await new Promise((done) => {
      agent.on("exit", done);
      agent.kill("SIGKILL");
    });
    const next = await startSession({ root, sessionId: "next", pid: process.pid });
    expect(next.cleanup.expired_sessions).toEqual(["killed"]);
    expect(next.cleanup.deleted_snapshots).toEqual([killed.snapshot_id]);

    // a live pid that started at another time is not the session's process
    rememberSession({ root, sessionId: "reused", pid: process.pid });
    const reused = join(root, ".timewarp", "sessions", "reused.json");
    writeFileSync(
      reused,
      readFileSync(reused, "utf8").replace(/"process_start": "[^"]+"/, '"process_start": "x:1"'),
    );
    // pid 1 (a daemon's parent, as older versions recorded it) leaves the TTL to decide
    rememberSession({ root, sessionId: "init", pid: 1 });
    const init = join(root, ".timewarp", "sessions", "init.json");
    writeFileSync(
      init,
      readFileSync(init, "utf8").replace(
        /"last_seen": "[^"]+"/,
        '"last_seen": "2000-01-01T00:00:00Z"',
      ),
    );
    const last = await startSession({ root, sessionId: "last", pid: process.pid });
    expect(last.cleanup.expired_sessions.sort()).toEqual(["init", "reused"]);
  });

  it("never cleans up while in the past; never touches the snapshot travelled to", async () => {
    const root = workspace();
    const a = await startSession({ root, sessionId: "a", pid: DEAD_PID });
    travel({ root, snapshotId: a.snapshot_id });
    const b = await startSession({ root, sessionId: "b", pid: DEAD_PID });
    expect(b.cleanup.skipped).toBe("mode=past");
    expect(existsSync(snapshotDir(root, a.snapshot_id))).toBe(true);
    returnToPresent({ root });
    expect(readSnapshot(root, a.snapshot_id).snapshot_id).toBe(a.snapshot_id);
  });
});

describe("beginSession (the hook server's session start: the cleanup after the answer)", () => {
  it("records the session at once and deletes nothing until cleanUp runs, under the lock again", async () => {
    const root = workspace();
    const first = await startSession({ root, sessionId: "first", pid: process.pid });
    endSession({ root, sessionId: "first" });
    writeFiles(root, { "a.txt": "changed\n" });
    const statCache = workspacePaths(root).statCache;
    const cacheBefore = readFileSync(statCache);
    const begun = await beginSession({ root, sessionId: "second", pid: process.pid });
    expect(begun.result.session_id).toBe("second");
    expect(readFileSync(statCache).equals(cacheBefore)).toBe(true); // its update waits too
    expect(readStatus(root).session_snapshot_id).toBe(begun.result.snapshot_id);
    expect(existsSync(snapshotDir(root, begun.result.snapshot_id))).toBe(true);
    expect(existsSync(snapshotDir(root, first.snapshot_id))).toBe(true); // not yet

    // another command holds the workspace: the cleanup steps aside, it does not wait or fail
    const lock = acquireLock(workspacePaths(root).lock, { command: "travel" });
    const locked = begun.cleanUp();
    lock.release();
    expect(locked.skipped).toMatch(/locked/);
    expect(locked.deleted_snapshots).toEqual([]);
    expect(existsSync(snapshotDir(root, first.snapshot_id))).toBe(true);

    const report = begun.cleanUp();
    expect(report.skipped).toBeNull();
    // now the cache vouches for the new content (the gc alone would only have dropped the old)
    expect(readStatCache(statCache).entries.get("a.txt")?.oid).toBe(
      gitBlobId(Buffer.from("changed\n")),
    );
    expect(report.deleted_snapshots).toEqual([first.snapshot_id]);
    expect(report.expired_sessions).toEqual(["first"]);
    expect(existsSync(snapshotDir(root, first.snapshot_id))).toBe(false);
    expect(existsSync(snapshotDir(root, begun.result.snapshot_id))).toBe(true);
    expect(fsck(root).ok).toBe(true);
  });

  it("a travel between the answer and the cleanup makes the cleanup skip, from the state it reads then", async () => {
    const root = workspace();
    const first = await startSession({ root, sessionId: "first", pid: process.pid });
    endSession({ root, sessionId: "first" });
    writeFiles(root, { "a.txt": "changed\n" });
    const begun = await beginSession({ root, sessionId: "second", pid: process.pid });
    travel({ root, snapshotId: first.snapshot_id });
    const travelsCache = readFileSync(workspacePaths(root).statCache);
    expect(begun.cleanUp().skipped).toBe("mode=past");
    // the travel's backup left a newer stat cache: the session start's older one is not written
    expect(readFileSync(workspacePaths(root).statCache).equals(travelsCache)).toBe(true);
    expect(existsSync(snapshotDir(root, first.snapshot_id))).toBe(true);
    returnToPresent({ root });
    expect(readFileSync(join(root, "a.txt"), "utf8")).toBe("changed\n");
  });
});

describe("backups after a return", () => {
  it("a return keeps its backup, unreferenced, until the next travel deletes it", async () => {
    const root = workspace();
    const s = await startSession({ root, sessionId: "a", pid: process.pid });
    writeFiles(root, { "a.txt": "present\n" });
    const first = travel({ root, snapshotId: s.snapshot_id });
    const back = returnToPresent({ root });
    expect(back.backup_id).toBe(first.backup_id);
    expect(readFileSync(join(root, "a.txt"), "utf8")).toBe("present\n");
    expect(readStatus(root)).toMatchObject({ mode: "present", backup_path: null });
    expect(existsSync(first.backup_path)).toBe(true);
    const second = travel({ root, snapshotId: s.snapshot_id });
    expect(existsSync(first.backup_path)).toBe(false);
    expect(existsSync(second.backup_path)).toBe(true);
    returnToPresent({ root });
    expect(readFileSync(join(root, "a.txt"), "utf8")).toBe("present\n");
    expect(fsck(root).ok).toBe(true);
  });
});

describe("rememberSession (the SessionStart hook's call)", () => {
  it("remembers the transcript path for issue_report, and a refresh keeps it", async () => {
    const root = workspace();
    const transcript = join(REPO_ROOT, "examples", "transcripts", "claude-session.jsonl");
    rememberSession({ root, sessionId: "7f3c2a10", transcriptPath: transcript });
    await startSession({ root, sessionId: "7f3c2a10" });
    rememberSession({ root, sessionId: "7f3c2a10" }); // e.g. a later hook marking it alive
    const r = await reportIssue({
      root,
      task_context: "slugify",
      symptom: "three retries",
      success_criteria: "test passes",
    });
    expect(r.transcript_path).toBe(transcript);
    const chat = readFileSync(getIssue({ root, issueId: r.issue_id }).chat_path, "utf8");
    expect(chat).toMatch(
      /^session_id: 7f3c2a10\ncaptured_at: \S+Z\nselection: window\(before=6, after=2\)\nredaction: applied\n\n---\n\n\[user\]/,
    );
    expect(chat).toContain("[tool:Bash] input:");
    expect(chat).toContain("[tool:Bash] output: not ok 2");
    expect(chat).not.toMatch(/ghp_9aZ3|sk-ant-api03-Zx9/);
    expect(chat).toContain("***REDACTED***");
  });

  it("rejects a session id that could escape the sessions folder", () => {
    const root = workspace();
    expect(() => rememberSession({ root, sessionId: "../../etc" })).toThrow(/invalid session id/);
  });
});
