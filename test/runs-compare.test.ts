import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CompareResult, compareJobs, runSkill } from "../src/runs/index.ts";
import { makeTempDir, runCli } from "./helpers/cli.ts";
import { assertJobInvariants, copyDesign, FAST, settings, writeSkill } from "./runs-helpers.ts";

/**
 * Two real jobs of one subskill on the example design (tclsh), whose metrics.json differ by an
 * environment variable the tool reads; a third job of another skill.
 */
let tmp: { dir: string; cleanup: () => void };
let cwd: string;
const ids: { low: string; high: string; other: string } = { low: "", high: "", other: "" };

const SCRIPT = [
  "set knob $::env(TW_KNOB)",
  'set f [open reports/out.rpt w]; puts $f "knob $knob"; close $f',
  'set extra [expr {$knob > 0 ? {, "hold_ns": 0.01} : {}}]',
  "set f [open reports/metrics.json w]",
  'puts $f "{\\"wns_ns\\": $knob, \\"cells\\": 1842, \\"timing\\": {\\"tns_ns\\": [expr {$knob * 10}]}, \\"corner\\": \\"$::env(TW_CORNER)\\"$extra}"',
  "close $f",
  "",
].join("\n");

async function job(skill: string, env: NodeJS.ProcessEnv): Promise<string> {
  const r = await runSkill({ cwd, skill, design: "AAA", settings: settings(), timings: FAST, env });
  assertJobInvariants(r.runDir);
  return r.summary.job_id;
}

beforeAll(async () => {
  tmp = makeTempDir("tw-runs-compare-");
  cwd = join(tmp.dir, "design");
  copyDesign(cwd);
  writeSkill(cwd, "knobbed", { script: SCRIPT });
  ids.low = await job("knobbed", { TW_KNOB: "-0.05", TW_CORNER: "ss" });
  ids.high = await job("knobbed", { TW_KNOB: "0.02", TW_CORNER: "ff" });
  ids.other = await job("summary_health", {});
}, 60_000);
afterAll(() => tmp.cleanup());

describe("compareJobs on two real jobs of one skill", () => {
  it("gives both values, delta and relative change per metric, added and each job's status", async () => {
    const r = await compareJobs({ cwd, jobA: ids.low, jobB: ids.high });
    expect(r.skill).toBe("knobbed");
    expect(r.forced).toBe(false);
    expect(r.jobs.map((j) => [j.job_id, j.status, j.error_type])).toEqual([
      [ids.low, "PASS", "OK"],
      [ids.high, "PASS", "OK"],
    ]);
    const by = new Map(r.metrics.map((m) => [m.key, m]));
    expect(by.get("wns_ns")).toEqual({
      key: "wns_ns",
      a: -0.05,
      b: 0.02,
      change: "changed",
      delta: 0.07,
      relative: 1.4,
    });
    expect(by.get("timing.tns_ns")).toMatchObject({
      a: -0.5,
      b: 0.2,
      delta: 0.7,
      change: "changed",
    });
    expect(by.get("cells")).toMatchObject({ a: 1842, b: 1842, change: "same", delta: 0 });
    expect(by.get("corner")).toEqual({ key: "corner", a: "ss", b: "ff", change: "changed" });
    expect(by.get("hold_ns")).toEqual({ key: "hold_ns", a: null, b: 0.01, change: "added" });
    expect(r.counts).toEqual({ same: 1, changed: 3, added: 1, removed: 0 });
    // the other way round: removed, and the deltas change sign
    const back = await compareJobs({ cwd, jobA: ids.high, jobB: ids.low });
    expect(back.metrics.find((m) => m.key === "hold_ns")?.change).toBe("removed");
    expect(back.metrics.find((m) => m.key === "wns_ns")?.delta).toBe(-0.07);
  });

  it("refuses jobs of two skills (SKILL_MISMATCH) unless forced; JOB_NOT_FOUND for an unknown id", async () => {
    await expect(compareJobs({ cwd, jobA: ids.low, jobB: ids.other })).rejects.toMatchObject({
      code: "SKILL_MISMATCH",
      data: { skills: ["knobbed", "summary_health"] },
    });
    const forced = await compareJobs({ cwd, jobA: ids.low, jobB: ids.other, force: true });
    expect(forced.forced).toBe(true);
    expect(forced.metrics.find((m) => m.key === "wns_ns")).toMatchObject({ a: -0.05, b: -0.042 });
    await expect(
      compareJobs({ cwd, jobA: ids.low, jobB: "20200101_000000_1_abcd" }),
    ).rejects.toMatchObject({ code: "JOB_NOT_FOUND" });
  });
});

describe("timewarp skill compare", () => {
  it("--json prints the comparison as one document; the text is an aligned table", () => {
    const json = runCli(["skill", "compare", ids.low, ids.high, "--json"], { cwd });
    expect(json.status).toBe(0);
    const doc = json.json() as CompareResult;
    expect(doc.skill).toBe("knobbed");
    expect(doc.metrics.find((m) => m.key === "wns_ns")).toMatchObject({
      delta: 0.07,
      relative: 1.4,
    });

    const text = runCli(["skill", "compare", ids.low, ids.high], { cwd });
    expect(text.status).toBe(0);
    const lines = text.stdout.split("\n");
    expect(lines[0]).toBe("skill knobbed");
    expect(lines[1]).toContain(`JOB1  ${ids.low}  PASS  OK`);
    const header = lines.find((l) => l.startsWith("metric"));
    const wns = lines.find((l) => l.startsWith("wns_ns"));
    expect(header).toBeDefined();
    expect(wns).toMatch(/^wns_ns\s+-0\.05\s+0\.02\s+\+0\.07\s+\+140\.0%$/);
    // aligned: the JOB2 column starts at the same place in the header and in every row
    const col = header?.indexOf("JOB2") ?? -1;
    expect(wns?.slice(col).startsWith("0.02")).toBe(true);
    expect(lines.find((l) => l.startsWith("hold_ns"))).toMatch(/^hold_ns\s+-\s+0\.01\s+added$/);
  });

  it("SKILL_MISMATCH and JOB_NOT_FOUND exit 1 with the error document", () => {
    const mismatch = runCli(["skill", "compare", ids.low, ids.other, "--json"], { cwd });
    expect(mismatch.status).toBe(1);
    expect(mismatch.json()).toMatchObject({ error: { code: "SKILL_MISMATCH" } });
    const forced = runCli(["skill", "compare", ids.low, ids.other, "--force", "--json"], { cwd });
    expect(forced.status).toBe(0);
    expect(forced.json()).toMatchObject({ forced: true });
    const unknown = runCli(["skill", "compare", ids.low, "nope"], { cwd });
    expect(unknown.status).toBe(1);
    expect(unknown.stderr).toContain("JOB_NOT_FOUND");
  });
});
