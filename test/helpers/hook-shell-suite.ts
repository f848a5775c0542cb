import { spawn, spawnSync } from "node:child_process";
import {
  chmodSync,
  existsSync,
  mkdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { hookServerPaths, readHookServer } from "../../src/hooks/index.ts";
import { cliCommand, makeTempDir, REPO_ROOT } from "./cli.ts";
import {
  cleanups,
  killAfterHangClaimed,
  leftovers,
  runCleanups,
  scriptedServer,
  sleep,
  stdoutOf,
  waitUntil,
  workspace,
} from "./scripted-hook-server.ts";

/**
 * bin/timewarp-hook, the hook client in POSIX shell that spares a hook Node's start: run by real
 * shells with real awks (dash and mawk, as Debian's /bin/sh; bash and gawk; busybox's sh and
 * awk; dash and the one true awk, the BSDs' and macOS's) against a scripted hook server
 * (hook-server-child.ts). The script is linked into a bin directory as npm links it,
 * beside a `timewarp` that logs how it was called and then runs the real CLI: every case the
 * client leaves to the CLI shows there.
 */

export const SCRIPT = join(REPO_ROOT, "bin", "timewarp-hook");
// A hang guard for the tests that start servers and CLIs, not a budget: a loaded machine is slow.
export const SLOW_TEST_MS = 300_000;
const UMASK = process.umask().toString(8).padStart(4, "0");
const has = (file: string) => existsSync(file);
const onPath = (name: string) => spawnSync("sh", ["-c", `command -v ${name}`]).status === 0;
const busybox = onPath("busybox")
  ? spawnSync("sh", ["-c", "command -v busybox"], { encoding: "utf8" }).stdout.trim()
  : null;

const VARIANTS = [
  { name: "dash with mawk", shell: ["/bin/dash"], awk: "/usr/bin/mawk" },
  { name: "bash with gawk", shell: ["/bin/bash"], awk: "/usr/bin/gawk" },
  { name: "busybox sh and awk", shell: [busybox ?? "busybox", "sh"], awk: busybox ?? "" },
  // the one true awk, whose descendants macOS and the BSDs ship
  { name: "dash with original-awk", shell: ["/bin/dash"], awk: "/usr/bin/original-awk" },
].map((v) => ({ ...v, available: has(v.shell[0] as string) && v.awk !== "" && has(v.awk) }));

interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

/**
 * The client's suite under the named variants (test files split them so that vitest runs them
 * side by side). Call it once, at the top level of a test file. `first`: only the suite's first
 * tests run (the rest are skipped), for a variant whose whole suite runs in another file.
 */
export function describeShellClient(names: string[], options: { first?: number } = {}): void {
  beforeAll(() => {
    // vitest.config.ts turns watch daemons off for the other tests; the client skips servers then
    delete process.env.TIMEWARP_WATCH;
  });
  afterEach(runCleanups);
  describe.each(VARIANTS.filter((v) => names.includes(v.name)))(
    "timewarp-hook under $name",
    (variant) => {
      let defined = 0;
      /** Whether the next test runs: the variant is installed, and the test is in the prefix. */
      const runs = () =>
        variant.available && defined++ < (options.first ?? Number.POSITIVE_INFINITY);

      /** A bin directory as npm makes one: the script linked in, a logging `timewarp`, an awk. */
      function binDir(): { dir: string; calls: () => string[]; stdins: () => string[] } {
        const t = makeTempDir("tw-hookbin-");
        cleanups.push(t.cleanup);
        const log = join(t.dir, "calls.log");
        symlinkSync(SCRIPT, join(t.dir, "timewarp-hook"));
        symlinkSync(variant.awk, join(t.dir, "awk"));
        const cli = cliCommand();
        const argv = [cli.command, ...cli.args].map((a) => `'${a}'`).join(" ");
        writeFileSync(
          join(t.dir, "timewarp"),
          `#!/bin/sh\nprintf '%s\\n' "tried=\${TIMEWARP_HOOK_TRIED-} umask=$(umask) $*" >> '${log}'\nreadlink /proc/$$/fd/0 >> '${log}.stdin' 2>/dev/null || echo unknown >> '${log}.stdin'\nexec ${argv} "$@"\n`,
        );
        chmodSync(join(t.dir, "timewarp"), 0o755);
        return {
          dir: t.dir,
          // what the CLI was started with; the umask is the caller's (the client's own is private)
          calls: () =>
            existsSync(log)
              ? readFileSync(log, "utf8")
                  .trim()
                  .split("\n")
                  .map((line) => line.replace(` umask=${UMASK}`, ""))
              : [],
          // where the CLI's stdin came from: the caller's pipe, or a request taken back from the
          // server's directory (a behaviour to assert instead of how long the client took)
          stdins: () =>
            existsSync(`${log}.stdin`)
              ? readFileSync(`${log}.stdin`, "utf8").trim().split("\n")
              : [],
        };
      }

      /**
       * Run the client from `bin` under this variant's shell. `before`: shell commands run first in
       * the same process (`sh -c '<before> && exec <client>'`), so that `$$` is the client's pid.
       */
      function hook(
        bin: string,
        args: string[],
        options: { cwd: string; input?: string; env?: NodeJS.ProcessEnv; before?: string },
      ): Run {
        const argv = [...variant.shell, join(bin, "timewarp-hook"), ...args];
        const quoted = argv.map((a) => `'${a.replaceAll("'", `'\\''`)}'`).join(" ");
        const [command, ...rest] =
          options.before === undefined ? argv : ["sh", "-c", `${options.before} && exec ${quoted}`];
        const r = spawnSync(command as string, rest, {
          cwd: options.cwd,
          input: options.input ?? "",
          encoding: "utf8",
          env: { ...process.env, PATH: `${bin}:${process.env.PATH}`, ...options.env },
          timeout: 60_000,
        });
        return { status: r.status, stdout: r.stdout, stderr: r.stderr };
      }

      const echo = (r: Run) => JSON.parse(r.stdout) as Record<string, unknown>;

      it.runIf(runs())(
        "the server answers: output, exit code, cwd, environment and payload as the Node client gives them",
        async () => {
          const root = workspace();
          const bin = binDir();
          await scriptedServer(root, "normal");
          // a payload of several lines, without a final newline; an environment value every JSON
          // escape is needed for; a secret-looking name that must not reach the request file
          const payload = `{"text":"é∑😀"}\n\t{"second":"line \\" \\\\"}\r\n${"x".repeat(200_000)}`;
          // (long, with escapes all along it: escaping must not cost its square)
          const marker = `a "quoted" \\back\\slash\ttab\nnewline\u0001ctl é😀 $HOME \`x\`${"\\\n".repeat(40_000)}`;
          const env = { HOOK_TEST_MARKER: marker, HOOK_TEST_API_KEY: "sk-not-for-disk" };
          const r = hook(bin.dir, ["echo", "--agent", "claude-code", "--json"], {
            cwd: root,
            input: payload,
            env: { ...env, LC_ALL: "C.UTF-8" },
          });
          expect(r.stderr).toBe("");
          expect(r.status).toBe(0);
          expect(echo(r)).toEqual({
            event: "echo",
            input: payload,
            cwd: realpathSync(root),
            root: null,
            agent: "claude-code",
            json: true,
            reply: "files",
            marker,
            secret: null,
            lc_all: "C.UTF-8",
            awkpath: null, // gawk's own, not the caller's
          });
          // the client's own LC_ALL=C for awk does not leak into the hook's environment
          expect(
            echo(hook(bin.dir, ["echo"], { cwd: root, env: { LC_ALL: undefined } })).lc_all,
          ).toBe(null);
          const blocked = hook(bin.dir, ["block"], { cwd: root, input: "{}" });
          expect(blocked).toMatchObject({ status: 2, stderr: "" });
          expect(echo(blocked).event).toBe("block");
          const noisy = hook(bin.dir, ["noisy"], { cwd: root, input: "{}" });
          expect(noisy).toMatchObject({ status: 0, stderr: "a line on stderr\n" });
          expect(echo(noisy).event).toBe("noisy");
          expect(bin.calls()).toEqual([]); // the CLI never started
          expect(leftovers(root)).toEqual([]);
          await waitUntil(() => readHookServer(root)?.served === 4);
        },
      );

      it.runIf(runs())(
        "finds the workspace as the CLI does: --cwd, the agent's project directory, the nearest .timewarp/",
        async () => {
          const root = workspace();
          const bin = binDir();
          await scriptedServer(root, "normal");
          const deep = join(root, "src", "deep");
          mkdirSync(deep, { recursive: true });
          const real = realpathSync(root);
          // from a subdirectory: the nearest directory holding .timewarp/
          expect(echo(hook(bin.dir, ["echo"], { cwd: deep })).cwd).toBe(realpathSync(deep));
          // the agent's project directory, when the cwd lies inside it (with a trailing slash)
          const viaProject = hook(bin.dir, ["echo"], {
            cwd: deep,
            env: { CLAUDE_PROJECT_DIR: `${real}/` },
          });
          expect(echo(viaProject).root).toBe(null);
          // --cwd, resolved against the cwd as Node resolves it, goes in the request as the root
          expect(echo(hook(bin.dir, ["echo", "-C", "../.."], { cwd: deep })).root).toBe(real);
          expect(
            echo(hook(bin.dir, ["echo", "-C", `${real}//src/./..//`], { cwd: deep })).root,
          ).toBe(real);
          const relative = hook(bin.dir, ["echo", "--cwd", "src"], { cwd: real });
          expect(relative.status).toBe(0);
          expect(bin.calls()).toEqual(["tried=1 hook echo --cwd src"]); // no server at src/
          expect(leftovers(root)).toEqual([]);
        },
      );

      it.runIf(runs())(
        "what it does not handle goes to the CLI with the same arguments and the payload untouched",
        async () => {
          const root = workspace();
          const bin = binDir();
          const bash = JSON.stringify({
            session_id: "s1",
            cwd: root,
            tool_name: "Bash",
            tool_use_id: "b1",
            tool_input: { command: "true" },
          });
          // no server: the CLI runs the hook, told the server was asked already
          const none = hook(bin.dir, ["pre-tool-use", "--json"], { cwd: root, input: bash });
          expect(none.status).toBe(0);
          expect(JSON.parse(none.stdout)).toMatchObject({ kind: "ok", summary: /^Bash: / });
          // arguments it does not know, an event name it would have to escape, fault injection,
          // the opt-out: the CLI judges
          await scriptedServer(root, "normal");
          const cases: [string[], NodeJS.ProcessEnv][] = [
            [["pre-tool-use", "--json", "--bogus"], {}],
            [['pre"tool', "--json"], {}],
            [["", "pre-tool-use", "--json"], {}],
            [["pre-tool-use", "--json", "--agent", ""], {}],
            [["pre-tool-use", "--json"], { TIMEWARP_CRASH_AT: "nowhere" }],
            [["pre-tool-use", "--json"], { TIMEWARP_HOOK_SERVER: "0" }],
          ];
          for (const [args, env] of cases) {
            const r = hook(bin.dir, args, { cwd: root, input: bash, env });
            expect(r.status, r.stderr).toBe(0);
            expect(JSON.parse(r.stdout)).toMatchObject({ event: args[0] || "pre-tool-use" });
          }
          expect(bin.calls()).toEqual([
            "tried=1 hook pre-tool-use --json",
            "tried= hook pre-tool-use --json --bogus",
            'tried= hook pre"tool --json',
            "tried= hook  pre-tool-use --json",
            "tried= hook pre-tool-use --json --agent ",
            "tried=1 hook pre-tool-use --json",
            "tried= hook pre-tool-use --json",
          ]);
          // the odd event name and the empty agent reached the server through the CLI's own client,
          // which hands any event on (a second positional makes the CLI parse for itself)
          await waitUntil(() => readHookServer(root)?.served === 2);
          expect(leftovers(root)).toEqual([]);
        },
        SLOW_TEST_MS,
      );

      it.runIf(runs())(
        "a server that declines, or does not claim within about a second: the CLI runs the hook with the payload",
        async () => {
          const root = workspace();
          const bin = binDir();
          const payload = (id: string) =>
            JSON.stringify({
              session_id: "s1",
              cwd: root,
              tool_name: "Bash",
              tool_use_id: id,
              tool_input: { command: `echo ${"é".repeat(5000)}` },
            });
          const stale = await scriptedServer(root, "stale");
          const declined = hook(bin.dir, ["pre-tool-use", "--json"], {
            cwd: root,
            input: payload("d1"),
          });
          expect(declined.status, declined.stderr).toBe(0);
          expect(JSON.parse(declined.stdout)).toMatchObject({ kind: "ok", summary: /^Bash: / });
          await waitUntil(() => stale.output().includes("stale: the code on disk changed"));
          stale.child.kill("SIGKILL");
          await waitUntil(() => readHookServer(root) === null);

          const deaf = await scriptedServer(root, "normal");
          deaf.child.kill("SIGSTOP"); // alive, its record in place, but deaf
          let late: Run;
          try {
            late = hook(bin.dir, ["pre-tool-use", "--json"], { cwd: root, input: payload("d2") });
          } finally {
            deaf.child.kill("SIGCONT");
          }
          // the request was sent, left unclaimed, and taken back: the CLI read it from there
          expect(bin.stdins()[1]).toMatch(/\/watch\/hooks\//);
          expect(late.status, late.stderr).toBe(0);
          expect(JSON.parse(late.stdout)).toMatchObject({ kind: "ok", summary: /^Bash: / });
          expect(bin.calls()).toEqual([
            "tried=1 hook pre-tool-use --json",
            "tried=1 hook pre-tool-use --json",
          ]);
          // woken up, the server finds nothing to run: the request was taken back whole
          await sleep(200);
          expect(readHookServer(root)?.served).toBe(0);
          expect(leftovers(root)).toEqual([]);
        },
        SLOW_TEST_MS,
      );

      it.runIf(runs())(
        "a server killed after claiming: a failure in the hook's own form, exit 0, the hook never run twice",
        async () => {
          const root = workspace();
          const bin = binDir();
          for (const json of [false, true]) {
            const { child } = await scriptedServer(root, "normal");
            killAfterHangClaimed(root, child.pid as number);
            const r = hook(bin.dir, ["hang", ...(json ? ["--json"] : [])], {
              cwd: root,
              input: "{}",
            });
            expect(r.status).toBe(0);
            const message = `the daemon's hook server did not finish this hook (its process ${child.pid} is gone)`;
            if (json) {
              expect(JSON.parse(r.stdout)).toEqual({
                event: "hang",
                kind: "failed",
                summary: "internal failure",
                message,
              });
            } else expect(r).toMatchObject({ stdout: "", stderr: `timewarp hook: ${message}\n` });
          }
          expect(bin.calls()).toEqual([]);
        },
        SLOW_TEST_MS,
      );

      it.runIf(runs())(
        "a claimed hook never answered: the wait ends at 130 s by the clock, before the agents' timeout",
        async () => {
          const root = workspace();
          const bin = binDir();
          await scriptedServer(root, "normal");
          // A clock that jumps 100 s each time it is read: the third reading is past 130 s, so the
          // client gives up at once instead of after 6500 polls (over two minutes, past the spawn
          // timeout below). Which reading is the deadline's is the client's business; how long it
          // really waited is not asserted.
          const counter = join(bin.dir, "clock");
          writeFileSync(
            join(bin.dir, "date"),
            `#!/bin/sh\nn=$(cat '${counter}' 2>/dev/null || echo 1000)\necho $((n + 100)) > '${counter}'\necho "$n"\n`,
          );
          chmodSync(join(bin.dir, "date"), 0o755);
          const r = hook(bin.dir, ["hang", "--agent", "claude-code"], { cwd: root, input: "{}" });
          expect(r).toMatchObject({
            status: 0,
            stdout: "",
            stderr:
              "timewarp hook: the daemon's hook server did not finish this hook (no reply within 2 minutes)\n",
          });
          expect(bin.calls()).toEqual([]); // never run a second time
        },
        SLOW_TEST_MS,
      );

      it.runIf(runs())(
        "what is not a live server's is not trusted: pid 0, a linked directory, a file at its temp name",
        async () => {
          const root = workspace();
          const bin = binDir();
          const hooks = hookServerPaths(root).dir;
          const victim = join(root, "victim.txt");
          writeFileSync(victim, "precious\n");
          // a record naming pid 0 (kill -0 0 would be our own process group), as a checked-in
          // .timewarp/ could carry it
          mkdirSync(hooks, { recursive: true });
          writeFileSync(join(hooks, "server.json"), '{"protocol":4,"pid":0}\n');
          const zero = hook(bin.dir, ["echo"], { cwd: root, input: "{}" });
          expect(zero.status, zero.stderr).toBe(0);
          // not left to the claim timeout: no request was written, the CLI read the caller's stdin
          expect(bin.calls()).toEqual(["tried=1 hook echo"]);
          expect(bin.stdins()[0]).not.toMatch(/\/watch\/hooks/);

          const { child } = await scriptedServer(root, "normal");
          // the client's temp name already taken, by a link to somewhere else: never written through
          const planted = hook(bin.dir, ["echo"], {
            cwd: root,
            input: "{}",
            before: `ln -s '${victim}' '${hooks}'/.req-sh-$$.tmp`,
          });
          expect(planted.status, planted.stderr).toBe(0);
          expect(readFileSync(victim, "utf8")).toBe("precious\n");
          expect(bin.calls()).toEqual(["tried=1 hook echo", "tried=1 hook echo"]);
          expect(readHookServer(root)?.served).toBe(0);

          // the server's directory replaced by a link: not the server's
          child.kill("SIGSTOP");
          const moved = `${hooks}.moved`;
          renameSync(hooks, moved);
          symlinkSync(moved, hooks);
          try {
            const linked = hook(bin.dir, ["echo"], { cwd: root, input: "{}" });
            expect(linked.status, linked.stderr).toBe(0);
            // nothing written through the link: the CLI read the caller's stdin
            expect(bin.stdins()[2]).not.toMatch(/\/watch\/hooks/);
          } finally {
            child.kill("SIGCONT");
          }
          expect(bin.calls()).toHaveLength(3);
        },
        SLOW_TEST_MS,
      );

      it.runIf(runs())("a closed stdin is an empty payload, as in the CLI", async () => {
        const root = workspace();
        const bin = binDir();
        await scriptedServer(root, "normal");
        const r = hook(bin.dir, ["echo"], { cwd: root, before: "exec <&-" });
        expect(r.status, r.stderr).toBe(0);
        expect(JSON.parse(r.stdout)).toMatchObject({ event: "echo", input: "" });
        expect(bin.calls()).toEqual([]);
      });

      it.runIf(runs())("parallel calls each get their own answer", async () => {
        const root = workspace();
        const bin = binDir();
        await scriptedServer(root, "normal");
        const errs: (string | undefined)[] = [];
        const runs = Array.from({ length: 8 }, (_, i) => {
          const child = spawn(
            variant.shell[0] as string,
            [...variant.shell.slice(1), join(bin.dir, "timewarp-hook"), "echo"],
            { cwd: root, env: { ...process.env, PATH: `${bin.dir}:${process.env.PATH}` } },
          );
          child.stdin.end(`payload ${i}`);
          child.stderr.on("data", (b: Buffer) => {
            errs[i] = (errs[i] ?? "") + b.toString();
          });
          return stdoutOf(child);
        });
        const outs = await Promise.all(runs);
        // what a call that neither answered nor fell back said (the client's fail-open message)
        const said = errs
          .flatMap((e, i) => (e === undefined ? [] : [`call ${i}: ${e}`]))
          .join("\n");
        // every served call gets its own payload back; a call the server did not take in time on a
        // loaded machine falls back to the CLI (recorded by the fake bin) — never lost, never crossed
        const served = outs.flatMap((o, i) => (o === "" ? [] : [[i, o] as const]));
        for (const [i, o] of served) expect(JSON.parse(o).input).toBe(`payload ${i}`);
        expect(served.length).toBeGreaterThan(0);
        expect(bin.calls(), said).toHaveLength(outs.length - served.length);
        expect(leftovers(root)).toEqual([]);
      });
    },
  );
}
