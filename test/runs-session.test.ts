import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createSeededRandom, systemClock } from "../src/core/index.ts";
import {
  AckSchema,
  type AdapterName,
  createRunDir,
  defaultProtocolIo,
  exampleDesignDir,
  processGroupAlive,
  type SessionTimings,
  startToolSession,
  type ToolSession,
} from "../src/runs/index.ts";
import { makeTempDir } from "./helpers/cli.ts";
import { FAST, requestIds, settings, writeFakeInnovus } from "./runs-helpers.ts";

let tmp: { dir: string; cleanup: () => void };
const sessions: ToolSession[] = [];
beforeEach(() => {
  tmp = makeTempDir("tw-runs-session-");
});
const runDirs: string[] = [];
afterEach(async () => {
  const open = sessions.splice(0);
  const dirs = runDirs.splice(0);
  try {
    for (const s of open) await s.stop();
    // invariants: no process left, exactly one ack per request that reached queue/, no temp file
    for (const s of open) expect(processGroupAlive(s.pgid)).toBe(false);
    for (const runDir of dirs) {
      for (const id of requestIds(runDir)) expect(acksFor(runDir, id)).toHaveLength(1);
      expect(readdirSync(join(runDir, "ack")).filter((n) => n.includes(".tw-tmp-"))).toEqual([]);
    }
  } finally {
    tmp.cleanup();
  }
});

interface Variant {
  label: string;
  adapter: AdapterName;
  overrides: () => Parameters<typeof settings>[0];
  env?: () => NodeJS.ProcessEnv;
}

const bin = () => join(tmp.dir, "bin");

/** The conformance suite runs against every way of starting a session. */
const VARIANTS: Variant[] = [
  { label: "tclsh", adapter: "tclsh", overrides: () => ({}) },
  {
    label: "innovus (fake innovus on PATH)",
    adapter: "innovus",
    overrides: () => ({}),
    env: () => {
      writeFakeInnovus(bin());
      return { PATH: `${bin()}:${process.env.PATH}` };
    },
  },
  {
    label: "dsub-i via sh -c {cmd_q}",
    adapter: "dsub-i",
    overrides: () => ({ dsub_template: "sh -c {cmd_q}", dsub_tool: "tclsh" }),
  },
  {
    label: "dsub-i via env wrapper running the fake innovus",
    adapter: "dsub-i",
    overrides: () => ({ dsub_template: "env SKILLPILOT_SITE=farm {cmd}", dsub_tool: "innovus" }),
    env: () => {
      writeFakeInnovus(bin());
      return { PATH: `${bin()}:${process.env.PATH}` };
    },
  },
];

async function open(
  variant: Variant = VARIANTS[0] as Variant,
  timings: Partial<SessionTimings> = {},
): Promise<{ session: ToolSession; runDir: string; jobId: string }> {
  const cwd = join(tmp.dir, "cwd");
  mkdirSync(cwd, { recursive: true });
  const { jobId, paths } = createRunDir({
    cwd,
    clock: systemClock,
    random: createSeededRandom(Math.floor(Math.random() * 1e9)),
  });
  const env = variant.env?.();
  const session = await startToolSession({
    runDir: paths.runDir,
    jobId,
    adapter: variant.adapter,
    settings: settings(variant.overrides()),
    timings: { ...FAST, ...timings },
    clock: systemClock,
    io: defaultProtocolIo,
    ...(env ? { env } : {}),
  });
  sessions.push(session);
  runDirs.push(paths.runDir);
  return { session, runDir: paths.runDir, jobId };
}

function script(runDir: string, name: string, body: string): string {
  writeFileSync(join(runDir, "scripts", name), body);
  return `scripts/${name}`;
}

function acksFor(runDir: string, id: string): string[] {
  return readdirSync(join(runDir, "ack")).filter((n) => n === `${id}.json`);
}

