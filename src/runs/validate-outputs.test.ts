import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { type Contract, ContractSchema } from "./contract.ts";
import { checkOutputs, inventoryReports, validateOutputs } from "./validate-outputs.ts";

const contract = (required: { path: string; non_empty?: boolean }[]): Contract =>
  ContractSchema.parse({
    schema_version: "1.0",
    name: "t",
    version: "1",
    tool: "innovus",
    scripts: [{ name: "run", entry: "run.tcl" }],
    outputs: { required },
    debug_hints: ["a", "b"],
  });

describe("checkOutputs (§8, pure)", () => {
  const files = [
    { path: "reports/a.rpt", size: 3, mtime: "t" },
    { path: "reports/sub/b.rpt", size: 0, mtime: "t" },
  ];
  it("passes when every glob matches non-empty files", () => {
    expect(
      checkOutputs(contract([{ path: "reports/a.rpt" }, { path: "reports/*.rpt" }]), files).ok,
    ).toBe(true);
  });
  it("is OUTPUT_MISSING when a glob matches nothing, before OUTPUT_EMPTY", () => {
    const r = checkOutputs(
      contract([{ path: "reports/sub/*.rpt" }, { path: "reports/none.rpt" }]),
      files,
    );
    expect(r.failure?.error_type).toBe("OUTPUT_MISSING");
    expect(r.missing).toEqual(["reports/none.rpt"]);
    expect(r.empty).toEqual(["reports/sub/b.rpt"]);
  });
  it("is OUTPUT_EMPTY for an empty match unless non_empty is false", () => {
    expect(checkOutputs(contract([{ path: "reports/**/*.rpt" }]), files).failure?.error_type).toBe(
      "OUTPUT_EMPTY",
    );
    expect(checkOutputs(contract([{ path: "reports/**/*.rpt", non_empty: false }]), files).ok).toBe(
      true,
    );
  });
});

describe("inventoryReports", () => {
  let dir: string;
  afterEach(() => rmSync(dir, { recursive: true, force: true }));
  it("does not count a symlink that leads outside reports/ as an output", () => {
    dir = mkdtempSync(join(tmpdir(), "tw-vo-"));
    mkdirSync(join(dir, "reports"));
    writeFileSync(join(dir, "secret.txt"), "outside");
    writeFileSync(join(dir, "reports", "in.rpt"), "inside");
    symlinkSync(join(dir, "secret.txt"), join(dir, "reports", "leak.rpt"));
    symlinkSync(join(dir, "reports", "in.rpt"), join(dir, "reports", "alias.rpt"));
    expect(inventoryReports(dir).map((f) => f.path)).toEqual([
      "reports/alias.rpt",
      "reports/in.rpt",
    ]);
    expect(validateOutputs(dir, contract([{ path: "reports/leak.rpt" }])).failure?.error_type).toBe(
      "OUTPUT_MISSING",
    );
  });
});
