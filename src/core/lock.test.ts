import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { Worker } from "node:worker_threads";
import { afterEach, describe, expect, it } from "vitest";
import { bundledScript, bundledSource } from "../../test/helpers/bundle.ts";
import { ErrorCode, TimewarpError } from "./errors.ts";
import {
  acquireLock,
  acquireLockQueued,
  clearLockOfThread,
  readLockHolder,
  withLock,
} from "./lock.ts";
import { isProcessAlive, processStartOf } from "./process-alive.ts";

describe("acquireLock", () => {
  const dirs: string[] = [];
  const tmp = () => {
    const d = mkdtempSync(join(tmpdir(), "tw-lock-"));
    dirs.push(d);
    return d;
  };
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  it("names the worker thread that holds it; once that thread is gone, only its lock is cleared", async () => {
    const path = join(tmp(), "lock");
    // a real worker thread takes the lock through this module and ends without releasing it
    // (the module bundled: registering tsx's loader in the worker took seconds on a loaded machine)
    const lockModule = pathToFileURL(bundledScript(join(import.meta.dirname, "lock.ts"))).href;
    const worker = new Worker(
      `const { parentPort } = require("node:worker_threads");
       import(${JSON.stringify(lockModule)})
         .then((l) => parentPort.postMessage(l.acquireLock(${JSON.stringify(path)}, { command: "cleanup" }).holder));`,
      { eval: true },
    );
    const thread = worker.threadId;
    const holder = await new Promise((resolve, reject) => {
      worker.once("message", resolve);
      worker.once("error", reject);
    });
    await worker.terminate();
    expect(holder).toMatchObject({ pid: process.pid, thread, command: "cleanup" });
    expect(readLockHolder(path)).toMatchObject({ thread });
    expect(clearLockOfThread(path, thread + 1)).toBe(false); // another thread's: kept
    expect(existsSync(path)).toBe(true);
    expect(clearLockOfThread(path, thread)).toBe(true);
    expect(existsSync(path)).toBe(false);
    // the main thread's own lock names no thread and is never cleared this way
    const mine = acquireLock(path);
    expect(readLockHolder(path)?.thread).toBeUndefined();
    expect(clearLockOfThread(path, thread)).toBe(false);
    mine.release();
  });

  it("records the holder and releases", () => {
    const path = join(tmp(), "lock");
    const lock = acquireLock(path, { command: "travel" });
    expect(readLockHolder(path)).toMatchObject({
      pid: process.pid,
      host: hostname(),
      command: "travel",
    });
    lock.release();
    expect(readLockHolder(path)).toBeNull();
  });

  it("refuses a held lock with LOCKED naming the holder", () => {
    const path = join(tmp(), "lock");
    const lock = acquireLock(path, { command: "travel" });
    try {
      acquireLock(path);
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(TimewarpError);
      const e = error as TimewarpError;
      expect(e.code).toBe(ErrorCode.LOCKED);
      expect(e.message).toContain(`pid ${process.pid}`);
      expect(e.data?.holder).toMatchObject({ pid: process.pid, command: "travel" });
    } finally {
      lock.release();
    }
  });

  it.runIf(process.platform === "linux")(
    "counts a zombie (exited, not yet reaped by its parent) as gone",
    async () => {
      // A child of this process that exits while nobody reaps it: Node reaps on SIGCHLD in its
      // event loop, so keep the loop busy until the kernel shows the zombie.
      const child = spawn(process.execPath, ["-e", "0"], { stdio: "ignore" });
      const pid = child.pid as number;
      // (a bound on a hang only: a loaded machine may take seconds to start and end the child)
      const deadline = Date.now() + 20_000;
      let sawZombie = false;
      while (Date.now() < deadline) {
        const state = readFileSync(`/proc/${pid}/stat`, "latin1");
        if (state.charAt(state.lastIndexOf(")") + 2) === "Z") {
          sawZombie = true;
          break;
        }
      }
      expect(sawZombie).toBe(true);
      expect(isProcessAlive(pid)).toBe(false);
      await new Promise((r) => child.on("exit", r));
    },
  );

  it("takes over a lock whose holder is provably gone", () => {
    const path = join(tmp(), "lock");
    // A real pid that has exited: spawn a process and wait for it.
    const child = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"], {
      encoding: "utf8",
    });
    const deadPid = Number(child.stdout);
    expect(isProcessAlive(deadPid)).toBe(false);
    writeFileSync(
      path,
      JSON.stringify({ pid: deadPid, host: hostname(), started_at: "2026-01-01T00:00:00Z" }),
    );
    const lock = acquireLock(path);
    expect(JSON.parse(readFileSync(path, "utf8")).pid).toBe(process.pid);
    lock.release();
  });

  it("never takes over a lock held on another host", () => {
    const path = join(tmp(), "lock");
    writeFileSync(
      path,
      JSON.stringify({ pid: 999999, host: "elsewhere", started_at: "2026-01-01T00:00:00Z" }),
    );
    expect(() => acquireLock(path, { isAlive: () => false })).toThrow(/elsewhere/);
  });

  it("treats a torn lock file as held until it is old, then takes it over", () => {
    const path = join(tmp(), "lock");
    writeFileSync(path, '{"pid":12');
    expect(() => acquireLock(path)).toThrow(TimewarpError);
    const later = new Date(Date.now() + 60_000);
    const lock = acquireLock(path, { now: () => later });
    expect(readLockHolder(path)?.pid).toBe(process.pid);
    lock.release();
  });

  it("does not release a lock someone else now holds", () => {
    const path = join(tmp(), "lock");
    const lock = acquireLock(path);
    writeFileSync(path, JSON.stringify({ pid: 1, host: hostname(), started_at: "x" }));
    lock.release();
    expect(readLockHolder(path)?.pid).toBe(1);
  });

  it("is never left torn by a kill -9: the next acquire succeeds at once", async () => {
    const dir = tmp();
    const path = join(dir, "lock");
    const lockModule = new URL("./lock.ts", import.meta.url).pathname;
    const script = `import { acquireLock } from ${JSON.stringify(lockModule)};
      process.send?.("go");
      for (;;) { try { acquireLock(${JSON.stringify(path)}).release(); } catch {} }`;
    // (bundled once: twelve starts through tsx's loader took ~3.5 s each on a loaded machine)
    const bundle = bundledSource(script);
    for (let round = 0; round < 12; round++) {
      const child = spawn(process.execPath, [bundle], {
        stdio: ["ignore", "ignore", "inherit", "ipc"],
      });
      await new Promise((resolve) => child.once("message", resolve));
      await new Promise((resolve) => setTimeout(resolve, 5 + Math.random() * 40));
      child.kill("SIGKILL");
      await new Promise((resolve) => child.once("exit", resolve));
      // Whatever moment the kill hit, the file is absent or a whole record of a dead holder.
      const text = existsSync(path) ? readFileSync(path, "utf8") : null;
      if (text !== null) expect(JSON.parse(text).pid).toBe(child.pid);
      acquireLock(path).release();
    }
    expect(readdirSync(dir).filter((n) => !n.includes(".tw-tmp-"))).toEqual([]);
  }, 60_000);
});