for (const variant of VARIANTS) {
  describe(`session conformance: ${variant.label}`, () => {
    it("runs a script (PASS), reports a Tcl error with errorInfo (CMD_FAIL), traps exit, and ends its process group", async () => {
      const { session, runDir } = await open(variant);
      expect(session.ready.stubbed).toBe(true);
      const ok = await session.request({
        requestId: "r_ok",
        script: script(
          runDir,
          "ok.tcl",
          "set f [open reports/ok.txt w]; puts $f [pwd]; close $f\n",
        ),
      });
      expect(ok).toMatchObject({ status: "PASS", error_type: "OK", request_id: "r_ok" });
      // the script ran in the run directory
      expect(readFileSync(join(runDir, "reports", "ok.txt"), "utf8").trim()).toBe(runDir);

      const bad = await session.request({
        requestId: "r_err",
        script: script(runDir, "err.tcl", "proc boom {} { error {kaboom} }\nboom\n"),
      });
      expect(bad).toMatchObject({
        status: "FAIL",
        error_type: "CMD_FAIL",
        detail_code: "TCL_ERROR",
      });
      expect(bad.message).toContain("kaboom");
      const info = readFileSync(join(runDir, "session", "errors", "r_err.txt"), "utf8");
      expect(info).toContain('invoked from within\n"boom"');

      // a script that changes directory (as restore_wrapper.tcl does, §6.2) does not move the next one
      const moved = await session.request({
        requestId: "r_cd",
        script: script(runDir, "cd.tcl", "cd [file dirname $::skillpilot::run_dir]\n"),
      });
      expect(moved.status).toBe("PASS");
      await session.request({ requestId: "r_pwd", script: "scripts/ok.tcl" });
      expect(readFileSync(join(runDir, "reports", "ok.txt"), "utf8").trim()).toBe(runDir);

      const exit = await session.request({
        requestId: "r_exit",
        script: script(runDir, "exit.tcl", "exit 3\n"),
      });
      expect(exit).toMatchObject({
        status: "FAIL",
        error_type: "CMD_FAIL",
        detail_code: "SCRIPT_EXIT",
      });
      // the session survived the script's exit
      const after = await session.request({ requestId: "r_after", script: "scripts/ok.tcl" });
      expect(after.status).toBe("PASS");
      expect(session.alive()).toBe(true);

      await session.stop();
      expect(processGroupAlive(session.pgid)).toBe(false);
      for (const id of requestIds(runDir)) expect(acksFor(runDir, id)).toHaveLength(1);
      if (variant.adapter === "innovus") {
        // Innovus runs with session/ as its working directory, so its logs land there
        expect(readFileSync(join(runDir, "session", "innovus.log"), "utf8")).toContain(
          "-no_gui -init",
        );
      }
    });
  });
}

