import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { isProcessAlive } from "../src/core/index.ts";
import { type Ack, processGroupAlive, runSkill, type ToolSession } from "../src/runs/index.ts";
import { makeTempDir } from "./helpers/cli.ts";
import { assertJobInvariants, copyDesign, FAST, settings, writeSkill } from "./runs-helpers.ts";
import { openTclshSession, waitFor, writeScript } from "./runs-session-open.ts";

/**
 * The heartbeat during requests (issue 20): a beat that survives a busy Tcl loop (a thread or
 * the sh sidecar) is judged while a script runs, so a frozen tool is HEARTBEAT_LOST long before
 * its request timeout; the event-loop beat keeps the old rule (judged only while idle).
 */

let tmp: { dir: string; cleanup: () => void };
const open: ToolSession[] = [];
beforeEach(() => {
  tmp = makeTempDir("tw-runs-liveness-");
});
afterEach(async () => {
  try {
    for (const s of open.splice(0)) {
      try {
        process.kill(s.ready.pid, "SIGCONT");
      } catch {
        // gone
      }
      await s.stop();
      expect(processGroupAlive(s.pgid)).toBe(false);
    }
  } finally {
    tmp.cleanup();
  }
});

/** A request timeout no test reaches: a HEARTBEAT_LOST ack proves the watch, not the deadline. */
const NEVER = 120_000;
const TIMINGS = { heartbeatIntervalMs: 100, heartbeatStaleMs: 1_000, requestTimeoutMs: NEVER };

const threadAvailable =
  spawnSync("tclsh", [], { input: "exit [catch {package require Thread}]\n" }).status === 0;

async function start(mode: "sidecar" | "thread" | "loop") {
  const opened = await openTclshSession(tmp.dir, { timings: TIMINGS, heartbeatMode: mode });
  open.push(opened.session);
  expect(opened.session.ready.heartbeat_mode).toBe(mode);
  return opened;
}

/** Start a request and wait until the processor has claimed it (its script is running). */
async function startLong(
  session: ToolSession,
  runDir: string,
  body: string,
): Promise<{ ack: Promise<Ack> }> {
  const ack = session.request({ requestId: "long", script: writeScript(runDir, "long.tcl", body) });
  const claimed = await waitFor(() => existsSync(join(runDir, "queue", "long.json.claimed")));
  if (!claimed) throw new Error(`not claimed: ${JSON.stringify(await ack)}`);
  return { ack };
}

const BUSY_3S =
  "set t [expr {[clock milliseconds] + 3000}]\nwhile {[clock milliseconds] < $t} {}\n";

for (const mode of ["sidecar", "thread"] as const) {
  const skip = mode === "thread" && !threadAvailable;
  describe(`heartbeat mode ${mode}${skip ? " (skipped: this tclsh has no Thread package; apt-get install tcl-thread)" : ""}`, () => {
    it.skipIf(skip).each([
      ["sleeps", "after 60000\n"],
      ["busy-loops", "while 1 {}\n"],
    ])(
      "a tool stopped (SIGSTOP) while its script %s is HEARTBEAT_LOST, not the request's timeout",
      async (_label, body) => {
        const { session, runDir } = await start(mode);
        const pending = await startLong(session, runDir, body);
        process.kill(session.ready.pid, "SIGSTOP");
        const ack = await pending.ack;
        expect(ack).toMatchObject({
          request_id: "long",
          status: "FAIL",
          error_type: "HEARTBEAT_LOST",
          detail_code: "HEARTBEAT_STALE",
          by: "supervisor",
        });
        expect(ack.message).toContain("while running scripts/long.tcl");
        // the session was ended: its group is gone, and exactly one ack exists
        expect(processGroupAlive(session.pgid)).toBe(false);
        expect(readdirSync(join(runDir, "ack")).filter((n) => n.startsWith("long"))).toEqual([
          "long.json",
        ]);
        const pid = session.ready.heartbeat_pid;
        if (pid !== undefined) expect(await waitFor(() => !isProcessAlive(pid))).toBe(true);
      },
    );

    it.skipIf(skip)(
      "a busy script that blocks the Tcl loop for many intervals PASSes (no false HEARTBEAT_LOST)",
      async () => {
        const { session, runDir } = await start(mode);
        const busy = await session.request({
          requestId: "busy",
          script: writeScript(runDir, "busy.tcl", BUSY_3S),
        });
        expect(busy).toMatchObject({ status: "PASS", error_type: "OK", by: "queue_processor" });
        const sleepy = await session.request({
          requestId: "sleepy",
          script: writeScript(runDir, "sleepy.tcl", "after 3000\n"),
        });
        expect(sleepy).toMatchObject({ status: "PASS", error_type: "OK" });
        expect(session.checkHealth()).toBeUndefined();
        // the beat moved while the loop was blocked: its writer says which mode it is
        expect(readFileSync(join(runDir, "session", "heartbeat"), "utf8").trim()).toMatch(
          new RegExp(`^\\d+ \\S+ ${session.ready.pid} ${mode}$`),
        );
      },
    );

    it.skipIf(skip)("a tool stopped while idle is HEARTBEAT_LOST as before", async () => {
      const { session, runDir } = await start(mode);
      const a = await session.request({
        requestId: "a",
        script: writeScript(runDir, "a.tcl", "set a 1\n"),
      });
      expect(a.status).toBe("PASS");
      process.kill(session.ready.pid, "SIGSTOP");
      session.checkHealth();
      expect(await waitFor(() => session.checkHealth() === "HEARTBEAT_LOST")).toBe(true);
      const b = await session.request({ requestId: "b", script: "scripts/a.tcl" });
      expect(b).toMatchObject({ status: "FAIL", error_type: "HEARTBEAT_LOST", by: "supervisor" });
      expect(b.message).toContain("before request b");
      expect(processGroupAlive(session.pgid)).toBe(false);
    });
  });
}

