import { spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ManifestSchema, processGroupAlive, runsRootFor } from "../src/runs/index.ts";
import { cliCommand, makeTempDir, REPO_ROOT, runCli } from "./helpers/cli.ts";
import { connectMcp, toolError } from "./helpers/mcp.ts";
import {
  assertJobInvariants,
  copyDesign,
  writeFastSkillConfig,
  writeSkill,
} from "./runs-helpers.ts";

let tmp: { dir: string; cleanup: () => void };
let cwd: string;
beforeAll(() => {
  tmp = makeTempDir("tw-runs-cli-");
  cwd = join(tmp.dir, "design");
  copyDesign(cwd);
  writeFastSkillConfig(cwd);
});
afterAll(() => tmp.cleanup());

describe("timewarp skill …", () => {
  it("run --json prints the summary; a FAIL exits 1 with the summary plus an error object", async () => {
    const pass = runCli(["skill", "run", "summary_health", "--design", "AAA", "--json"], { cwd });
    expect(pass.status).toBe(0);
    const ok = pass.json() as {
      status: string;
      error_type: string;
      job_id: string;
      error?: unknown;
    };
    expect(ok).toMatchObject({ status: "PASS", error_type: "OK" });
    expect(ok.error).toBeUndefined();
    assertJobInvariants(join(runsRootFor(cwd), ok.job_id));

    const fail = runCli(["skill", "run", "missing_report", "--design", "./AAA.enc", "--json"], {
      cwd,
    });
    expect(fail.status).toBe(1);
    expect(fail.json()).toMatchObject({
      status: "FAIL",
      error_type: "OUTPUT_MISSING",
      error: { code: "JOB_FAILED", data: { error_type: "OUTPUT_MISSING" } },
    });

    const human = runCli(["skill", "run", "missing_report", "--design", "AAA"], { cwd });
    expect(human.status).toBe(1);
    expect(human.stdout).toContain("FAIL OUTPUT_MISSING");
    expect(human.stdout).toContain("debug_bundle:");
  });

  it("check, list, runs and show, with stable error codes for bad input", () => {
    const valid = runCli(
      [
        "skill",
        "check",
        join(REPO_ROOT, "examples", "skills", "subskills", "summary_health"),
        "--json",
      ],
      { cwd },
    );
    expect(valid.status).toBe(0);
    expect(valid.json()).toMatchObject({ ok: true, name: "summary_health", version: "1.0.0" });
    const dir = writeSkill(cwd, "leaky", {
      script: "set x 1\n",
      outputs: [{ path: "/etc/passwd" }],
    });
    const invalid = runCli(["skill", "check", dir, "--json"], { cwd });
    expect(invalid.status).toBe(1);
    expect(invalid.json()).toMatchObject({
      error: { code: "CONTRACT_INVALID", data: { field: "outputs.required.0.path" } },
    });

    const list = runCli(["skill", "list", "--json"], { cwd }).json() as {
      skills: { name: string; valid: boolean }[];
    };
    expect(list.skills.map((s) => s.name)).toEqual(
      expect.arrayContaining(["summary_health", "missing_report", "leaky"]),
    );
    expect(list.skills.find((s) => s.name === "leaky")?.valid).toBe(false);

    const runs = runCli(["skill", "runs", "--json"], { cwd }).json() as {
      jobs: { job_id: string; status: string }[];
    };
    expect(runs.jobs.length).toBeGreaterThanOrEqual(3);
    const first = runs.jobs[0]?.job_id ?? "";
    const show = runCli(["skill", "show", first, "--json"], { cwd });
    expect(show.status).toBe(0);
    expect(show.json()).toMatchObject({
      job_id: first,
      manifest: { job_id: first },
      summary: { job_id: first },
    });
    const badSelect = runCli(
      ["skill", "run", "summary_health", "--design", "AAA", "--select", "zero", "--json"],
      { cwd },
    );
    expect(badSelect.status).toBe(2);
    expect(badSelect.json()).toMatchObject({ error: { code: "INVALID_INPUT" } });
  });

  it("SIGTERM during a run ends the job FAIL (never RUNNING) and leaves no process behind", async () => {
    writeSkill(cwd, "hang", { script: "while 1 {}\n" });
    const { command, args } = cliCommand();
    const before = new Set(existsSync(runsRootFor(cwd)) ? readdirSync(runsRootFor(cwd)) : []);
    const child = spawn(command, [...args, "skill", "run", "hang", "--design", "AAA", "--json"], {
      cwd,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    child.stdout.on("data", (d) => {
      stdout += d;
    });
    const exited = new Promise<number | null>((r) => child.on("exit", (code) => r(code)));
    let jobId: string | undefined;
    for (let i = 0; i < 400 && !jobId; i++) {
      await new Promise((r) => setTimeout(r, 25));
      for (const id of readdirSync(runsRootFor(cwd))) {
        if (before.has(id)) continue;
        const ack = join(runsRootFor(cwd), id, "ack");
        if (existsSync(ack) && readdirSync(ack).some((n) => n.endsWith("_restore.json")))
          jobId = id;
      }
    }
    expect(jobId).toBeDefined();
    // tsx relays the signal to the node process that runs the CLI
    child.kill("SIGTERM");
    expect(await exited).toBe(1);
    const runDir = join(runsRootFor(cwd), jobId ?? "");
    const { manifest } = assertJobInvariants(runDir);
    expect(manifest).toMatchObject({
      status: "FAIL",
      error_type: "INTERNAL_ERROR",
      detail_code: "INTERRUPTED",
    });
    expect(processGroupAlive(manifest.runtime.session?.pgid ?? 0)).toBe(false);
    expect(JSON.parse(stdout)).toMatchObject({ status: "FAIL", error: { code: "JOB_FAILED" } });
  });

  it("MCP: skill_run returns the summary; skill_list and skill_show answer", async () => {
    const { client, close } = await connectMcp(cwd);
    try {
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name)).toEqual(
        expect.arrayContaining(["skill_run", "skill_list", "skill_show"]),
      );
      // a second design makes the name ambiguous: the FAIL hands over the candidates, select picks one
      copyDesign(cwd, "old");
      const ambiguous = await client.callTool({
        name: "skill_run",
        arguments: { skill: "summary_health", design: "AAA" },
      });
      expect(ambiguous.structuredContent).toMatchObject({
        status: "FAIL",
        error_type: "LOCATOR_FAIL",
        candidates: [{ path: join(cwd, "AAA.enc") }, { path: join(cwd, "old", "AAA.enc") }],
      });
      const run = await client.callTool({
        name: "skill_run",
        arguments: { skill: "summary_health", design: "AAA", select: 1 },
      });
      expect(run.isError).toBeFalsy();
      const summary = run.structuredContent as {
        status: string;
        job_id: string;
        metrics: Record<string, unknown>;
      };
      expect(summary).toMatchObject({ status: "PASS", error_type: "OK", metrics: { cells: 1842 } });
      const manifest = ManifestSchema.parse(
        JSON.parse(
          readFileSync(join(runsRootFor(cwd), summary.job_id, "job_manifest.json"), "utf8"),
        ),
      );
      expect(manifest.status).toBe("PASS");
      const failed = await client.callTool({
        name: "skill_run",
        arguments: { skill: "missing_report", design: "./AAA.enc" },
      });
      expect(failed.structuredContent).toMatchObject({
        status: "FAIL",
        error_type: "OUTPUT_MISSING",
      });
      const shown = await client.callTool({
        name: "skill_show",
        arguments: { job_id: summary.job_id },
      });
      expect(shown.structuredContent).toMatchObject({
        job_id: summary.job_id,
        summary: { status: "PASS" },
      });
      const missing = await client.callTool({ name: "skill_show", arguments: { job_id: "nope" } });
      expect(toolError(missing)).toMatchObject({ error: { code: "JOB_NOT_FOUND" } });
    } finally {
      await close();
    }
  });
});
