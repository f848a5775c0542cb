import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { bundledSource } from "../../test/helpers/bundle.ts";
import { makeTempDir } from "../../test/helpers/cli.ts";
import type { Clock } from "./clock.ts";
import {
  createProgressChannel,
  formatProgress,
  type ProgressRecord,
  ProgressRecordSchema,
  progressDir,
  readProgress,
} from "./progress-channel.ts";

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.splice(0).reverse()) c();
});

function workspace(withStore = true): string {
  const t = makeTempDir("tw-progress-");
  cleanups.push(t.cleanup);
  if (withStore) mkdirSync(join(t.dir, ".timewarp"));
  return t.dir;
}

/** A clock the test moves by hand. */
function manualClock(): Clock & { advance: (ms: number) => void } {
  let t = Date.parse("2026-11-27T03:00:00.000Z");
  return { now: () => new Date(t), advance: (ms) => (t += ms) };
}

function ownRecord(root: string): ProgressRecord | undefined {
  const file = join(progressDir(root), `${process.pid}.json`);
  if (!existsSync(file)) return undefined;
  return ProgressRecordSchema.parse(JSON.parse(readFileSync(file, "utf8")));
}

/** A pid that no process has any more (a child that ran and was reaped). */
function deadPid(): number {
  const r = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"], {
    encoding: "utf8",
  });
  return Number(r.stdout);
}

describe("the progress channel", () => {
  it("writes the first update at once, coalesces a burst, and removes the record at the end", () => {
    const root = workspace();
    const clock = manualClock();
    const channel = createProgressChannel({ root, command: "gc", clock, intervalMs: 250 });
    channel.update({ phase: "check objects", done: 0, total: 10 });
    const first = ownRecord(root);
    expect(first).toMatchObject({
      command: "gc",
      phase: "check objects",
      done: 0,
      total: 10,
      pid: process.pid,
    });
    clock.advance(100);
    channel.update({ phase: "check objects", done: 5, total: 10 });
    expect(ownRecord(root)?.done).toBe(0); // within the interval: not written yet
    clock.advance(200);
    channel.update({ phase: "check objects", done: 7, total: 10 });
    expect(ownRecord(root)).toMatchObject({ done: 7, started_at: first?.started_at });
    expect(readProgress(root).map((r) => r.command)).toEqual(["gc"]);
    channel.end();
    expect(ownRecord(root)).toBeUndefined();
    expect(readProgress(root)).toEqual([]);
  });

  it("writes the last update of a burst later, from a timer", async () => {
    const root = workspace();
    const channel = createProgressChannel({
      root,
      command: "fsck",
      clock: { now: () => new Date() },
      intervalMs: 20,
    });
    channel.update({ phase: "read records", done: 1 });
    channel.update({ phase: "read records", done: 2 });
    await expect.poll(() => ownRecord(root)?.done, { timeout: 10_000 }).toBe(2);
    channel.end();
  });

  it("never creates a store: nothing is written without .timewarp/", () => {
    const root = workspace(false);
    const channel = createProgressChannel({ root, command: "memory eval", clock: manualClock() });
    channel.update({ phase: "evaluate", done: 1, total: 2 });
    expect(existsSync(join(root, ".timewarp"))).toBe(false);
    channel.end();
  });

  it("does not report a dead process's record, and the next writer removes it", () => {
    const root = workspace();
    const dir = progressDir(root);
    mkdirSync(dir, { recursive: true });
    const pid = deadPid();
    const stale: ProgressRecord = {
      schema_version: 1,
      pid,
      process_start: null,
      command: "travel",
      phase: "restore",
      message: null,
      done: 3,
      total: 9,
      started_at: "2026-11-27T02:00:00.000Z",
      updated_at: "2026-11-27T02:00:01.000Z",
    };
    writeFileSync(join(dir, `${pid}.json`), JSON.stringify(stale));
    // a live pid whose process started at another time is a reused pid: not the writer
    writeFileSync(
      join(dir, `${process.pid}.json`),
      JSON.stringify({ ...stale, pid: process.pid, process_start: "another-boot:1" }),
    );
    writeFileSync(join(dir, `.${pid}.json.tw-tmp-${pid}-0badf00d`), '{"schema_ver');
    expect(readProgress(root)).toEqual([]);
    expect(readdirSync(dir)).toHaveLength(3); // reading changes nothing

    const channel = createProgressChannel({ root, command: "gc", clock: manualClock() });
    channel.update({ phase: "collect" });
    expect(readdirSync(dir)).toEqual([`${process.pid}.json`]);
    expect(readProgress(root).map((r) => [r.pid, r.command])).toEqual([[process.pid, "gc"]]);
    channel.end();
  });

  it("a kill -9 in the middle of writes leaves a whole record, which is not reported", async () => {
    const root = workspace();
    const module = join(import.meta.dirname, "progress-channel.ts");
    // Writes as fast as it can, every record padded to a few pages so a torn write would show.
    // (bundled: a start through tsx's loader took seconds on a loaded machine)
    const child = spawn(
      process.execPath,
      [
        bundledSource(`import { createProgressChannel } from ${JSON.stringify(module)};
         const ch = createProgressChannel({ root: ${JSON.stringify(root)}, command: "gc",
           clock: { now: () => new Date() }, intervalMs: 0 });
         const pad = "x".repeat(20000);
         for (let i = 0; ; i++) {
           ch.update({ phase: "collect", done: i, total: 1e9, message: pad + i });
           if (i === 50) console.log("writing");
         }`),
      ],
      { stdio: ["ignore", "pipe", "inherit"] },
    );
    cleanups.push(() => child.kill("SIGKILL"));
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    await new Promise<void>((resolve, reject) => {
      child.stdout?.once("data", () => resolve());
      child.once("exit", (code) => reject(new Error(`writer exited ${code}`)));
    });
    const file = join(progressDir(root), `${child.pid}.json`);
    // While it runs: every read is a whole record.
    for (let i = 0; i < 50; i++) {
      const parsed = ProgressRecordSchema.parse(JSON.parse(readFileSync(file, "utf8")));
      expect(parsed.message).toBe(`${"x".repeat(20000)}${parsed.done}`);
    }
    expect(readProgress(root).map((r) => r.pid)).toEqual([child.pid]);
    child.kill("SIGKILL");
    await exited;
    const left = ProgressRecordSchema.parse(JSON.parse(readFileSync(file, "utf8")));
    expect(left.message).toBe(`${"x".repeat(20000)}${left.done}`);
    expect(readProgress(root)).toEqual([]);
  });

  it("formats a terminal line from the phase and counts, or the message", () => {
    expect(formatProgress({ phase: "check objects", done: 3, total: 9 })).toBe("check objects 3/9");
    expect(formatProgress({ phase: "mark", done: 3 })).toBe("mark 3");
    expect(formatProgress({ phase: "verify" })).toBe("verify…");
    expect(formatProgress({ phase: "scan", done: 5, message: "scanned 5 entries" })).toBe(
      "scanned 5 entries",
    );
  });
});
