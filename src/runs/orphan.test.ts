import { describe, expect, it } from "vitest";
import { judgeOrphan, type OrphanFacts } from "./orphan.ts";

const base: OrphanFacts = {
  thisHost: "h1",
  runner: { pid: 10, host: "h1", alive: false },
  lockHeld: false,
  graceMs: 600_000,
  session: {
    pgid: 20,
    ready: {
      schema_version: "1.0",
      pid: 20,
      host: "h1",
      tcl_version: "8.6.14",
      stubbed: true,
      started_at: "2026-11-27T00:00:00.000Z",
    },
  },
  toolAlive: true,
  heartbeatAgeMs: 100,
  heartbeatStaleMs: 30_000,
  requestInFlight: false,
  beatSurvivesBusyLoop: false,
  inFlightDeadlineMs: undefined,
  orphan: {
    schema_version: "1.0",
    runner_pid: 10,
    since: "2026-11-27T00:00:00.000Z",
    until: "2026-11-27T00:10:00.000Z",
    orphan_grace_ms: 600_000,
  },
  nowMs: Date.parse("2026-11-27T00:01:00.000Z"),
};

describe("judgeOrphan", () => {
  it("a dead runner and a live, beating session within its grace: resumable until the tool said", () => {
    expect(judgeOrphan(base)).toEqual({ kind: "resumable", until: "2026-11-27T00:10:00.000Z" });
    expect(judgeOrphan({ ...base, orphan: undefined })).toEqual({ kind: "resumable", until: null });
  });

  it("a live runner, or another process holding the resume lock, owns the job", () => {
    expect(judgeOrphan({ ...base, runner: { ...base.runner, alive: true } }).kind).toBe("owned");
    expect(judgeOrphan({ ...base, lockHeld: true }).kind).toBe("owned");
    expect(judgeOrphan({ ...base, runner: { ...base.runner, host: "h2" } }).kind).toBe("foreign");
  });

  it("gone: no grace, no session, the tool ended, its grace long past, or a stale idle heartbeat", () => {
    const why = (f: Partial<OrphanFacts>) => {
      const v = judgeOrphan({ ...base, ...f });
      return v.kind === "gone" ? v.why : v.kind;
    };
    expect(why({ graceMs: 0 })).toBe("orphan_grace_ms is 0");
    expect(why({ session: undefined })).toBe("no tool session was ready");
    expect(why({ toolAlive: false })).toBe("the tool session (pid 20) ended");
    expect(why({ nowMs: Date.parse("2026-11-27T00:11:00.000Z") })).toContain("outlived its grace");
    expect(why({ heartbeatAgeMs: 40_000 })).toContain("heartbeat is older than 30000 ms");
    // a tool busy with a request does not beat (its loop is blocked): not judged then
    expect(why({ heartbeatAgeMs: 40_000, requestInFlight: true })).toBe("resumable");
    // unless a thread or the sidecar beats for it: then a silent heartbeat is a lost tool
    expect(
      why({ heartbeatAgeMs: 40_000, requestInFlight: true, beatSurvivesBusyLoop: true }),
    ).toContain("heartbeat is older");
  });

  it("a tool busy past its request's deadline and the grace on top is gone: nobody comes for it", () => {
    const deadline = Date.parse("2026-11-27T00:00:30.000Z");
    const busy = { requestInFlight: true, inFlightDeadlineMs: deadline, orphan: undefined };
    expect(judgeOrphan({ ...base, ...busy }).kind).toBe("resumable");
    const late = judgeOrphan({ ...base, ...busy, nowMs: deadline + 600_001 });
    expect(late).toMatchObject({ kind: "gone" });
    expect(late.kind === "gone" && late.why).toContain("passed its deadline");
  });
});
