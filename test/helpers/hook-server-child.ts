/**
 * A hook server in its own process, as the watch daemon runs one, but with a scripted worker:
 * the tests drive the server's machinery (claims, declines, failures, timeouts) through the
 * real clients without loading the hook code. Usage: node <its bundle> ROOT MODE (scriptedServer
 * bundles it), where
 * MODE is "normal", "stale" (declines every request as stale), "stale-later" (stale once
 * ROOT/.stale exists; checked every HOOK_STALE_CHECK_MS) or "broken-worker" (the worker dies
 * while loading). Prints "ready" once it serves, and "stale: <reason>" when told it is stale;
 * SIGTERM closes it.
 *
 * The scripted worker answers every other event with what it received (event, payload, cwd,
 * root, agent, --json, the reply form, and the env variables HOOK_TEST_MARKER,
 * HOOK_TEST_API_KEY, LC_ALL and AWKPATH) on stdout: exit 2 for "block", a line on stderr too for
 * "noisy", after 150 ms for "slow". It exits on "crash", and never answers "hang" (it writes
 * CWD/.hang-claimed instead; so for a command from bin/timewarp with HOOK_TEST_COMMAND=hang in
 * its environment) nor "hang-locked" (which takes the workspace lock first). A command with
 * HOOK_TEST_COMMAND=crash-started says it started (as a write command does), then the worker dies;
 * with "hang-started" it says it started and never answers (writing CWD/.hang-claimed). SIGTERM
 * closes the server as the daemon does (a started write command gets HOOK_STOP_WAIT_MS), then
 * the process exits.
 */
import { existsSync, mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { Worker } from "node:worker_threads";
import { hookServerPaths, serveHooks } from "../../src/hooks/index.ts";

const [root, mode] = process.argv.slice(2) as [string, string];
// the watch directory the daemon owns (serveHooks makes only its own directory in it)
mkdirSync(dirname(hookServerPaths(root).dir), { recursive: true });

const SCRIPTED = `
const { parentPort } = require("node:worker_threads");
parentPort.on("message", (m) => {
  if (m.kind === "warm") return parentPort.postMessage({ kind: "ready" });
  if (m.header.event === "crash") process.exit(3);
  if (m.header.env.HOOK_TEST_COMMAND === "crash-started") {
    parentPort.postMessage({ kind: "started", id: m.id });
    return setTimeout(() => process.exit(3), 50);
  }
  if (m.header.env.HOOK_TEST_COMMAND === "hang-started") {
    parentPort.postMessage({ kind: "started", id: m.id });
    return require("node:fs").writeFileSync(m.header.cwd + "/.hang-claimed", "");
  }
  // "hang" leaves ROOT/.hang-claimed behind: a test that kills the server after the claim waits
  // for it, rather than for a delay a loaded machine may overrun
  if (m.header.event === "hang" || m.header.env.HOOK_TEST_COMMAND === "hang") return require("node:fs").writeFileSync(m.header.cwd + "/.hang-claimed", "");
  if (m.header.event === "hang-locked") {
    // holds the workspace lock as acquireLock writes it in a worker thread, then never answers
    const fs = require("node:fs");
    const wt = require("node:worker_threads");
    fs.mkdirSync(m.header.cwd + "/.timewarp", { recursive: true });
    fs.writeFileSync(m.header.cwd + "/.timewarp/lock", JSON.stringify({ pid: process.pid, host: require("node:os").hostname(), started_at: new Date().toISOString(), command: "session cleanup", thread: wt.threadId }));
    return;
  }
  const seen = { event: m.header.event, input: m.input, cwd: m.header.cwd, root: m.header.root ?? null, agent: m.header.agent ?? null, json: m.header.json === true, reply: m.header.reply ?? null, marker: m.header.env.HOOK_TEST_MARKER ?? null, secret: m.header.env.HOOK_TEST_API_KEY ?? null, lc_all: m.header.env.LC_ALL ?? null, awkpath: m.header.env.AWKPATH ?? null };
  const stderr = m.header.event === "noisy" ? "a line on stderr\\n" : "";
  const reply = () => parentPort.postMessage({ kind: "reply", id: m.id, reply: { stdout: JSON.stringify(seen) + "\\n", stderr, exitCode: m.header.event === "block" ? 2 : 0 } });
  if (m.header.event === "slow") setTimeout(reply, 150);
  else reply();
});`;
const BROKEN = `throw new Error("the hook code does not load");`;

const server = serveHooks({
  root,
  startWorker: () => new Worker(mode === "broken-worker" ? BROKEN : SCRIPTED, { eval: true }),
  stale: () =>
    mode === "stale" || (mode === "stale-later" && existsSync(join(root, ".stale")))
      ? "the code on disk changed"
      : null,
  staleCheckMs: Number(process.env.HOOK_STALE_CHECK_MS ?? 5_000),
  onStale: (reason) => process.stdout.write(`stale: ${reason}\n`),
  hookTimeoutMs: Number(process.env.HOOK_TIMEOUT_MS ?? 120_000),
  stopWaitMs: Number(process.env.HOOK_STOP_WAIT_MS ?? 300_000),
  log: (line) => process.stderr.write(`${line}\n`),
});
process.on("SIGTERM", () => {
  void server.close().then(() => process.exit(0));
});
// Keep the process up (the server's own watcher and worker do not).
setInterval(() => {}, 60_000);
process.stdout.write("ready\n");
