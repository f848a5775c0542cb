import { spawn, spawnSync } from "node:child_process";
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { dirname, join } from "node:path";
import { Worker } from "node:worker_threads";
import { afterEach, describe, expect, it } from "vitest";
import { makeTempDir, REPO_ROOT } from "./helpers/cli.ts";

/**
 * bin/timewarp.cjs runs the bundled CLI through V8's code cache. These tests run the real bin
 * (copied into a temp package layout) on a small CommonJS "bundle" that reports what it saw, so
 * they need no build: the cache is written once, then used as is; a torn or foreign cache only
 * costs a recompile and is replaced; TIMEWARP_CODE_CACHE=0 keeps none; exit codes pass through.
 */
const BUNDLE = `
const path = require("node:path");
const lazy = () => Promise.resolve().then(() => require("node:os").EOL.length);
lazy().then((eol) => {
  process.stdout.write(JSON.stringify({ args: process.argv.slice(2), dir: path.basename(__dirname), eol }));
  if (process.argv.includes("--fail")) process.exitCode = 3;
  if (process.argv.includes("--serve")) {
    // a long-lived command (timewarp ui): runs until a signal, then process.exit
    setInterval(() => {}, 1000);
    process.once("SIGTERM", () => process.exit(0));
    process.stdout.write("\\nready\\n");
  }
});
`;

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

function layout(): { bin: string; cache: () => string } {
  const t = makeTempDir("tw-bin-");
  cleanups.push(t.cleanup);
  mkdirSync(join(t.dir, "bin"));
  mkdirSync(join(t.dir, "dist", "bin"), { recursive: true });
  copyFileSync(join(REPO_ROOT, "bin", "timewarp.cjs"), join(t.dir, "bin", "timewarp.cjs"));
  writeFileSync(join(t.dir, "dist", "bin", "timewarp.cjs"), BUNDLE);
  const bundle = join(t.dir, "dist", "bin", "timewarp.cjs");
  return {
    bin: join(t.dir, "bin", "timewarp.cjs"),
    // Named after the Node version and the bundle's size and mtime (V8 checks only the length).
    cache: () => {
      const st = statSync(bundle);
      return `${bundle}.${process.version}-${process.arch}-${st.size}-${Math.trunc(st.mtimeMs)}.v8cache`;
    },
  };
}

function run(bin: string, args: string[], env: NodeJS.ProcessEnv = {}) {
  const r = spawnSync(process.execPath, [bin, ...args], {
    encoding: "utf8",
    env: { ...process.env, ...env },
  });
  return { status: r.status, out: r.stdout, err: r.stderr };
}

