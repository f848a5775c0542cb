import { describe, expect, it } from "vitest";
import { isReportsPath, parseContract } from "./contract.ts";

const VALID = `
schema_version: "1.0"
name: demo
version: 1.2.0
tool: innovus
scripts:
  - name: run
    entry: templates/run.tcl
outputs:
  required:
    - path: reports/a.rpt
    - path: reports/**/*.rpt
      non_empty: false
debug_hints: [one, two]
`;

describe("parseContract (§7)", () => {
  it("accepts a valid contract and defaults non_empty to true", () => {
    const r = parseContract(VALID);
    expect(r.ok).toBe(true);
    if (r.ok) expect(r.value.outputs.required.map((o) => o.non_empty)).toEqual([true, false]);
  });

  it.each([
    ["tool: innovus", "tool: icc2", "tool:"],
    ["debug_hints: [one, two]", "debug_hints: [one]", "debug_hints:"],
    ["    - path: reports/a.rpt", "    - path: ../a.rpt", "outputs.required.0.path:"],
    ["    - path: reports/a.rpt", "    - path: /etc/passwd", "outputs.required.0.path:"],
    ["    - path: reports/a.rpt", "    - path: reports/../../x", "outputs.required.0.path:"],
    ["    - path: reports/a.rpt", "    - path: reports/{a,../../b}", "outputs.required.0.path:"],
    ["    entry: templates/run.tcl", "    entry: ../../evil.tcl", "scripts.0.entry:"],
    ['schema_version: "1.0"\n', "", "schema_version:"],
  ])("rejects %s → %s naming the field", (from, to, field) => {
    const r = parseContract(VALID.replace(from, to));
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.issues.join("\n")).toContain(field);
  });

  it("reports YAML syntax errors as issues, not exceptions", () => {
    const r = parseContract("name: [unclosed");
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.issues[0]).toMatch(/^\(yaml\)/);
  });

  it("keeps globs under reports/", () => {
    expect(isReportsPath("reports/*.rpt")).toBe(true);
    expect(isReportsPath("reports")).toBe(false);
    expect(isReportsPath("reports2/a")).toBe(false);
    expect(isReportsPath("~/reports/a")).toBe(false);
  });
});
