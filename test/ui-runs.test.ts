import { readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { flattenMetrics, listJobs, runSkill, showJob } from "../src/runs/index.ts";
import { startUiServer, type UiServer } from "../src/ui/index.ts";
import { makeTempDir, runCli } from "./helpers/cli.ts";
import { uiGet } from "./helpers/ui-call.ts";
import { copyDesign, FAST, settings, writeSkill } from "./runs-helpers.ts";

const OUTSIDE = "outside the run directory: never served";

// One real tclsh job that writes a report, metrics.json and a report that is a symlink to a
// file outside the workspace's data folders; then a job of the same skill whose contract fails
// its check (no session: cheap), which leaves a debug bundle.
const SCRIPT = [
  'set f [open reports/out.rpt w]; puts $f "wns -0.05"; close $f',
  "set f [open reports/metrics.json w]",
  'puts $f {{"wns_ns": -0.05, "cells": 1842, "timing": {"tns_ns": -0.5}, "corner": "ss"}}',
  "close $f",
  "file link -symbolic reports/leak.txt $::env(TW_OUTSIDE)",
  "",
].join("\n");

let tmp: { dir: string; cleanup: () => void };
let root: string;
let server: UiServer;
let pass: string;
let fail: string;
/** `skill show PASS --json`, run before the server starts (a sync child would stall it). */
let shown: { summary: { metrics: Record<string, unknown> }; manifest: unknown };

/** A GET of the API with the server's token. */
const api = (path: string) => uiGet(server, path);

beforeAll(async () => {
  tmp = makeTempDir("tw-ui-runs-");
  root = join(tmp.dir, "ws");
  copyDesign(root);
  const outside = join(tmp.dir, "outside.txt");
  writeFileSync(outside, `${OUTSIDE}\n`);
  writeSkill(root, "knobbed", { script: SCRIPT });
  const env = { ...process.env, TW_OUTSIDE: outside };
  const opts = { cwd: root, skill: "knobbed", design: "AAA", settings: settings(), timings: FAST };
  pass = (await runSkill({ ...opts, env })).summary.job_id;
  writeSkill(root, "knobbed", { script: SCRIPT, outputs: [{ path: "reports/../../x" }] });
  fail = (await runSkill({ ...opts, env })).summary.job_id;
  const cli = runCli(["--json", "skill", "show", pass], { cwd: root });
  expect(cli.status).toBe(0);
  shown = cli.json() as typeof shown;
  server = await startUiServer({ root, token: "r".repeat(32) });
}, 60_000);

afterAll(async () => {
  await server?.close();
  tmp?.cleanup();
});

describe("the runs API over real jobs", () => {
  it("lists the jobs of `skill runs`, newest first, with duration and failure", async () => {
    const doc = (await api("/api/runs")).json();
    const jobs = await listJobs({ cwd: root });
    const newest = [...jobs].sort((a, b) => (b.created_at ?? "").localeCompare(a.created_at ?? ""));
    expect(doc.items).toEqual(newest);
    expect(doc.total).toBe(2);
    expect(doc.items[0]).toMatchObject({
      job_id: fail,
      status: "FAIL",
      error_type: "CONTRACT_INVALID",
    });
    expect(doc.items[1]).toMatchObject({ job_id: pass, status: "PASS", error_type: "OK" });
    expect(doc.items[1].finished_at).not.toBeNull();
    const page = (await api("/api/runs?limit=1")).json();
    expect(page.items.map((j: { job_id: string }) => j.job_id)).toEqual([fail]);
    expect((await api(`/api/runs?limit=1&cursor=${page.next}`)).json().items[0].job_id).toBe(pass);
  });

  it("shows the job as `skill show --json` does, with its metrics, states and paired acks", async () => {
    const doc = (await api(`/api/runs/${pass}`)).json();
    expect(doc.summary.metrics).toEqual(shown.summary.metrics);
    expect(doc.summary.metrics).toMatchObject({ wns_ns: -0.05, cells: 1842 });
    expect(doc.manifest).toEqual(shown.manifest);
    const states = doc.files.states.map((s: { state: string }) => s.state);
    expect(states).toEqual([
      "INIT",
      "LOAD_CONTRACT",
      "LOCATE_DB",
      "START_SESSION",
      "RESTORE",
      "RUN_SCRIPTS",
      "VALIDATE_OUTPUTS",
      "SUMMARIZE",
    ]);
    expect(doc.files.states.every((s: { exited_at: string | null }) => s.exited_at !== null)).toBe(
      true,
    );
    expect(doc.files.requests.length).toBeGreaterThanOrEqual(2);
    for (const r of doc.files.requests) {
      expect(r.request.request_id).toBe(r.request_id);
      expect(r.ack).toMatchObject({ request_id: r.request_id, status: "PASS" });
      expect(r.queue_state).toBe("done");
    }
    const reports = doc.files.reports.map((f: { path: string; symlink: boolean }) => [
      f.path,
      f.symlink,
    ]);
    expect(reports).toEqual([
      ["reports/leak.txt", true],
      ["reports/metrics.json", false],
      ["reports/out.rpt", false],
    ]);
    expect(doc.files.debug_bundle).toBeNull();
  });

  it("charts the metrics of every job of the skill: the flattened metrics of each summary", async () => {
    const series = (await api(`/api/runs/${pass}/metrics`)).json();
    const job = await showJob({ cwd: root, jobId: pass });
    expect(series.skill).toBe("knobbed");
    expect(series.jobs.map((j: { job_id: string }) => j.job_id)).toEqual([pass, fail]);
    expect(series.jobs[0].metrics).toEqual(
      Object.fromEntries(flattenMetrics(job.summary?.metrics ?? {})),
    );
    expect(series.jobs[1].metrics).toEqual({});
    expect(series.shared).toEqual(["cells", "timing.tns_ns", "wns_ns"]);
  });

  it("gives a failed job's taxonomy and its debug bundle", async () => {
    const doc = (await api(`/api/runs/${fail}`)).json();
    expect(doc.manifest.error_type).toBe("CONTRACT_INVALID");
    expect(doc.files.debug_bundle.index).toMatchObject({
      job_id: fail,
      error_type: "CONTRACT_INVALID",
    });
    const names = doc.files.debug_bundle.files.map((f: { path: string }) => f.path);
    expect(names).toContain("debug_bundle/index.json");
    const index = await api(`/api/runs/${fail}/file?path=debug_bundle/index.json&download=1`);
    expect(index.status).toBe(200);
    expect(JSON.parse(index.body).job_id).toBe(fail);
  });

  it("sends a run's files through dataFile: text inline, never a file outside .skillpilot/", async () => {
    const res = await fetch(`${server.origin}/api/runs/${pass}/file?path=reports/out.rpt`, {
      headers: { authorization: `Bearer ${server.token}` },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/plain");
    expect(await res.text()).toBe(
      readFileSync(join(root, ".skillpilot", "runs", pass, "reports", "out.rpt"), "utf8"),
    );

    // a report the tool made a symlink to a file outside: refused after the link is followed
    const leak = await api(`/api/runs/${pass}/file?path=reports/leak.txt`);
    expect(leak.status).toBe(403);
    expect(leak.json().error.code).toBe("UNSAFE_PATH");
    expect(leak.body).not.toContain(OUTSIDE);
    // a path that climbs out of the run directory
    const climb = await api(`/api/runs/${pass}/file?path=../../../../outside.txt`);
    expect(climb.status).toBe(403);
    expect(climb.body).not.toContain(OUTSIDE);
    // a link made in the run directory by hand to the workspace's own files
    symlinkSync(
      join(root, "AAA.enc"),
      join(root, ".skillpilot", "runs", pass, "reports", "enc.txt"),
    );
    const enc = await api(`/api/runs/${pass}/file?path=reports/enc.txt`);
    expect(enc.json().error.code).toBe("UNSAFE_PATH");
    const missing = await api(`/api/runs/20200101_000000_1_abcd`);
    expect(missing.status).toBe(404);
    expect(missing.json().error.code).toBe("JOB_NOT_FOUND");
  });

  it("never sends a tool's file as HTML or script", async () => {
    const dir = join(root, ".skillpilot", "runs", pass, "reports");
    writeFileSync(join(dir, "x.html"), "<script>alert(1)</script>");
    const res = await fetch(`${server.origin}/api/runs/${pass}/file?path=reports/x.html`, {
      headers: { authorization: `Bearer ${server.token}` },
    });
    expect(res.headers.get("content-type")).toBe("application/octet-stream");
    expect(res.headers.get("content-disposition")).toMatch(/^attachment/);
  });
});
