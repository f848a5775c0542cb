import { spawn } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { cliCommand, makeTempDir, runCli } from "./helpers/cli.ts";
import { connectMcp, toolError } from "./helpers/mcp.ts";

/**
 * Issue 16, class 10: every user mistake gets a coded error and one exit code (2 for usage and
 * bad input, with and without --json), never a stack trace; a closed stdout ends the process
 * quietly with the command's status.
 */
const STACK = /\n\s+at .+[(:]\d+|node:internal|Error: E[A-Z]+:/;

describe("user mistakes on the CLI", () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  const workspace = () => {
    const tmp = makeTempDir("tw-cli-errors-");
    cleanups.push(tmp.cleanup);
    writeFileSync(join(tmp.dir, "a.txt"), "one\n");
    writeFileSync(join(tmp.dir, "content.txt"), "two\n");
    mkdirSync(join(tmp.dir, "folder"));
    return tmp.dir;
  };

  /** Run in both modes: the same code and the same exit code, no stack trace anywhere. */
  const expectMistake = (dir: string, args: string[], code: string, status = 2) => {
    const json = runCli([...args, "--json"], { cwd: dir });
    expect(json.stderr, `${args.join(" ")} --json`).not.toMatch(STACK);
    expect(json.stdout).not.toMatch(STACK);
    expect(json.json(), args.join(" ")).toMatchObject({ error: { code } });
    expect(json.status, `${args.join(" ")} --json`).toBe(status);
    const text = runCli(args, { cwd: dir });
    expect(text.stderr, args.join(" ")).toContain(`error ${code}: `);
    expect(text.stderr).not.toMatch(STACK);
    expect(text.stdout).not.toMatch(STACK);
    expect(text.status, args.join(" ")).toBe(status);
  };

  it("an input file that is missing, a directory, or named too long: coded, exit 2", () => {
    const dir = workspace();
    const missing = join(dir, "nope.patch");
    const long = "n".repeat(300);
    expectMistake(dir, ["edit", "patch", missing], "NOT_FOUND");
    expectMistake(dir, ["edit", "patch", "folder"], "NOT_A_FILE");
    expectMistake(dir, ["edit", "patch", long], "NAME_TOO_LONG");
    expectMistake(dir, ["edit", "patch", "a.txt/x"], "NOT_FOUND");
    expectMistake(dir, ["edit", "whole", "a.txt", "--content-file", missing], "NOT_FOUND");
    expectMistake(dir, ["edit", "whole", "a.txt", "--content-file", "folder"], "NOT_A_FILE");
    expectMistake(
      dir,
      ["edit", "range", "a.txt", "--start", "1", "--end", "1", "--content-file", missing],
      "NOT_FOUND",
    );
    expectMistake(
      dir,
      ["edit", "block", "a.txt", "--search-file", "folder", "--replace", "x"],
      "NOT_A_FILE",
    );
    // nothing was written or recorded by any of them
    expect(runCli(["history", "--json"], { cwd: dir }).json()).toMatchObject({
      pagination: { total: 0 },
    });
  }, 300_000);

  it("a workspace file named too long is NAME_TOO_LONG, not INTERNAL", () => {
    const dir = workspace();
    expectMistake(
      dir,
      ["edit", "whole", "x".repeat(300), "--content-file", "content.txt"],
      "NAME_TOO_LONG",
    );
  }, 120_000);

  it("other user-named inputs: --transcript, RUNS_DIR, a subskill directory, --cwd", () => {
    const dir = workspace();
    expect(runCli(["session", "start", "--json"], { cwd: dir }).status).toBe(0);
    const report = [
      "issue",
      "report",
      "--task-context",
      "t",
      "--symptom",
      "s",
      "--success-criteria",
      "c",
      "--transcript",
    ];
    expectMistake(dir, [...report, join(dir, "gone.jsonl")], "NOT_FOUND");
    expectMistake(dir, [...report, "folder"], "NOT_A_FILE");
    expectMistake(dir, ["memory", "eval", join(dir, "no-runs")], "NOT_FOUND");
    expectMistake(dir, ["skill", "check", join(dir, "no-skill")], "NOT_FOUND");
    expectMistake(dir, ["skill", "check", "a.txt"], "NOT_A_DIRECTORY");
    // -C names the workspace: a missing one is refused, never created by the first write
    const elsewhere = join(dir, "not-here");
    expectMistake(
      dir,
      ["-C", elsewhere, "edit", "whole", "b.txt", "--content-file", "content.txt"],
      "NOT_FOUND",
    );
    expectMistake(dir, ["-C", join(dir, "a.txt"), "status"], "NOT_A_DIRECTORY");
    expect(runCli(["-C", elsewhere, "status"], { cwd: dir }).status).toBe(2);
  }, 300_000);

  it("bad usage exits 2 in text mode as with --json", () => {
    const dir = workspace();
    expectMistake(dir, ["no-such-command"], "INVALID_INPUT");
    expectMistake(dir, ["status", "--no-such-flag"], "INVALID_INPUT");
    expectMistake(dir, ["travel"], "INVALID_INPUT");
    expectMistake(dir, ["history", "--limit", "many"], "INVALID_INPUT");
    expectMistake(dir, ["edit", "whole", "a.txt"], "INVALID_INPUT");
    // a group without its command: a message that says so, not "(outputHelp)"
    const group = runCli(["edit", "--json"], { cwd: dir });
    expect(group.status).toBe(2);
    expect(group.json()).toMatchObject({
      error: {
        code: "INVALID_INPUT",
        message: expect.stringContaining("timewarp edit needs a command"),
      },
    });
    expect(runCli(["edit"], { cwd: dir }).status).toBe(2);
  }, 300_000);

  /** Start the CLI with its stdout a pipe this side closes at once; resolve its exit code. */
  const withClosedStdout = (dir: string, args: string[]) =>
    new Promise<{ status: number | null; stderr: string }>((resolve, reject) => {
      const { command, args: base } = cliCommand();
      const child = spawn(command, [...base, ...args], {
        cwd: dir,
        stdio: ["ignore", "pipe", "pipe"],
        env: { ...process.env, NO_COLOR: "1" },
      });
      child.stdout.destroy(); // the reader is gone before the first byte (`… | head -c 0`)
      let stderr = "";
      child.stderr.on("data", (d: Buffer) => {
        stderr += d.toString("utf8");
      });
      child.once("error", reject);
      child.once("close", (status) => resolve({ status, stderr }));
    });

  it("a closed stdout ends the process quietly with the command's own status", async () => {
    const dir = workspace();
    for (let i = 0; i < 3; i++) {
      writeFileSync(join(dir, "content.txt"), `v${i}\n`.repeat(2000));
      expect(
        runCli(["edit", "whole", "a.txt", "--content-file", "content.txt"], { cwd: dir }).status,
      ).toBe(0);
    }
    const ok = await withClosedStdout(dir, ["history", "--include-diffs", "--json"]);
    expect(ok.stderr).not.toMatch(/EPIPE/);
    expect(ok.stderr).not.toMatch(STACK);
    expect(ok.status).toBe(0);
    const text = await withClosedStdout(dir, ["history", "--include-diffs"]);
    expect(text.stderr).not.toMatch(/EPIPE/);
    expect(text.status).toBe(0);
    // an error's document cannot be written either: the status is still the error's
    const failed = await withClosedStdout(dir, ["history", "show", "nope", "--json"]);
    expect(failed.stderr).not.toMatch(/EPIPE/);
    expect(failed.status).toBe(1);
  }, 300_000);
});

