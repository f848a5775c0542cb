import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { processStartOf } from "../src/core/index.ts";
import { readHookServer } from "../src/hooks/index.ts";
import { makeTempDir, runCli } from "./helpers/cli.ts";
import { describeShellClient, SCRIPT, SLOW_TEST_MS } from "./helpers/hook-shell-suite.ts";
import { cleanups, leftovers, waitUntil, workspace } from "./helpers/scripted-hook-server.ts";

// bin/timewarp-hook under dash with mawk (Debian's /bin/sh and awk), the whole suite
// (helpers/hook-shell-suite.ts); then as an agent runs it, against the real watch daemon.
describeShellClient(["dash with mawk"]);
// Under bash with gawk only the suite's first two tests (the payload, environment and exit code
// through gawk's escaping; finding the workspace with bash's parameter expansions): its whole
// suite runs in `npm run test:compat` (test/compat/, beside busybox and the one true awk), and the
// rest of it tries the client's control flow, which dash with mawk tries above.
describeShellClient(["bash with gawk"], { first: 2 });

describe("timewarp-hook as an agent runs it", () => {
  it(
    "runs by its shebang from npm's link, and the watch daemon runs the real session start",
    async () => {
      const root = workspace();
      const bin = makeTempDir("tw-hookbin-");
      cleanups.push(bin.cleanup);
      symlinkSync(SCRIPT, join(bin.dir, "timewarp-hook"));
      const started = runCli(["watch", "start", "--json", "-C", root]);
      expect(started.status, started.stderr).toBe(0);
      cleanups.push(() => runCli(["watch", "stop", "-C", root]));
      await waitUntil(() => readHookServer(root) !== null);
      // through `sh -c` as agents run hook commands (dash does not exec a lone command: the
      // client's parent is the shell, whose parent, this process, is the agent)
      const r = spawnSync(
        "/bin/sh",
        ["-c", `'${join(bin.dir, "timewarp-hook")}' session-start --agent claude-code --json`],
        {
          cwd: root,
          input: JSON.stringify({ session_id: "s1", cwd: root, source: "startup" }),
          encoding: "utf8",
        },
      );
      expect(r.status, r.stderr).toBe(0);
      const out = JSON.parse(r.stdout) as { kind: string; summary: string };
      expect(out.kind).toBe("ok");
      const id = /snapshot (\S+)/.exec(out.summary)?.[1] as string;
      expect(existsSync(join(root, ".timewarp", "snapshots", id, "snapshot.json"))).toBe(true);
      // the session is bound to the agent's process, not to the daemon's parent
      const session = JSON.parse(
        readFileSync(join(root, ".timewarp", "sessions", "s1.json"), "utf8"),
      ) as { pid: number; process_start: string | null };
      expect(session).toMatchObject({
        pid: process.pid,
        process_start: processStartOf(process.pid),
      });
      await waitUntil(() => readHookServer(root)?.timings?.["session-start"]?.count === 1);
      expect(leftovers(root)).toEqual([]);
    },
    SLOW_TEST_MS,
  );
});