describe("a holder's pid reused by another process", () => {
  const cleanups: (() => void)[] = [];
  afterEach(() => {
    for (const c of cleanups.splice(0)) c();
  });
  /** A live process that is not the lock's holder: a child that waits until killed. */
  const liveStranger = () => {
    const child = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], {
      stdio: "ignore",
    });
    cleanups.push(() => child.kill("SIGKILL"));
    return child.pid as number;
  };
  const tmp = () => {
    const d = mkdtempSync(join(tmpdir(), "tw-lock-"));
    cleanups.push(() => rmSync(d, { recursive: true, force: true }));
    return d;
  };

  it("records the holder process's start time", () => {
    const path = join(tmp(), "lock");
    const lock = acquireLock(path);
    const start = processStartOf(process.pid);
    if (process.platform === "linux") expect(start).toMatch(/:\d+$/);
    expect(readLockHolder(path)?.process_start).toBe(start ?? undefined);
    lock.release();
  });

  it.runIf(process.platform === "linux")(
    "takes over a lock naming a live pid whose process started at another time, keeps one that matches",
    () => {
      const path = join(tmp(), "lock");
      const pid = liveStranger();
      const start = processStartOf(pid);
      expect(isProcessAlive(pid)).toBe(true);
      expect(start).not.toBeNull();
      // the pid's own process: held, whatever its age
      writeFileSync(
        path,
        JSON.stringify({
          pid,
          host: hostname(),
          started_at: "2026-01-01T00:00:00Z",
          process_start: start,
        }),
      );
      expect(() => acquireLock(path)).toThrow(/locked by pid/);
      // the same pid, but the lock was taken by a process that started at another time
      writeFileSync(
        path,
        JSON.stringify({
          pid,
          host: hostname(),
          started_at: "2026-01-01T00:00:00Z",
          process_start: `${start}0`,
        }),
      );
      const lock = acquireLock(path);
      expect(readLockHolder(path)?.pid).toBe(process.pid);
      lock.release();
    },
  );
});