describe("user mistakes over MCP", () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  it("are isError results with their code, never INTERNAL", async () => {
    const tmp = makeTempDir("tw-mcp-errors-");
    cleanups.push(tmp.cleanup);
    mkdirSync(join(tmp.dir, "folder"));
    writeFileSync(join(tmp.dir, "a.txt"), "one\n");
    const { client, close } = await connectMcp(tmp.dir);
    cleanups.push(close);
    const call = async (name: string, args: Record<string, unknown>) => {
      const r = await client.callTool({ name, arguments: args });
      expect(r.isError, `${name} ${JSON.stringify(args).slice(0, 80)}`).toBe(true);
      const error = toolError(r).error ?? { code: "(no error body)", message: "" };
      expect(error.code).not.toBe("INTERNAL");
      expect(error.message).not.toMatch(STACK);
      return error.code;
    };
    expect(await call("ApplyWholeFileEdit", { path: "y".repeat(300), content: "x" })).toBe(
      "NAME_TOO_LONG",
    );
    await call("ApplyWholeFileEdit", { path: "a.txt/b", content: "x" });
    await call("ApplyEditBlock", { path: "missing.txt", searchBlock: "a", replaceBlock: "b" });
    expect(await call("ApplyWholeFileEdit", { path: "a.txt" })).toBe("INVALID_INPUT");
    expect(await call("ReadSnapshotDiff", { snapshotId: "z".repeat(300) })).toBe(
      "OPERATION_NOT_FOUND",
    );
  }, 120_000);
});
