import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { parseConfig, systemClock, systemRandom } from "../core/index.ts";
import { createRunDir, defaultProtocolIo } from "./run-dir.ts";
import { defaultFsProbeOps, type FsProbeOps, probeRunDir } from "./run-dir-probe.ts";
import { startToolSession } from "./session.ts";
import { failureOf } from "./taxonomy.ts";

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "tw-probe-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

function errno(code: string): Error {
  return Object.assign(new Error(`${code}: injected`), { code });
}

function failure(ops: FsProbeOps) {
  try {
    probeRunDir(dir, ops);
  } catch (error) {
    return failureOf(error);
  }
  return undefined;
}

describe("probeRunDir", () => {
  it("passes on a local file system and leaves nothing behind", () => {
    probeRunDir(dir);
    expect(readdirSync(dir)).toEqual([]);
  });

  it("fails SESSION_START_FAIL / RUN_DIR_FS_UNSUPPORTED when hard links are refused", () => {
    const f = failure({
      ...defaultFsProbeOps,
      link: () => {
        throw errno("EPERM");
      },
    });
    expect(f).toMatchObject({
      error_type: "SESSION_START_FAIL",
      detail_code: "RUN_DIR_FS_UNSUPPORTED",
    });
    expect(f?.message).toContain("hard links");
    expect(f?.message).toContain("EPERM");
    expect(readdirSync(dir)).toEqual([]);
  });

  it("fails when a link onto an existing name succeeds (it would let a second ack replace the first)", () => {
    const f = failure({
      ...defaultFsProbeOps,
      link: (from, to) => {
        rmSync(to, { force: true });
        defaultFsProbeOps.link(from, to);
      },
    });
    expect(f?.detail_code).toBe("RUN_DIR_FS_UNSUPPORTED");
    expect(f?.message).toContain("exclusive hard links");
  });

  it("fails when rename cannot replace a file", () => {
    const f = failure({
      ...defaultFsProbeOps,
      rename: () => {
        throw errno("EXDEV");
      },
    });
    expect(f?.detail_code).toBe("RUN_DIR_FS_UNSUPPORTED");
    expect(f?.message).toContain("atomic rename");
  });
});

describe("startToolSession", () => {
  it("checks the run dir before it launches anything", async () => {
    const { paths } = createRunDir({ cwd: dir, clock: systemClock, random: systemRandom });
    const start = startToolSession({
      runDir: paths.runDir,
      jobId: "j",
      adapter: "tclsh",
      settings: parseConfig({}, "test").skillpilot,
      timings: {
        readyTimeoutMs: 5000,
        heartbeatStaleMs: 1000,
        requestTimeoutMs: 1000,
        pollMs: 5,
        heartbeatIntervalMs: 40,
        ackPollMs: 20,
        watchAcks: true,
      },
      clock: systemClock,
      io: defaultProtocolIo,
      fsProbe: {
        ...defaultFsProbeOps,
        link: () => {
          throw errno("ENOTSUP");
        },
      },
    });
    const error = await start.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(failureOf(error)).toMatchObject({
      error_type: "SESSION_START_FAIL",
      detail_code: "RUN_DIR_FS_UNSUPPORTED",
    });
    expect(existsSync(paths.boot)).toBe(false);
    expect(existsSync(paths.toolStdout)).toBe(false);
  });
});
