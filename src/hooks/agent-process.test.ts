import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { makeTempDir, REPO_ROOT } from "../../test/helpers/cli.ts";
import { agentProcessOf } from "./agent-process.ts";

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

/** A script that prints what `agentProcessOf` makes of its own parent. */
function probe(): string {
  const t = makeTempDir("tw-agent-pid-");
  cleanups.push(t.cleanup);
  const file = join(t.dir, "probe.ts");
  const module = pathToFileURL(join(import.meta.dirname, "agent-process.ts")).href;
  writeFileSync(
    file,
    `import { agentProcessOf } from ${JSON.stringify(module)};\nconsole.log(agentProcessOf(process.ppid));\n`,
  );
  return file;
}

describe.runIf(process.platform === "linux")("agentProcessOf", () => {
  it("steps over a launcher that ends with the hook (tsx), and a `sh -c` around it", () => {
    const tsx = join(REPO_ROOT, "node_modules", ".bin", "tsx");
    const script = probe();
    // this process → tsx's launcher (node …/.bin/tsx) → node running the script
    const direct = spawnSync(tsx, [script], { encoding: "utf8" });
    expect(direct.stderr).toBe("");
    expect(Number(direct.stdout.trim())).toBe(process.pid);
    // this process → sh -c → tsx → node: dash does not exec a lone command after `;`
    const viaShell = spawnSync("/bin/sh", ["-c", `'${tsx}' '${script}'; exit $?`], {
      encoding: "utf8",
    });
    expect(Number(viaShell.stdout.trim())).toBe(process.pid);
  });

  it("stops at the first process that is neither: the agent, even when node runs it", () => {
    const script = probe();
    const tsx = join(REPO_ROOT, "node_modules", ".bin", "tsx");
    // an agent shaped as Claude Code is (`node …/cli.js`) runs the hook through tsx
    const agent = join(script, "..", "cli.js");
    writeFileSync(
      agent,
      `const { spawnSync } = require("node:child_process");
       const r = spawnSync(${JSON.stringify(tsx)}, [${JSON.stringify(script)}], { encoding: "utf8" });
       console.log(JSON.stringify({ self: process.pid, found: Number(r.stdout.trim()) }));`,
    );
    const r = spawnSync(process.execPath, [agent], { encoding: "utf8" });
    const { self, found } = JSON.parse(r.stdout) as { self: number; found: number };
    expect(found).toBe(self);
    expect(agentProcessOf(1)).toBeNull(); // a daemon's parent is never an agent
    expect(agentProcessOf(null)).toBeNull();
  });
});
