import {
  chmodSync,
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  writeFileSync,
} from "node:fs";
import { join, relative } from "node:path";
import { expect } from "vitest";
import { parseConfig } from "../src/core/index.ts";
import {
  AckSchema,
  DebugIndexSchema,
  exampleDesignDir,
  ManifestSchema,
  processGroupAlive,
  RequestSchema,
  type SessionTimings,
  type SkillPilotSettings,
  SummarySchema,
  TimelineEventSchema,
} from "../src/runs/index.ts";

/** Small timings so the suite is fast; each test may override. */
export const FAST: SessionTimings = {
  readyTimeoutMs: 5_000,
  // judged during requests too (thread or sidecar beat): a margin for a loaded machine
  heartbeatStaleMs: 1_000,
  requestTimeoutMs: 5_000,
  pollMs: 5,
  heartbeatIntervalMs: 40,
  ackPollMs: 20,
  watchAcks: true,
};

export function settings(overrides: Partial<SkillPilotSettings> = {}): SkillPilotSettings {
  return { ...parseConfig({}, "test").skillpilot, ...overrides };
}

/** A CWD holding a copy of the example design (AAA.enc + AAA.enc.dat/). */
export function copyDesign(cwd: string, sub = "."): void {
  const into = join(cwd, sub);
  mkdirSync(into, { recursive: true });
  cpSync(exampleDesignDir(), into, { recursive: true });
}

/**
 * `.timewarp/config.json` with fast SkillPilot timings, for tests that run jobs through the CLI
 * or the MCP server (which read their settings from the workspace config).
 */
export function writeFastSkillConfig(cwd: string, overrides: Record<string, unknown> = {}): void {
  mkdirSync(join(cwd, ".timewarp"), { recursive: true });
  writeFileSync(
    join(cwd, ".timewarp", "config.json"),
    JSON.stringify({
      skillpilot: {
        poll_ms: 5,
        heartbeat_interval_ms: 40,
        heartbeat_stale_ms: 2000,
        request_timeout_ms: 10_000,
        ...overrides,
      },
    }),
  );
}

/** A workspace subskill under `<cwd>/subskills/<name>/`. */
export function writeSkill(
  cwd: string,
  name: string,
  options: { script: string; outputs?: { path: string; non_empty?: boolean }[]; contract?: string },
): string {
  const dir = join(cwd, "subskills", name);
  mkdirSync(join(dir, "templates"), { recursive: true });
  writeFileSync(join(dir, "templates", "run.tcl"), options.script);
  const outputs = options.outputs ?? [{ path: "reports/out.rpt" }];
  const contract =
    options.contract ??
    [
      'schema_version: "1.0"',
      `name: ${name}`,
      "version: 0.0.1",
      "tool: innovus",
      "scripts:",
      "  - name: run",
      "    entry: templates/run.tcl",
      "outputs:",
      "  required:",
      ...outputs.flatMap((o) => [
        `    - path: ${o.path}`,
        `      non_empty: ${o.non_empty ?? true}`,
      ]),
      "debug_hints:",
      "  - first hint",
      "  - second hint",
      "",
    ].join("\n");
  writeFileSync(join(dir, "contract.yaml"), contract);
  return dir;
}

/** A fake `innovus` on PATH that execs tclsh on the -init/-files script and logs into its cwd. */
export function writeFakeInnovus(binDir: string): string {
  mkdirSync(binDir, { recursive: true });
  const path = join(binDir, "innovus");
  writeFileSync(
    path,
    [
      "#!/bin/sh",
      'echo "fake innovus $*" > innovus.log',
      'boot=""',
      'gui=""',
      'while [ $# -gt 0 ]; do case "$1" in -init|-files) shift; boot="$1";; -no_gui) gui=no;; esac; shift; done',
      '[ "$gui" = no ] || { echo "expected -no_gui" >&2; exit 2; }',
      'exec tclsh "$boot"',
      "",
    ].join("\n"),
  );
  chmodSync(path, 0o755);
  return path;
}

/** Every file under `dir` (path → size:mtime), skipping `skip` (absolute paths). */
export function listTree(dir: string, skip: string[] = []): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const full = join(d, name);
      if (skip.some((s) => full === s || full.startsWith(`${s}/`))) continue;
      const st = lstatSync(full);
      if (st.isDirectory()) walk(full);
      else out.set(relative(dir, full), `${st.size}:${st.mtimeMs}`);
    }
  };
  walk(dir);
  return out;
}