describe("queue processor: claims, acks, re-entry", () => {
  it("claims by rename (at most once) and refuses a second request with a used id without a second ack", async () => {
    const { session, runDir } = await open();
    const counter = join(runDir, "reports", "count.txt");
    script(runDir, "count.tcl", `set f [open ${JSON.stringify(counter)} a]; puts $f x; close $f\n`);
    const first = await session.request({ requestId: "dup", script: "scripts/count.tcl" });
    expect(first.status).toBe("PASS");
    // the runtime refuses to reuse an id
    await expect(
      session.request({ requestId: "dup", script: "scripts/count.tcl" }),
    ).rejects.toMatchObject({ code: "REQUEST_DUPLICATE" });
    // a duplicate dropped straight into queue/ is never run and never acked twice
    writeFileSync(
      join(runDir, "queue", "dup.json"),
      JSON.stringify({
        schema_version: "1.0",
        request_id: "dup",
        job_id: "x",
        action: "SOURCE_TCL",
        script: "scripts/count.tcl",
        created_at: "now",
      }),
    );
    const later = await session.request({ requestId: "later", script: "scripts/count.tcl" });
    expect(later.status).toBe("PASS");
    expect(readFileSync(counter, "utf8").trim().split("\n")).toHaveLength(2);
    expect(acksFor(runDir, "dup")).toHaveLength(1);
    expect(
      readdirSync(join(runDir, "queue")).some((n) => n.startsWith("dup.json.duplicate-")),
    ).toBe(true);
    expect(readFileSync(join(runDir, "session", "processor.log"), "utf8")).toContain(
      "duplicate request id dup refused",
    );
  });

  it("runs one request at a time per session", async () => {
    const { session, runDir } = await open();
    const slow = session.request({
      requestId: "slow",
      script: script(runDir, "slow.tcl", "after 100\n"),
    });
    await expect(
      session.request({ requestId: "other", script: "scripts/slow.tcl" }),
    ).rejects.toMatchObject({ code: "INTERNAL" });
    expect((await slow).status).toBe("PASS");
  });

  it("a script that calls update does not let the processor claim the next request (busy flag)", async () => {
    const { session, runDir } = await open();
    // the first script queues a second request itself, then spins the event loop with update
    const second = JSON.stringify({
      schema_version: "1.0",
      request_id: "second",
      job_id: "x",
      action: "SOURCE_TCL",
      script: "scripts/second.tcl",
      created_at: "now",
    });
    script(runDir, "second.tcl", "set f [open reports/second.txt w]; puts $f ran; close $f\n");
    script(
      runDir,
      "first.tcl",
      [
        `set f [open queue/.second.tmp w]; puts -nonewline $f {${second}}; close $f`,
        "file rename queue/.second.tmp queue/second.json",
        "for {set i 0} {$i < 20} {incr i} { after 5; update }",
        "set f [open reports/first.txt w]; puts $f [file exists ack/second.json]; puts $f [file exists reports/second.txt]; close $f",
        "",
      ].join("\n"),
    );
    const ack = await session.request({ requestId: "first", script: "scripts/first.tcl" });
    expect(ack.status).toBe("PASS");
    // while the first script ran, the second was neither run nor acked
    expect(
      readFileSync(join(runDir, "reports", "first.txt"), "utf8")
        .split("\n")
        .slice(0, 2),
    ).toEqual(["0", "0"]);
    // and it is processed afterwards, exactly once (as soon as the processor is scheduled again)
    await expect
      .poll(() => existsSync(join(runDir, "ack", "second.json")), { timeout: 10_000, interval: 10 })
      .toBe(true);
    expect(
      AckSchema.parse(JSON.parse(readFileSync(join(runDir, "ack", "second.json"), "utf8"))).status,
    ).toBe("PASS");
  });

  it("answers malformed request JSON with one FAIL ack (INTERNAL_ERROR / REQUEST_MALFORMED)", async () => {
    const { session, runDir } = await open();
    writeFileSync(join(runDir, "queue", "broken.json"), "{not json");
    writeFileSync(join(runDir, "queue", "nofields.json"), '{"schema_version":"1.0"}');
    const ok = await session.request({
      requestId: "zz_after",
      script: script(runDir, "ok.tcl", "set x 1\n"),
    });
    expect(ok.status).toBe("PASS");
    for (const id of ["broken", "nofields"]) {
      const ack = AckSchema.parse(
        JSON.parse(readFileSync(join(runDir, "ack", `${id}.json`), "utf8")),
      );
      expect(ack).toMatchObject({
        status: "FAIL",
        error_type: "INTERNAL_ERROR",
        detail_code: "REQUEST_MALFORMED",
      });
    }
  });

  it("the Innovus stub restores with restoreDesign or read_db and writes reports", async () => {
    const { session, runDir } = await open();
    const dat = join(exampleDesignDir(), "AAA.enc.dat");
    const ack = await session.request({
      requestId: "stub",
      script: script(
        runDir,
        "stub.tcl",
        `read_db ${JSON.stringify(dat)}\nreport_area -out_file reports/area.rpt\nsummaryReport -outfile reports/summary.rpt\n`,
      ),
    });
    expect(ack.status).toBe("PASS");
    expect(readFileSync(join(runDir, "reports", "area.rpt"), "utf8")).toMatch(/AAA\s+AAA\s+1842/);
    expect(readFileSync(join(runDir, "reports", "summary.rpt"), "utf8")).toContain(
      "Number of cells: 1842",
    );
    const missing = await session.request({
      requestId: "nodb",
      script: script(runDir, "nodb.tcl", "restoreDesign /nonexistent.dat X\n"),
    });
    expect(missing).toMatchObject({ status: "FAIL", error_type: "CMD_FAIL" });
    expect(missing.message).toContain("IMPDB-1");
  });

  it("writes a heartbeat counter that moves while idle", async () => {
    const { runDir } = await open();
    const read = () =>
      Number.parseInt(
        readFileSync(join(runDir, "session", "heartbeat"), "utf8").split(" ")[0] ?? "",
        10,
      );
    const a = read();
    // (a beat every 40 ms, but a loaded machine may not run the tool for a while)
    await expect.poll(read, { timeout: 10_000, interval: 20 }).toBeGreaterThan(a);
  });
});

