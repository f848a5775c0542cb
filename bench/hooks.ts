/**
 * `npm run bench:hooks [FILES] [RUNS]` — hook latency, each sample a whole process as an agent
 * starts it: `bin/timewarp-hook <event>` (what `timewarp install` wires: a POSIX shell client
 * that hands the hook to the watch daemon's hook server, else runs the BUILT CLI), and for
 * comparison `node bin/timewarp.cjs hook <event>` (the Node client), on a workspace of FILES
 * files (default 10 000), RUNS samples per row (default 20). Side by side: bare `node -e 0` and
 * `sh -c true` (the floors of a Node and of a shell hook) and a shadow-git commit
 * (`git add -A && git commit`) on the same workspace, the alternative a user would otherwise run
 * after each tool call to catch shell edits. Two passes: with the watch daemon the session-start
 * hook starts (the default: its hook server answers the hooks; one row loads the CLI in the
 * hook's process instead, TIMEWARP_HOOK_SERVER=0), and walking the tree (TIMEWARP_WATCH=0: the
 * shell client runs the CLI at once). Env: HOOKS_BENCH_FILES, HOOKS_BENCH_RUNS. Prints p50/p95
 * and peak RSS per child. The turn checkpoint of a user prompt (`user-prompt-submit`) runs after
 * the round's edits (it stores them) and again on the same tree (it stores nothing), beside
 * `timewarp snapshot create` and `git stash create` on the shadow repository.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { type ProcessSample, percentile, timeProcess } from "./time-process.ts";

const REPO = resolve(import.meta.dirname, "..");
const BIN = join(REPO, "bin", "timewarp.cjs");
const SHELL_CLIENT = join(REPO, "bin", "timewarp-hook");
const FILES = Number(process.argv[2] ?? process.env.HOOKS_BENCH_FILES ?? 10_000);
const RUNS = Number(process.argv[3] ?? process.env.HOOKS_BENCH_RUNS ?? 20);

function ensureBuilt(): void {
  if (existsSync(join(REPO, "dist", "bin", "timewarp.cjs"))) return;
  console.log("building the CLI (npm run build) …");
  // tsc emits even when another folder has a type error; what matters is that the files exist.
  spawnSync("npm", ["run", "build"], { cwd: REPO, stdio: "inherit" });
  if (!existsSync(join(REPO, "dist", "bin", "timewarp.cjs")))
    throw new Error("build failed: dist/bin/timewarp.cjs missing");
}

function makeWorkspace(dir: string, files: number): void {
  for (let i = 0; i < files; i++) {
    const sub = join(dir, "src", `m${Math.floor(i / 100)}`);
    if (i % 100 === 0) mkdirSync(sub, { recursive: true });
    writeFileSync(join(sub, `f${i}.ts`), `export const v${i} = ${i};\n// ${"x".repeat(120)}\n`);
  }
}

async function main(): Promise<void> {
  ensureBuilt();
  const dir = mkdtempSync(join(tmpdir(), "tw-bench-hooks-"));
  const shadow = mkdtempSync(join(tmpdir(), "tw-bench-shadow-"));
  try {
    console.log(`workspace: ${FILES} files, ${RUNS} samples per row, node ${process.version}`);
    makeWorkspace(dir, FILES);
    const git = (...args: string[]) => ["--git-dir", shadow, "--work-tree", dir, ...args];
    spawnSync("git", ["init", "-q", "--bare", shadow]);
    spawnSync("git", [...git("add", "-A")]);
    spawnSync("git", [
      ...git("-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "base"),
    ]);

    const sid = "bench-session";
    for (const mode of ["watch", "walk"] as const) {
      // watch: the product's default (the session-start hook starts the watch daemon);
      // walk: TIMEWARP_WATCH=0, every scan walks the tree.
      const env = mode === "walk" ? { TIMEWARP_WATCH: "0" } : { TIMEWARP_WATCH: "" };
      if (mode === "walk") timeProcess("node", [BIN, "watch", "stop"], { cwd: dir });
      const rows = measure(mode, env);
      report(mode, rows);
      if (mode === "watch") reportDaemon();
    }
    timeProcess("node", [BIN, "watch", "stop"], { cwd: dir });

    function measure(mode: string, env: NodeJS.ProcessEnv): Record<string, ProcessSample[]> {
      /** A hook as the agent runs it: the shell client, or with `node` the Node client. */
      const hook = (
        event: string,
        payload: Record<string, unknown>,
        extra: NodeJS.ProcessEnv = {},
        client: "shell" | "node" = "shell",
      ) =>
        timeProcess(
          client === "shell" ? SHELL_CLIENT : "node",
          [...(client === "shell" ? [] : [BIN, "hook"]), event, "--agent", "claude-code"],
          {
            cwd: dir,
            input: JSON.stringify({ session_id: sid, cwd: dir, transcript_path: null, ...payload }),
            env: { ...env, ...extra },
          },
        );
      const rows: Record<string, ProcessSample[]> = {
        "node -e 0": [],
        "sh -c true": [],
        "session-start": [],
        "session-start, Node client": [],
        "pre-tool-use (Edit)": [],
        "pre-tool-use (Edit), Node client": [],
        "post-tool-use (Edit)": [],
        [mode === "watch"
          ? "pre-tool-use (Edit), no hook server"
          : "pre-tool-use (Edit), no code cache"]: [],
        "pre-tool-use (Bash)": [],
        "post-tool-use (Bash)": [],
        "session-end": [],
        "shadow git add -A && commit": [],
        // ── turn checkpoints (`timewarp rewind`) and their alternatives ──
        "user-prompt-submit (after edits)": [],
        "user-prompt-submit (nothing changed)": [],
        "snapshot create (CLI)": [],
        "shadow git stash create": [],
      };
      // Warm-up: the first session snapshot hashes everything once (not a hook's steady state),
      // and in watch mode starts the daemon, whose first answer is "walk once".
      const warm = hook("session-start", { source: "startup" });
      console.log(`[${mode}] first session-start: ${warm.ms.toFixed(0)} ms`);
      for (let k = 0; k < 3; k++) {
        hook("pre-tool-use", {
          tool_name: "Bash",
          tool_use_id: `warm${k}`,
          tool_input: { command: "true" },
        });
        hook("post-tool-use", {
          tool_name: "Bash",
          tool_use_id: `warm${k}`,
          tool_input: { command: "true" },
        });
        hook("session-start", { source: "startup" });
      }
      for (let i = 0; i < RUNS; i++) {
        rows["node -e 0"]?.push(timeProcess("node", ["-e", "0"], { cwd: dir }));
        rows["sh -c true"]?.push(timeProcess("sh", ["-c", "true"], { cwd: dir }));
        // Alternating which client goes first: the first session start after the edits below
        // snapshots them, the second finds nothing new.
        for (const client of i % 2 === 0
          ? (["shell", "node"] as const)
          : (["node", "shell"] as const))
          rows[client === "shell" ? "session-start" : "session-start, Node client"]?.push(
            hook("session-start", { source: "startup" }, {}, client),
          );
        const file = join(
          dir,
          "src",
          `m${i % Math.max(1, Math.floor(FILES / 100))}`,
          `f${(i % Math.max(1, Math.floor(FILES / 100))) * 100}.ts`,
        );
        const edit = {
          tool_name: "Edit",
          tool_use_id: `e${i}`,
          tool_input: { file_path: file, old_string: "x", new_string: "y" },
        };
        rows["pre-tool-use (Edit)"]?.push(hook("pre-tool-use", edit));
        rows["pre-tool-use (Edit), Node client"]?.push(
          hook("pre-tool-use", { ...edit, tool_use_id: `nc${i}` }, {}, "node"),
        );
        // With the daemon: the same hook loading the CLI in its own process (as before the hook
        // server); walking: the CLI without its V8 code cache.
        if (mode === "watch")
          rows["pre-tool-use (Edit), no hook server"]?.push(
            hook("pre-tool-use", { ...edit, tool_use_id: `ns${i}` }, { TIMEWARP_HOOK_SERVER: "0" }),
          );
        else
          rows["pre-tool-use (Edit), no code cache"]?.push(
            hook("pre-tool-use", { ...edit, tool_use_id: `cc${i}` }, { TIMEWARP_CODE_CACHE: "0" }),
          );
        writeFileSync(file, `export const edited = ${i};\n`);
        rows["post-tool-use (Edit)"]?.push(hook("post-tool-use", edit));
        const bash = {
          tool_name: "Bash",
          tool_use_id: `b${i}`,
          tool_input: { command: `echo ${i} >> src/m0/f1.ts` },
        };
        rows["pre-tool-use (Bash)"]?.push(hook("pre-tool-use", bash));
        writeFileSync(join(dir, "src", "m0", "f1.ts"), `export const shell = ${i};\n`);
        rows["post-tool-use (Bash)"]?.push(hook("post-tool-use", bash));
        // A user prompt after the edits above: a turn checkpoint that stores them; then one on
        // the same tree, which stores nothing. Beside them, a snapshot by the CLI (what a
        // checkpoint without the hook would cost) and git's own checkpoint of tracked files.
        const prompt = { hook_event_name: "UserPromptSubmit", prompt: `turn ${i}` };
        rows["user-prompt-submit (after edits)"]?.push(hook("user-prompt-submit", prompt));
        // A served checkpoint answers once it has scanned and writes its record after: give that
        // the moment the agent's model request would (a next prompt never comes 0 ms later).
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 200);
        rows["user-prompt-submit (nothing changed)"]?.push(hook("user-prompt-submit", prompt));
        writeFileSync(join(dir, "src", "m0", "f3.ts"), `export const snap = ${i};\n`);
        rows["snapshot create (CLI)"]?.push(
          timeProcess("node", [BIN, "snapshot", "create"], { cwd: dir, env }),
        );
        rows["shadow git stash create"]?.push(
          timeProcess("git", ["--git-dir", shadow, "--work-tree", dir, "stash", "create"], {
            cwd: dir,
          }),
        );
        // The session ends; the next round's session starts begin it again.
        rows["session-end"]?.push(hook("session-end", { reason: "other" }));
        writeFileSync(join(dir, "src", "m0", "f2.ts"), `export const git = ${i};\n`);
        rows["shadow git add -A && commit"]?.push(
          timeProcess(
            "sh",
            [
              "-c",
              `git --git-dir '${shadow}' --work-tree '${dir}' add -A && git --git-dir '${shadow}' --work-tree '${dir}' -c user.name=b -c user.email=b@b commit -qm s${i}`,
            ],
            { cwd: dir },
          ),
        );
      }

      return rows;
    }

    /** The daemon's own peak RSS: the watcher plus the hook server's worker with the code loaded. */
    function reportDaemon(): void {
      try {
        const info = JSON.parse(
          readFileSync(join(dir, ".timewarp", "watch", "daemon.json"), "utf8"),
        );
        const proc = readFileSync(`/proc/${info.pid}/status`, "utf8");
        const hwm = /VmHWM:\s+(\d+) kB/.exec(proc)?.[1];
        const hooks = JSON.parse(
          readFileSync(join(dir, ".timewarp", "watch", "hooks", "server.json"), "utf8"),
        );
        console.log(
          `watch daemon (pid ${info.pid}): peak RSS ${hwm ? `${(Number(hwm) / 1024).toFixed(0)} MiB` : "n/a"}, ${hooks.served} hooks answered by its hook server`,
        );
        // Where a served hook's time goes: the daemon's share (claim to reply); the rest is
        // the client's Node start, its stdin, and the file round trip.
        const timings = (hooks.timings ?? {}) as Record<
          string,
          { count: number; p50_ms: number; p95_ms: number }
        >;
        for (const [event, t] of Object.entries(timings)) {
          console.log(
            `  in the daemon, ${event.padEnd(14)} p50 ${String(t.p50_ms).padStart(5)} ms, p95 ${String(t.p95_ms).padStart(5)} ms (${t.count} answered)`,
          );
        }
      } catch (error) {
        console.log(`watch daemon: not found (${String(error)})`);
      }
    }

    function report(mode: string, rows: Record<string, ProcessSample[]>): void {
      const floor = percentile(rows["node -e 0"]?.map((s) => s.ms) ?? [], 50);
      const gitP50 = percentile(rows["shadow git add -A && commit"]?.map((s) => s.ms) ?? [], 50);
      console.log(
        `\n${mode === "watch" ? "with the watch daemon (default)" : "walking the tree (TIMEWARP_WATCH=0)"}`,
      );
      console.log(
        `${"row".padEnd(38)} ${"p50 ms".padStart(8)} ${"p95 ms".padStart(8)} ${"×node".padStart(7)} ${"×git".padStart(6)} ${"peak RSS".padStart(10)}`,
      );
      for (const [name, samples] of Object.entries(rows)) {
        if (samples.length === 0) continue;
        const ms = samples.map((s) => s.ms);
        const rss = Math.max(...samples.map((s) => s.rssKiB ?? 0));
        const p50 = percentile(ms, 50);
        console.log(
          `${name.padEnd(38)} ${p50.toFixed(1).padStart(8)} ${percentile(ms, 95).toFixed(1).padStart(8)} ${(p50 / floor).toFixed(2).padStart(7)} ${(p50 / gitP50).toFixed(2).padStart(6)} ${rss > 0 ? `${(rss / 1024).toFixed(0)} MiB`.padStart(10) : "n/a".padStart(10)}`,
        );
      }
    }
    console.log(
      `\nbench process peak RSS: ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MiB`,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
    rmSync(shadow, { recursive: true, force: true });
  }
}

await main();