describe("acquireLockQueued", () => {
  const cleanups: (() => void)[] = [];
  afterEach(() => {
    for (const c of cleanups.splice(0)) c();
  });
  const tmp = () => {
    const d = mkdtempSync(join(tmpdir(), "tw-lock-"));
    cleanups.push(() => rmSync(d, { recursive: true, force: true }));
    return d;
  };

  it("queues callers of this process: they run one at a time, in order, across awaits, and all succeed", async () => {
    const path = join(tmp(), "lock");
    let inside = 0;
    let most = 0;
    const order: number[] = [];
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        withLock(path, { command: `caller ${i}`, waitMs: 0 }, async () => {
          inside++;
          most = Math.max(most, inside);
          expect(readLockHolder(path)).toMatchObject({ pid: process.pid, command: `caller ${i}` });
          await new Promise((r) => setImmediate(r));
          order.push(i);
          inside--;
          return i;
        }),
      ),
    );
    expect(results).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(order).toEqual(results);
    expect(most).toBe(1);
    expect(existsSync(path)).toBe(false);
  });

  it("a caller that throws releases the lock for the next one", async () => {
    const path = join(tmp(), "lock");
    const failing = withLock(path, { waitMs: 0 }, async () => {
      await new Promise((r) => setImmediate(r));
      throw new Error("boom");
    });
    const next = withLock(path, { waitMs: 0 }, () => "next");
    await expect(failing).rejects.toThrow("boom");
    await expect(next).resolves.toBe("next");
    expect(existsSync(path)).toBe(false);
  });

  it("waits for another process's hold with timers, the event loop running, then takes the lock", async () => {
    const path = join(tmp(), "lock");
    const lockModule = new URL("./lock.ts", import.meta.url).pathname;
    // the child holds the lock until it reads a line on stdin
    const child = spawn(
      process.execPath,
      [
        bundledSource(`import { acquireLock } from ${JSON.stringify(lockModule)};
         const lock = acquireLock(${JSON.stringify(path)}, { command: "child" });
         process.send("held");
         process.stdin.once("data", () => { lock.release(); process.exit(0); });`),
      ],
      { stdio: ["pipe", "ignore", "inherit", "ipc"] },
    );
    cleanups.push(() => child.kill("SIGKILL"));
    await new Promise((r) => child.once("message", r));
    let ticks = 0;
    const waiting = acquireLockQueued(path, { command: "parent", waitMs: 60_000 });
    // The loop turns while the parent waits: timers fire, and the child is told to release
    // only after a few of them did.
    await new Promise<void>((resolve) => {
      const timer = setInterval(() => {
        ticks++;
        if (ticks === 5) {
          clearInterval(timer);
          child.stdin?.write("go\n");
          resolve();
        }
      }, 5);
    });
    const lock = await waiting;
    expect(ticks).toBe(5);
    expect(readLockHolder(path)).toMatchObject({ pid: process.pid, command: "parent" });
    lock.release();
  }, 60_000);

  it("gives up with LOCKED naming the holder once waitMs has passed", async () => {
    const path = join(tmp(), "lock");
    writeFileSync(
      path,
      JSON.stringify({ pid: process.pid, host: "elsewhere", started_at: "2026-01-01T00:00:00Z" }),
    );
    await expect(acquireLockQueued(path, { waitMs: 20 })).rejects.toMatchObject({
      code: ErrorCode.LOCKED,
      data: { holder: { host: "elsewhere" } },
    });
    // the queue is left: the next caller is not stuck behind the one that gave up
    rmSync(path);
    const lock = await acquireLockQueued(path, { waitMs: 0 });
    lock.release();
  });
});