describe("security boundary (§6.1): only scripts/ is sourced, symlinks resolved first", () => {
  it.each([
    ["dot-dot", "scripts/../outside.tcl"],
    ["absolute", "ABSOLUTE"],
    ["tilde", "~/outside.tcl"],
    ["not under scripts/", "reports/outside.tcl"],
    ["scripts2/ is not scripts/", "scripts2/outside.tcl"],
    ["symlinked file", "scripts/link.tcl"],
    ["symlinked directory", "scripts/linkdir/outside.tcl"],
  ])("refuses %s and never sources the outside file", async (_label, requested) => {
    const { session, runDir } = await open();
    const outsideDir = join(tmp.dir, "outside");
    mkdirSync(outsideDir, { recursive: true });
    const marker = join(tmp.dir, "MARKER");
    const body = `set f [open ${JSON.stringify(marker)} w]; puts $f sourced; close $f\n`;
    const outside = join(outsideDir, "outside.tcl");
    writeFileSync(outside, body);
    writeFileSync(join(runDir, "outside.tcl"), body);
    mkdirSync(join(runDir, "reports"), { recursive: true });
    writeFileSync(join(runDir, "reports", "outside.tcl"), body);
    mkdirSync(join(runDir, "scripts2"), { recursive: true });
    writeFileSync(join(runDir, "scripts2", "outside.tcl"), body);
    symlinkSync(outside, join(runDir, "scripts", "link.tcl"));
    symlinkSync(outsideDir, join(runDir, "scripts", "linkdir"));
    const scriptPath = requested === "ABSOLUTE" ? outside : requested;
    const ack = await session.request({
      requestId: "escape",
      script: scriptPath.startsWith("scripts/") ? scriptPath : scriptPath,
    });
    expect(ack).toMatchObject({
      status: "FAIL",
      error_type: "CMD_FAIL",
      detail_code: "SCRIPT_PATH_REJECTED",
    });
    expect(ack.message).toMatch(/security violation|invalid script path/);
    expect(existsSync(marker)).toBe(false);
    // a symlink that stays inside scripts/ is fine
    script(runDir, "real.tcl", "set ::inside 1\n");
    symlinkSync(join(runDir, "scripts", "real.tcl"), join(runDir, "scripts", "inner-link.tcl"));
    expect(
      (await session.request({ requestId: "inside", script: "scripts/inner-link.tcl" })).status,
    ).toBe("PASS");
  });

  it("refuses an action other than SOURCE_TCL", async () => {
    const { session, runDir } = await open();
    // Written aside and renamed in, as the protocol's requests are: a request written in place
    // can be read half-written (REQUEST_MALFORMED) by a tool that polls the queue meanwhile.
    const aside = join(runDir, "evalreq.json.tmp");
    writeFileSync(
      aside,
      JSON.stringify({
        schema_version: "1.0",
        request_id: "evalreq",
        job_id: "x",
        action: "EVAL",
        script: "scripts/x.tcl",
        created_at: "now",
      }),
    );
    renameSync(aside, join(runDir, "queue", "evalreq.json"));
    await session.request({ requestId: "zz", script: script(runDir, "x.tcl", "set y 1\n") });
    const ack = AckSchema.parse(
      JSON.parse(readFileSync(join(runDir, "ack", "evalreq.json"), "utf8")),
    );
    expect(ack).toMatchObject({
      status: "FAIL",
      error_type: "CMD_FAIL",
      detail_code: "SCRIPT_PATH_REJECTED",
    });
  });
});

