import { describe, expect, it } from "vitest";
import { type CompareResult, diffMetrics, flattenMetrics, formatCompare } from "./compare.ts";

describe("diffMetrics (pure)", () => {
  it("flattens nested objects with dotted keys; arrays and empty objects stay whole", () => {
    expect([
      ...flattenMetrics({ a: 1, t: { wns: -0.1, deep: { x: "y" } }, list: [1, 2], none: {} }),
    ]).toEqual([
      ["a", 1],
      ["t.wns", -0.1],
      ["t.deep.x", "y"],
      ["list", [1, 2]],
      ["none", {}],
    ]);
  });

  it("numbers get delta and relative change; others changed/same; added and removed", () => {
    const diffs = diffMetrics(
      { cells: 1842, wns_ns: -0.042, zero: 0, tool: "tclsh", paths: [1], gone: true, t: { n: 5 } },
      { cells: 1842, wns_ns: -0.051, zero: 3, tool: "innovus", paths: [1], fresh: 7, t: { n: 4 } },
    );
    expect(diffs).toEqual([
      { key: "cells", a: 1842, b: 1842, change: "same", delta: 0, relative: 0 },
      { key: "fresh", a: null, b: 7, change: "added" },
      { key: "gone", a: true, b: null, change: "removed" },
      { key: "paths", a: [1], b: [1], change: "same" },
      { key: "t.n", a: 5, b: 4, change: "changed", delta: -1, relative: -0.2 },
      { key: "tool", a: "tclsh", b: "innovus", change: "changed" },
      {
        key: "wns_ns",
        a: -0.042,
        b: -0.051,
        change: "changed",
        delta: -0.009,
        relative: -0.214285714286,
      },
      { key: "zero", a: 0, b: 3, change: "changed", delta: 3, relative: null },
    ]);
  });

  it("a number that became a string is changed, without a delta", () => {
    expect(diffMetrics({ v: 1 }, { v: "1" })).toEqual([
      { key: "v", a: 1, b: "1", change: "changed" },
    ]);
  });
});

describe("formatCompare (pure)", () => {
  it("prints both jobs and an aligned table", () => {
    const job = (id: string, status: string, error_type: string) => ({
      job_id: id,
      status,
      error_type,
      detail_code: null,
      skill: "s",
      version: "1.0.0",
      run_dir: `/r/${id}`,
      has_summary: true,
    });
    const result: CompareResult = {
      skill: "s",
      forced: false,
      jobs: [job("J1", "PASS", "OK"), job("J2", "FAIL", "CMD_FAIL")],
      metrics: diffMetrics({ wns_ns: -0.5, name: "a" }, { wns_ns: -0.25, name: "b", extra: 1 }),
      counts: { same: 0, changed: 2, added: 1, removed: 0 },
    };
    const lines = formatCompare(result).split("\n");
    expect(lines[0]).toBe("skill s");
    expect(lines[1]).toMatch(/^JOB1 {2}J1 {2}PASS {2}OK {8}s 1\.0\.0$/);
    expect(lines[2]).toMatch(/^JOB2 {2}J2 {2}FAIL {2}CMD_FAIL {2}s 1\.0\.0$/);
    const table = lines.slice(4, 8);
    expect(table).toEqual([
      "metric  JOB1  JOB2   delta    relative",
      "extra   -     1      added",
      "name    a     b      changed",
      "wns_ns  -0.5  -0.25  +0.25    +50.0%",
    ]);
    expect(lines.at(-1)).toBe("2 changed, 0 same, 1 added, 0 removed");
  });
});
