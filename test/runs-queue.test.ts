import { spawnSync } from "node:child_process";
import {
  existsSync,
  lstatSync,
  readdirSync,
  readFileSync,
  renameSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { AckSchema, processGroupAlive, type ToolSession } from "../src/runs/index.ts";
import { makeTempDir } from "./helpers/cli.ts";
import { openTclshSession, writeScript } from "./runs-session-open.ts";

/**
 * Queue hardening (issue 20): an entry of queue/ that is not a regular file is never followed,
 * and a request over the size cap is never read; both are answered FAIL by name and moved aside,
 * and the processor goes on with the next request.
 */

let tmp: { dir: string; cleanup: () => void };
const open: ToolSession[] = [];
beforeEach(() => {
  tmp = makeTempDir("tw-runs-queue-");
});
afterEach(async () => {
  try {
    for (const s of open.splice(0)) {
      await s.stop();
      expect(processGroupAlive(s.pgid)).toBe(false);
    }
  } finally {
    tmp.cleanup();
  }
});

async function start() {
  const opened = await openTclshSession(tmp.dir);
  open.push(opened.session);
  return opened;
}

function ackOf(runDir: string, id: string) {
  return AckSchema.parse(JSON.parse(readFileSync(join(runDir, "ack", `${id}.json`), "utf8")));
}

function requestText(id: string, script: string): string {
  return JSON.stringify({
    schema_version: "1.0",
    request_id: id,
    job_id: "x",
    action: "SOURCE_TCL",
    script,
    created_at: "now",
  });
}

describe("queue entries that are not regular files", () => {
  it("a symlink to a request outside, or to a FIFO, is answered FAIL and never followed", async () => {
    const { session, runDir } = await start();
    const marker = join(tmp.dir, "MARKER");
    writeScript(
      runDir,
      "mark.tcl",
      `set f [open ${JSON.stringify(marker)} w]; puts $f ran; close $f\n`,
    );
    // a valid request outside queue/: following the link would run mark.tcl
    const outside = join(tmp.dir, "outside.json");
    writeFileSync(outside, requestText("a_link", "scripts/mark.tcl"));
    symlinkSync(outside, join(runDir, "queue", "a_link.json"));
    // a FIFO outside: opening it for reading would block the processor (no writer ever comes)
    const fifo = join(tmp.dir, "pipe");
    expect(spawnSync("mkfifo", [fifo]).status).toBe(0);
    symlinkSync(fifo, join(runDir, "queue", "a_fifo_link.json"));
    // and a FIFO in queue/ itself
    expect(spawnSync("mkfifo", [join(runDir, "queue", "a_fifo.json")]).status).toBe(0);

    const next = await session.request({
      requestId: "b_next",
      script: writeScript(runDir, "ok.tcl", "set ok 1\n"),
    });
    expect(next).toMatchObject({ status: "PASS", by: "queue_processor" });
    for (const id of ["a_link", "a_fifo_link", "a_fifo"]) {
      const ack = ackOf(runDir, id);
      expect(ack).toMatchObject({
        status: "FAIL",
        error_type: "INTERNAL_ERROR",
        detail_code: "REQUEST_NOT_REGULAR",
        by: "queue_processor",
      });
      expect(ack.message).toContain("security violation");
      // moved aside as it was: the link itself, never its target
      expect(existsSync(join(runDir, "queue", `${id}.json`))).toBe(false);
      const aside = lstatSync(join(runDir, "queue", `${id}.json.claimed.refused`));
      expect(aside.isFile()).toBe(false);
    }
    expect(existsSync(marker)).toBe(false);
    expect(readFileSync(outside, "utf8")).toContain('"a_link"');
  });
});

describe("request size cap", () => {
  it("a 20 MB request is refused by its size, unread, and the next request is acked after it", async () => {
    const { session, runDir } = await start();
    // a valid request padded to 20 MB: reading and parsing it took seconds before the cap
    const big = `${requestText("a_big", "scripts/ok.tcl").slice(0, -1)}, "pad": "${"x".repeat(20 * 1024 * 1024)}"}`;
    // published whole, as every request is (temp name, then rename)
    writeFileSync(join(runDir, "queue", ".a_big.tmp"), big);
    renameSync(join(runDir, "queue", ".a_big.tmp"), join(runDir, "queue", "a_big.json"));
    const next = await session.request({
      requestId: "b_next",
      script: writeScript(runDir, "ok.tcl", "set ok 1\n"),
    });
    expect(next).toMatchObject({ status: "PASS", by: "queue_processor" });
    const refused = ackOf(runDir, "a_big");
    expect(refused).toMatchObject({
      status: "FAIL",
      error_type: "INTERNAL_ERROR",
      detail_code: "REQUEST_TOO_LARGE",
      job_id: "",
    });
    expect(refused.message).toContain("20971");
    // handled first (its name sorts first), then the normal request
    const log = readFileSync(join(runDir, "session", "processor.log"), "utf8");
    const refusedAt = log.indexOf("request a_big refused");
    expect(refusedAt).toBeGreaterThanOrEqual(0);
    expect(log.indexOf("request b_next: source")).toBeGreaterThan(refusedAt);
    expect(readdirSync(join(runDir, "queue"))).toContain("a_big.json.claimed.refused");
  });
});