function readJson(path: string): unknown {
  return JSON.parse(readFileSync(path, "utf8"));
}

/** The ids of every request that reached queue/ (whatever its claim suffix). */
export function requestIds(runDir: string): string[] {
  const ids = new Set<string>();
  for (const name of readdirSync(join(runDir, "queue"))) {
    const m = /^([^.][^/]*?)\.json(\..*)?$/.exec(name);
    if (m?.[1]) ids.add(m[1]);
  }
  return [...ids].sort();
}

/**
 * The invariants every job keeps: exactly one ack per request, the same error_type in manifest,
 * summary and timeline, schema_version everywhere, a debug bundle on FAIL, no temp file left,
 * and the session's process group gone.
 */
export function assertJobInvariants(runDir: string): {
  manifest: ReturnType<typeof ManifestSchema.parse>;
  summary: ReturnType<typeof SummarySchema.parse>;
} {
  const manifest = ManifestSchema.parse(readJson(join(runDir, "job_manifest.json")));
  const summary = SummarySchema.parse(readJson(join(runDir, "summary.json")));
  expect(manifest.status).not.toBe("RUNNING");
  expect(manifest.schema_version).toBe("1.0");
  expect(summary.schema_version).toBe("1.0");
  expect(manifest.error_type).toBe(summary.error_type);
  expect(manifest.status).toBe(summary.status);
  const events = readFileSync(join(runDir, "job_timeline.jsonl"), "utf8")
    .trim()
    .split("\n")
    .map((l) => TimelineEventSchema.parse(JSON.parse(l)));
  const terminal = events.filter((e) => e.event === "DONE" || e.event === "FAIL");
  expect(terminal).toHaveLength(1);
  expect(events.at(-1)?.event).toBe(terminal[0]?.event);
  expect(terminal[0]?.data?.error_type).toBe(manifest.error_type);
  if (manifest.status === "FAIL") expect(terminal[0]?.level).toBe("ERROR");
  for (const kind of ["STATE_ENTER", "STATE_EXIT", "ACTION"]) {
    expect(events.some((e) => e.event === kind)).toBe(true);
  }
  const entered = events.filter((e) => e.event === "STATE_ENTER").map((e) => e.state);
  const exited = events.filter((e) => e.event === "STATE_EXIT").map((e) => e.state);
  expect(exited.sort()).toEqual(entered.sort());
  // exactly one ack per request, never a second one, no temp files left behind
  const ids = requestIds(runDir);
  const acks = readdirSync(join(runDir, "ack"));
  expect(acks.filter((n) => n.startsWith("."))).toEqual([]);
  expect(readdirSync(join(runDir, "queue")).filter((n) => n.startsWith("."))).toEqual([]);
  expect(acks.map((n) => n.replace(/\.json$/, "")).sort()).toEqual(ids);
  for (const name of acks) {
    const ack = AckSchema.parse(readJson(join(runDir, "ack", name)));
    expect(ack.schema_version).toBe("1.0");
    expect(ack.job_id).toBe(manifest.job_id);
    // §5.2.2: a FAIL carries a short, actionable message
    if (ack.status === "FAIL") expect(ack.message.length).toBeGreaterThan(0);
    else expect(ack.error_type).toBe("OK");
  }
  for (const name of readdirSync(join(runDir, "queue"))) {
    // §5.1: every request the runtime wrote has all the MUST fields and a readable id
    const req = RequestSchema.parse(readJson(join(runDir, "queue", name)));
    expect(req.schema_version).toBe("1.0");
    expect(req.request_id).toMatch(new RegExp(`^${manifest.job_id}_\\d{4}_[a-z_]+$`));
  }
  if (manifest.status === "FAIL") {
    const index = DebugIndexSchema.parse(readJson(join(runDir, "debug_bundle", "index.json")));
    expect(index.error_type).toBe(manifest.error_type);
    for (const f of ["job_manifest.json", "job_timeline.jsonl", "reports_inventory.json", "ack"]) {
      expect(existsSync(join(runDir, "debug_bundle", f))).toBe(true);
    }
    expect(summary.evidence.debug_bundle_dir).toBeDefined();
  }
  const pgid = manifest.runtime.session?.pgid;
  if (pgid !== undefined) expect(processGroupAlive(pgid)).toBe(false);
  return { manifest, summary };
}
