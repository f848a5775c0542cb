import { spawn } from "node:child_process";
import { existsSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { progressDir, readProgress } from "../src/core/index.ts";
import { cliCommand, makeTempDir, runCli } from "./helpers/cli.ts";

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.splice(0).reverse()) c();
});

/** A workspace with a session snapshot, then changed, so travel and return have work to do. */
function workspace(): { root: string; snapshotId: string } {
  const t = makeTempDir("tw-cli-progress-");
  cleanups.push(t.cleanup);
  for (let i = 0; i < 40; i++) writeFileSync(join(t.dir, `f${i}.txt`), `one ${i}\n`);
  const started = runCli(["--json", "session", "start", "--session-id", "p1"], { cwd: t.dir });
  expect(started.status).toBe(0);
  for (let i = 0; i < 40; i += 2) writeFileSync(join(t.dir, `f${i}.txt`), `two ${i}\n`);
  return { root: t.dir, snapshotId: (started.json() as { snapshot_id: string }).snapshot_id };
}

/** stdout is exactly one JSON document (a second one, or a progress line, would not parse). */
function oneDocument(stdout: string): unknown {
  expect(stdout.trimEnd().split("\n")).toHaveLength(1);
  return JSON.parse(stdout);
}

describe("progress of CLI commands", () => {
  it("prints nothing but the one JSON document with --json", () => {
    const { root } = workspace();
    for (const args of [["gc"], ["fsck"], ["snapshot", "list"]]) {
      const r = runCli(["--json", ...args], { cwd: root });
      expect(r.status, `${args.join(" ")}: ${r.stderr}`).toBe(0);
      expect(r.stderr).toBe("");
      expect(oneDocument(r.stdout)).toBeTypeOf("object");
    }
    const target = makeTempDir("tw-cli-progress-export-");
    cleanups.push(target.cleanup);
    const out = join(target.dir, "copy");
    const exported = runCli(["--json", "snapshot", "export", workspaceSnapshot(root), out], {
      cwd: root,
    });
    expect(exported.stderr).toBe("");
    expect(oneDocument(exported.stdout)).toMatchObject({ files: 40 });
    // no record is left behind by any of them
    expect(readdirSync(progressDir(root))).toEqual([]);
  });

  it("keeps a progress record while travel runs, and removes it at the end", async () => {
    const { root, snapshotId } = workspace();
    const cli = cliCommand();
    // The restore step sleeps 4 s: long enough for a reader to see the record whatever the load.
    const child = spawn(cli.command, [...cli.args, "--json", "travel", snapshotId], {
      cwd: root,
      env: { ...process.env, NO_COLOR: "1", TIMEWARP_PAUSE_AT: "travel:restore:4000" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    cleanups.push(() => child.kill("SIGKILL"));
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));

    await expect
      .poll(() => readProgress(root).find((r) => r.pid === child.pid), {
        timeout: 60_000,
        interval: 50,
      })
      .toMatchObject({ command: "travel", phase: "back up" });
    expect(await exited).toBe(0);
    expect(stderr).toBe("");
    expect(oneDocument(stdout)).toMatchObject({ mode: "past", snapshot_id: snapshotId });
    expect(readProgress(root)).toEqual([]);
    expect(existsSync(join(progressDir(root), `${child.pid}.json`))).toBe(false);

    const back = runCli(["--json", "return"], { cwd: root });
    expect(back.stderr).toBe("");
    expect(oneDocument(back.stdout)).toMatchObject({ mode: "present" });
  }, 120_000);
});

function workspaceSnapshot(root: string): string {
  const list = runCli(["--json", "snapshot", "list"], { cwd: root }).json() as {
    snapshots: { snapshot_id: string }[];
  };
  const id = list.snapshots[0]?.snapshot_id;
  if (id === undefined) throw new Error("no snapshot");
  return id;
}
