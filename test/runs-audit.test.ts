import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { runSkill, TimelineEventSchema } from "../src/runs/index.ts";
import { makeTempDir } from "./helpers/cli.ts";
import { assertJobInvariants, copyDesign, FAST, settings, writeSkill } from "./runs-helpers.ts";

/**
 * The audit (issue 20): every `source`, `exec` and `open "|…"` a script performs lands in
 * session/audit.jsonl (Tcl side) and in the timeline as an AUDIT event (runner side); the
 * contract's optional `policy` refuses a source outside the run dir and the design's directory,
 * and programs not allowed, failing the request CMD_FAIL / POLICY_REFUSED.
 */

let tmp: { dir: string; cleanup: () => void };
let cwd: string;
let outside: string;
beforeEach(() => {
  tmp = makeTempDir("tw-runs-audit-");
  cwd = join(tmp.dir, "design");
  copyDesign(cwd);
  outside = join(tmp.dir, "outside");
  mkdirSync(outside);
  // a helper outside the run dir whose side effect shows whether it was sourced
  writeFileSync(
    join(outside, "helper.tcl"),
    `set f [open ${JSON.stringify(join(outside, "SOURCED"))} w]; puts $f yes; close $f\n`,
  );
});
afterEach(() => tmp.cleanup());

const POLICY = ["policy:", "  confine_paths: true", "  allow_exec: [ls]"];

function skill(name: string, script: string, policy: string[] = []): void {
  const dir = writeSkill(cwd, name, { script });
  const contract = readFileSync(join(dir, "contract.yaml"), "utf8");
  writeFileSync(join(dir, "contract.yaml"), [contract.trimEnd(), ...policy, ""].join("\n"));
}

async function run(name: string) {
  const result = await runSkill({
    cwd,
    skill: name,
    design: "AAA",
    settings: settings(),
    timings: FAST,
  });
  const { manifest, summary } = assertJobInvariants(result.runDir);
  const audits = readFileSync(join(result.runDir, "job_timeline.jsonl"), "utf8")
    .trim()
    .split("\n")
    .map((l) => TimelineEventSchema.parse(JSON.parse(l)))
    .filter((e) => e.event === "AUDIT");
  return { manifest, summary, audits, runDir: result.runDir };
}

const tclString = (s: string) => JSON.stringify(s);

describe("the audit of source, exec and open |", () => {
  it("records a source outside the run dir, an exec of sh and a pipeline, WARN, in the timeline", async () => {
    skill(
      "wanders",
      [
        `source ${tclString(join(outside, "helper.tcl"))}`,
        'set said [exec sh -c "echo from-sh"]',
        'set p [open "|sh -c {echo piped}" r]; set piped [read $p]; close $p',
        "set f [open reports/out.rpt w]; puts $f $said; puts $f $piped; close $f",
        "",
      ].join("\n"),
    );
    const { summary, audits, runDir } = await run("wanders");
    expect(summary.status).toBe("PASS");
    expect(existsSync(join(outside, "SOURCED"))).toBe(true);
    const source = audits.find((e) => e.data?.command === "source" && e.data?.where === "outside");
    expect(source).toMatchObject({
      level: "WARN",
      data: { resolved: join(outside, "helper.tcl"), decision: "allowed" },
    });
    expect(source?.data?.request_id).toMatch(/_run$/);
    const exec = audits.find((e) => e.data?.command === "exec");
    expect(exec).toMatchObject({
      level: "WARN",
      data: { argv: ["sh", "-c", "echo from-sh"], decision: "allowed" },
    });
    expect(String((exec?.data?.programs as string[] | undefined)?.[0])).toMatch(/\/sh$/);
    expect(audits.find((e) => e.data?.command === "open")).toMatchObject({
      level: "WARN",
      data: { argv: ["sh", "-c", "echo piped"] },
    });
    // §6.2: the restore wrapper's source of the design's .enc is allowed and marked as the exception
    expect(
      audits.find((e) => e.data?.command === "source" && e.data?.exception !== undefined),
    ).toMatchObject({
      level: "INFO",
      data: {
        script: "scripts/restore_wrapper.tcl",
        resolved: join(cwd, "AAA.enc"),
        where: "design",
        decision: "allowed",
      },
    });
    // the processor's own source of each request's script is not the script's doing
    expect(audits.filter((e) => String(e.data?.resolved).includes("/scripts/"))).toEqual([]);
    // the durable record is the Tcl side's, one JSON line per command
    const lines = readFileSync(join(runDir, "session", "audit.jsonl"), "utf8")
      .trim()
      .split("\n");
    expect(lines).toHaveLength(audits.length);
  });
});

describe("the contract's policy", () => {
  it("lets Tcl's own library and the allowed programs through", async () => {
    skill(
      "tidy",
      [
        "package require http",
        "set listing [exec ls]",
        "set f [open reports/out.rpt w]; puts $f $listing; close $f",
        "",
      ].join("\n"),
      POLICY,
    );
    const { summary, audits } = await run("tidy");
    expect(summary.status).toBe("PASS");
    expect(audits.some((e) => e.data?.where === "tcl_library")).toBe(true);
    expect(audits.find((e) => e.data?.command === "exec")).toMatchObject({
      data: { argv: ["ls"], decision: "allowed" },
    });
  });

  it("refuses a source outside and an exec not allowed: CMD_FAIL / POLICY_REFUSED, no side effect", async () => {
    const mark = join(outside, "SH_RAN");
    skill(
      "confined",
      [
        // caught by the script: the request fails all the same
        `catch {exec sh -c "echo x > ${mark}"}`,
        `source ${tclString(join(outside, "helper.tcl"))}`,
        "set f [open reports/out.rpt w]; puts $f done; close $f",
        "",
      ].join("\n"),
      POLICY,
    );
    const { summary, manifest, audits } = await run("confined");
    expect(summary).toMatchObject({
      status: "FAIL",
      error_type: "CMD_FAIL",
      detail_code: "POLICY_REFUSED",
    });
    expect(manifest.detail_code).toBe("POLICY_REFUSED");
    expect(summary.message).toContain("policy refused");
    expect(summary.message).toContain("'sh'");
    expect(existsSync(mark)).toBe(false);
    expect(existsSync(join(outside, "SOURCED"))).toBe(false);
    const refused = audits.filter((e) => e.data?.decision === "refused");
    expect(refused.map((e) => e.data?.command)).toEqual(["exec", "source"]);
    for (const e of refused) expect(e.level).toBe("WARN");
  });

  it("is a contract field validated by zod", async () => {
    skill("bad_policy", "set x 1\n", ["policy:", "  allow_exec: ls"]);
    const { summary } = await run("bad_policy");
    expect(summary).toMatchObject({ status: "FAIL", error_type: "CONTRACT_INVALID" });
    expect(summary.message).toContain("policy.allow_exec");
  });
});
