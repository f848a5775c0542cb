import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { auditEvent, createAuditTrail, readAuditFrom, requestPolicyFor } from "./audit.ts";
import { heartbeatThresholdMs } from "./heartbeat.ts";
import type { TimelineInput } from "./run-dir.ts";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const record = (o: Record<string, unknown>) =>
  JSON.stringify({
    schema_version: "1.0",
    ts: "t",
    request_id: "r1",
    script: "scripts/a.tcl",
    decision: "allowed",
    ...o,
  });

describe("audit trail", () => {
  it("copies whole lines once, leaves a line being written for later, counts junk", () => {
    const dir = mkdtempSync(join(tmpdir(), "tw-audit-"));
    dirs.push(dir);
    const path = join(dir, "audit.jsonl");
    const events: TimelineInput[] = [];
    const trail = createAuditTrail({ path, append: (e) => events.push(e) });
    expect(trail.collect()).toBe(0); // no file yet
    writeFileSync(
      path,
      `${record({ command: "source", resolved: "/x/a.tcl", where: "run_dir" })}\n{"half":`,
    );
    expect(trail.collect()).toBe(1);
    appendFileSync(path, ` 1}\n${record({ command: "exec", argv: ["sh"] })}\n`);
    expect(trail.collect()).toBe(1);
    expect(trail.collect()).toBe(0);
    expect(events.map((e) => [e.level, e.data?.command ?? "more"])).toEqual([
      ["INFO", "source"],
      ["WARN", "exec"],
      ["WARN", "more"],
    ]);
    expect(readAuditFrom(path, 0).unreadable).toBe(1);
  });

  it("is WARN for an outside source, any exec or pipeline, and a refusal", () => {
    const parse = (o: Record<string, unknown>) => JSON.parse(record(o));
    expect(auditEvent(parse({ command: "source", where: "design" })).level).toBe("INFO");
    expect(auditEvent(parse({ command: "source", where: "tcl_library" })).level).toBe("INFO");
    expect(auditEvent(parse({ command: "source", where: "outside" })).level).toBe("WARN");
    expect(auditEvent(parse({ command: "open", argv: ["ls"] })).level).toBe("WARN");
    const refused = auditEvent(
      parse({ command: "source", where: "run_dir", decision: "refused", reason: "no" }),
    );
    expect(refused.level).toBe("WARN");
    expect(refused.message).toContain("refused: no");
  });
});

describe("requestPolicyFor", () => {
  it("sends the design's directory always, and the contract's refusals only to its scripts", () => {
    const contractPolicy = { confine_paths: true, allow_exec: ["ls"] };
    expect(requestPolicyFor({ contractPolicy, encPath: "/d/AAA.enc", isRestore: false })).toEqual({
      confine_paths: true,
      allow_exec: ["ls"],
      allowed_dirs: ["/d"],
    });
    expect(requestPolicyFor({ contractPolicy, encPath: "/d/AAA.enc", isRestore: true })).toEqual({
      confine_paths: false,
      allowed_dirs: ["/d"],
    });
    expect(requestPolicyFor({ contractPolicy, encPath: "", isRestore: false })).toBeUndefined();
  });
});

describe("heartbeatThresholdMs", () => {
  it("is heartbeat_stale_ms, never less than three intervals", () => {
    expect(heartbeatThresholdMs({ heartbeatStaleMs: 30_000, heartbeatIntervalMs: 1_000 })).toBe(
      30_000,
    );
    expect(heartbeatThresholdMs({ heartbeatStaleMs: 100, heartbeatIntervalMs: 1_000 })).toBe(3_000);
  });
});
