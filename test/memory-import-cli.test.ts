import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { makeTempDir, REPO_ROOT, runCli } from "./helpers/cli.ts";

const CODEX = resolve(
  REPO_ROOT,
  "test/fixtures/memory/import/codex/rollout-2026-11-26T20-42-44-01a21998-a744-7621-8006-a65cb53a56f1.jsonl",
);
const RUN_ID = "01a21998-a744-7621-8006-a65cb53a56f1";

describe("timewarp memory import (CLI)", () => {
  const cleanups: (() => void)[] = [];
  afterEach(() => {
    for (const c of cleanups.splice(0)) c();
  });
  function workspace(): string {
    const tmp = makeTempDir("tw-mem-import-");
    cleanups.push(tmp.cleanup);
    execFileSync("git", ["init", "-q", tmp.dir]);
    return tmp.dir;
  }

  it("imports a Codex rollout into .timewarp/memory/runs/<session id>; a second import refuses RUN_EXISTS; --force replaces", () => {
    const ws = workspace();
    const first = runCli(["memory", "import", CODEX, "--json"], { cwd: ws });
    expect(first.status).toBe(0);
    const runDir = join(ws, ".timewarp/memory/runs", RUN_ID);
    expect(first.json()).toEqual({
      runs: [
        {
          run_dir: runDir,
          run_id: RUN_ID,
          format: "codex",
          steps: 8,
          edits: 3,
          shell: 2,
          errors: 3,
        },
      ],
      warnings: [],
    });
    const source = JSON.parse(readFileSync(join(runDir, "raw/source.json"), "utf8"));
    expect(source).toMatchObject({
      schema_version: 1,
      format: "codex",
      file: CODEX,
      session_id: RUN_ID,
    });
    expect(source.sha256).toMatch(/^[0-9a-f]{64}$/);

    writeFileSync(join(runDir, "events.jsonl"), "kept\n");
    const again = runCli(["memory", "import", CODEX, "--json"], { cwd: ws });
    expect(again.status).toBe(1);
    expect(again.json()).toMatchObject({
      error: { code: "RUN_EXISTS", data: { run_dir: runDir } },
    });
    expect(readFileSync(join(runDir, "events.jsonl"), "utf8")).toBe("kept\n");

    const forced = runCli(["memory", "import", CODEX, "--force", "--json"], { cwd: ws });
    expect(forced.status).toBe(0);
    expect(existsSync(join(runDir, "events.jsonl"))).toBe(false);
    expect(existsSync(join(runDir, "raw/trajectory.jsonl"))).toBe(true);
  });

  it("an unknown file: exactly one JSON document {error: {code: IMPORT_FORMAT_UNKNOWN, message, data}}, exit 2, nothing written", () => {
    const ws = workspace();
    writeFileSync(join(ws, "notes.md"), "# notes\n\nnothing an agent wrote\n");
    const r = runCli(["memory", "import", "notes.md", "--json"], { cwd: ws });
    expect(r.status).toBe(2);
    expect(r.stdout.trim().split("\n")).toHaveLength(1);
    const body = JSON.parse(r.stdout) as { error: Record<string, unknown> };
    expect(Object.keys(body)).toEqual(["error"]);
    expect(body.error).toMatchObject({
      code: "IMPORT_FORMAT_UNKNOWN",
      message: expect.stringContaining("--format"),
      data: { input: join(ws, "notes.md"), formats: expect.arrayContaining(["codex", "lab"]) },
    });
    expect(existsSync(join(ws, ".timewarp/memory/runs"))).toBe(false);

    const named = runCli(["memory", "import", "notes.md", "--format", "nope", "--json"], {
      cwd: ws,
    });
    expect(named.status).toBe(1);
    expect(named.json()).toMatchObject({ error: { code: "IMPORT_FORMAT_UNKNOWN" } });
  });
});