describe("supervisor faults", () => {
  it("a script blocking the Tcl loop longer than the heartbeat threshold still PASSes", async () => {
    // blocked 1.5 s, past the 1 s threshold; thresholds of a few hundred ms would let a loaded
    // machine's late beat look like a lost one
    const { session, runDir } = await open(undefined, {
      heartbeatStaleMs: 1_000,
      heartbeatIntervalMs: 100,
    });
    const ack = await session.request({
      requestId: "long",
      script: script(runDir, "long.tcl", "after 1500\n"),
    });
    expect(ack).toMatchObject({ status: "PASS", error_type: "OK" });
    expect(session.checkHealth()).toBeUndefined();
  });

  it("a script that never returns is QUEUE_TIMEOUT, with one supervisor ack and the group ended", async () => {
    const { session, runDir } = await open(undefined, { requestTimeoutMs: 400 });
    const ack = await session.request({
      requestId: "forever",
      script: script(runDir, "forever.tcl", "while 1 {}\n"),
    });
    expect(ack).toMatchObject({ status: "FAIL", error_type: "QUEUE_TIMEOUT", by: "supervisor" });
    expect(processGroupAlive(session.pgid)).toBe(false);
    expect(acksFor(runDir, "forever")).toHaveLength(1);
  });

  it("the tool killed mid-request is INNOVUS_CRASH", async () => {
    const { session, runDir } = await open();
    const ack = await session.request({
      requestId: "die",
      script: script(runDir, "die.tcl", "exec kill -9 [pid]\n"),
    });
    expect(ack).toMatchObject({
      status: "FAIL",
      error_type: "INNOVUS_CRASH",
      detail_code: "TOOL_EXITED",
      by: "supervisor",
    });
    expect(processGroupAlive(session.pgid)).toBe(false);
    expect(acksFor(runDir, "die")).toHaveLength(1);
  });

  it("an ack on disk wins over the tool's death right after it; the next request is INNOVUS_CRASH", async () => {
    const { session, runDir } = await open();
    // the processor publishes the ack, then the event loop runs the kill
    const ack = await session.request({
      requestId: "last",
      script: script(runDir, "last.tcl", "after 0 {exec kill -9 [pid]}\n"),
    });
    expect(ack).toMatchObject({ status: "PASS", by: "queue_processor" });
    await expect.poll(() => session.alive(), { timeout: 10_000, interval: 10 }).toBe(false);
    const next = await session.request({ requestId: "next", script: "scripts/last.tcl" });
    expect(next).toMatchObject({ status: "FAIL", error_type: "INNOVUS_CRASH", by: "supervisor" });
    // the request was written (and never claimed), so it still has exactly one ack
    expect(existsSync(join(runDir, "queue", "next.json"))).toBe(true);
  });

  it("a stale heartbeat while idle is HEARTBEAT_LOST (tool frozen between requests)", async () => {
    // (the first request is judged by the beat too: 150 ms let a loaded machine's late beat
    // fail it as lost; the verdict below waits however long the threshold is)
    const { session, runDir } = await open(undefined, {
      heartbeatStaleMs: 1_000,
      heartbeatIntervalMs: 100,
    });
    expect(
      (await session.request({ requestId: "a", script: script(runDir, "a.tcl", "set a 1\n") }))
        .status,
    ).toBe("PASS");
    process.kill(session.ready.pid, "SIGSTOP");
    // The runner times the counter from when it last saw it move. A beat written while the stop
    // was being delivered shows up as one more move on a loaded machine, and restarts that clock:
    // ask until the verdict comes (it must come: the counter cannot move again).
    let verdict = session.checkHealth();
    for (let i = 0; verdict !== "HEARTBEAT_LOST" && i < 100; i++) {
      await new Promise((r) => setTimeout(r, 100));
      verdict = session.checkHealth();
    }
    expect(verdict).toBe("HEARTBEAT_LOST");
    const ack = await session.request({ requestId: "b", script: "scripts/a.tcl" });
    expect(ack).toMatchObject({ status: "FAIL", error_type: "HEARTBEAT_LOST", by: "supervisor" });
    expect(processGroupAlive(session.pgid)).toBe(false);
    expect(acksFor(runDir, "b")).toHaveLength(1);
  });

  it("a launcher that cannot start, or never becomes ready, is SESSION_START_FAIL and leaves no process", async () => {
    await expect(
      open({
        label: "missing",
        adapter: "tclsh",
        overrides: () => ({ tclsh: "/nonexistent/tclsh" }),
      }),
    ).rejects.toMatchObject({
      code: "JOB_FAILED",
      data: { failure: { error_type: "SESSION_START_FAIL" } },
    });
    await expect(
      open(
        {
          label: "hang",
          adapter: "dsub-i",
          overrides: () => ({ dsub_template: "sh -c 'sleep 30' {cmd_q}" }),
        },
        { readyTimeoutMs: 300 },
      ),
    ).rejects.toMatchObject({
      code: "JOB_FAILED",
      data: { failure: { error_type: "SESSION_START_FAIL", detail_code: "READY_TIMEOUT" } },
    });
    await expect(
      open({
        label: "dies",
        adapter: "dsub-i",
        overrides: () => ({ dsub_template: "sh -c 'echo no licence >&2; exit 3' {cmd_q}" }),
      }),
    ).rejects.toMatchObject({
      code: "JOB_FAILED",
      data: { failure: { error_type: "SESSION_START_FAIL", detail_code: "EXITED_BEFORE_READY" } },
    });
  });
});