describe("bin/timewarp.cjs with V8's code cache", () => {
  it("writes the cache on the first run and uses it unchanged on the next", () => {
    const { bin, cache } = layout();
    const first = run(bin, ["status", "--json"]);
    expect(first).toMatchObject({ status: 0, err: "" });
    expect(JSON.parse(first.out)).toEqual({ args: ["status", "--json"], dir: "bin", eol: 1 });
    expect(statSync(cache()).size).toBeGreaterThan(0);
    const written = statSync(cache());
    const second = run(bin, ["status", "--json"]);
    expect(second.out).toBe(first.out);
    // Accepted: the bin rewrites the cache (a new file, renamed in) only when V8 rejects it.
    expect(statSync(cache()).ino).toBe(written.ino);
    expect(statSync(cache()).mtimeMs).toBe(written.mtimeMs);
  });

  it("runs the bundle in a worker thread too (the watch daemon's hook worker), through the cache", async () => {
    const { bin, cache } = layout();
    const bundle = join(dirname(dirname(bin)), "dist", "bin", "timewarp.cjs");
    writeFileSync(
      bundle,
      `const { isMainThread, parentPort, workerData } = require("node:worker_threads");
       parentPort.postMessage({ isMainThread, workerData, dir: require("node:path").basename(__dirname) });`,
    );
    const inWorker = async () => {
      const worker = new Worker(bin, { workerData: { timewarp: "test" } });
      const said = new Promise((r) => worker.once("message", r));
      const exited = new Promise((r) => worker.once("exit", r));
      const message = await said;
      expect(await exited).toBe(0);
      return message;
    };
    expect(await inWorker()).toEqual({
      isMainThread: false,
      workerData: { timewarp: "test" },
      dir: "bin",
    });
    // written when the first worker ended, then taken as it is by the next one
    const written = statSync(cache());
    expect(written.size).toBeGreaterThan(0);
    expect(await inWorker()).toMatchObject({ isMainThread: false });
    expect(statSync(cache()).ino).toBe(written.ino);
    expect(statSync(cache()).mtimeMs).toBe(written.mtimeMs);
  });

  it("a long-lived command that ends by process.exit writes the cache too", async () => {
    const { bin, cache } = layout();
    const child = spawn(process.execPath, [bin, "ui", "--serve"], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    await new Promise<void>((ready) =>
      child.stdout.on("data", (b: Buffer) => {
        out += b.toString();
        if (out.includes("ready\n")) ready();
      }),
    );
    expect(existsSync(cache())).toBe(false);
    const closed = new Promise((r) => child.on("close", r));
    child.kill("SIGTERM");
    expect(await closed).toBe(0);
    expect(statSync(cache()).size).toBeGreaterThan(0);
  });

  it("a torn or foreign cache costs a recompile, never a failure, and is replaced", () => {
    const { bin, cache } = layout();
    writeFileSync(cache(), "not a v8 code cache");
    const r = run(bin, ["hook", "pre-tool-use"]);
    expect(r.status).toBe(0);
    expect(JSON.parse(r.out).args).toEqual(["hook", "pre-tool-use"]);
    expect(readFileSync(cache()).toString("latin1")).not.toContain("not a v8 code cache");
    expect(statSync(cache()).size).toBeGreaterThan(0);
  });

  it("a rebuilt bundle gets its own cache; this Node's old one is removed, others' are kept", () => {
    const { bin, cache } = layout();
    run(bin, ["a"]);
    const old = cache();
    expect(existsSync(old)).toBe(true);
    const bundle = join(dirname(dirname(bin)), "dist", "bin", "timewarp.cjs");
    // Same length, new content: a cache keyed by length alone would run the old code.
    const rebuilt = BUNDLE.replace("args:", "argv:");
    expect(rebuilt.length).toBe(BUNDLE.length);
    writeFileSync(bundle, rebuilt);
    utimesSync(bundle, new Date(), new Date(Date.now() + 5000));
    // Another Node version's cache is not this run's to remove.
    const foreign = join(dirname(old), "timewarp.cjs.v0.0.0-x64-1-1.v8cache");
    writeFileSync(foreign, "another node's cache");
    const r = run(bin, ["b"]);
    expect(JSON.parse(r.out)).toMatchObject({ argv: ["b"] });
    expect(existsSync(cache())).toBe(true);
    expect(existsSync(old)).toBe(false);
    expect(existsSync(foreign)).toBe(true);
  });

  // root writes through any mode bits, so this runs only for an ordinary user.
  it.skipIf(process.getuid?.() === 0)(
    "a read-only install runs uncached and leaves nothing",
    () => {
      const { bin, cache } = layout();
      const binDir = dirname(cache());
      chmodSync(binDir, 0o555);
      try {
        const r = run(bin, ["x"]);
        expect(r).toMatchObject({ status: 0, err: "" });
        expect(readdirSync(binDir)).toEqual(["timewarp.cjs"]);
      } finally {
        chmodSync(binDir, 0o755);
      }
    },
  );

  it("TIMEWARP_CODE_CACHE=0 keeps no cache; exit codes pass through", () => {
    const { bin, cache } = layout();
    const r = run(bin, ["--fail"], { TIMEWARP_CODE_CACHE: "0" });
    expect(r.status).toBe(3);
    expect(JSON.parse(r.out).args).toEqual(["--fail"]);
    expect(existsSync(cache())).toBe(false);
  });
});