describe("a job whose tool freezes mid-script", () => {
  it("ends FAIL / HEARTBEAT_LOST with the session ended and every invariant kept", async () => {
    const cwd = join(tmp.dir, "design");
    copyDesign(cwd);
    // the script stops its own process: the Tcl side can never answer again
    writeSkill(cwd, "freezes", { script: "exec kill -STOP [pid]\n" });
    const result = await runSkill({
      cwd,
      skill: "freezes",
      design: "AAA",
      settings: settings({ heartbeat_mode: "sidecar" }),
      timings: { ...FAST, ...TIMINGS },
    });
    const { manifest, summary } = assertJobInvariants(result.runDir);
    expect(summary).toMatchObject({
      status: "FAIL",
      error_type: "HEARTBEAT_LOST",
      detail_code: "HEARTBEAT_STALE",
    });
    expect(manifest.requests?.at(-1)).toMatchObject({ error_type: "HEARTBEAT_LOST" });
    // what the script did before it froze is in the timeline (the audit is read on failure too)
    const timeline = readFileSync(join(result.runDir, "job_timeline.jsonl"), "utf8");
    expect(timeline).toContain('"event":"AUDIT"');
    expect(timeline).toContain('"argv":["kill","-STOP"');
  });
});

describe("the sh sidecar", () => {
  it("is gone after the session ends", async () => {
    const { session } = await start("sidecar");
    const pid = session.ready.heartbeat_pid;
    expect(pid).toBeGreaterThan(0);
    expect(isProcessAlive(pid as number)).toBe(true);
    await session.stop();
    expect(await waitFor(() => !isProcessAlive(pid as number))).toBe(true);
  });

  it("killed by someone else, is started again by the processor and the session stays healthy", async () => {
    const { session, runDir } = await start("sidecar");
    process.kill(session.ready.heartbeat_pid as number, "SIGKILL");
    const log = join(runDir, "session", "processor.log");
    expect(
      await waitFor(() => readFileSync(log, "utf8").includes("starting it again (1 of 3)")),
    ).toBe(true);
    const ack = await session.request({
      requestId: "after",
      script: writeScript(runDir, "after.tcl", "after 1500\n"),
    });
    expect(ack).toMatchObject({ status: "PASS", error_type: "OK" });
    expect(session.checkHealth()).toBeUndefined();
  });

  it("ends by itself when the tool is gone, even if its group was not ended", async () => {
    const { session } = await start("sidecar");
    const pid = session.ready.heartbeat_pid as number;
    process.kill(session.ready.pid, "SIGKILL");
    expect(await waitFor(() => !isProcessAlive(pid))).toBe(true);
    expect(session.checkHealth()).toBe("INNOVUS_CRASH");
  });
});

describe("heartbeat mode loop (the old rule)", () => {
  it("is chosen by the setting skillpilot.heartbeat_mode, which reaches the tool", async () => {
    const cwd = join(tmp.dir, "design");
    copyDesign(cwd);
    writeSkill(cwd, "plain", {
      script: "set f [open reports/out.rpt w]; puts $f ok; close $f\n",
    });
    const result = await runSkill({
      cwd,
      skill: "plain",
      design: "AAA",
      settings: settings({ heartbeat_mode: "loop" }),
      timings: FAST,
    });
    expect(assertJobInvariants(result.runDir).summary.status).toBe("PASS");
    const ready = JSON.parse(readFileSync(join(result.runDir, "session", "ready.json"), "utf8"));
    expect(ready).toMatchObject({ heartbeat_mode: "loop" });
    expect(ready.heartbeat_pid).toBeUndefined();
  });

  it("a stopped tool during a request is not judged by its heartbeat: the deadline answers", async () => {
    const opened = await openTclshSession(tmp.dir, {
      timings: { ...TIMINGS, heartbeatStaleMs: 300, requestTimeoutMs: 2_500 },
      heartbeatMode: "loop",
    });
    open.push(opened.session);
    const { session, runDir } = opened;
    expect(session.ready.heartbeat_mode).toBe("loop");
    expect(session.ready.heartbeat_pid).toBeUndefined();
    const pending = await startLong(session, runDir, "after 60000\n");
    process.kill(session.ready.pid, "SIGSTOP");
    expect(await pending.ack).toMatchObject({ error_type: "QUEUE_TIMEOUT", by: "supervisor" });
  });
});
