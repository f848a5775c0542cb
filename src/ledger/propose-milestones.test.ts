import { describe, expect, it } from "vitest";
import { type OperationSummary, proposeMilestones } from "./propose-milestones.ts";

const MIN = 60_000;
const op = (id: string, min: number, files: string[]): OperationSummary => ({
  id,
  ts: min * MIN,
  tool: "ApplyEditBlock",
  files,
});

describe("proposeMilestones", () => {
  it("closes a group when tests pass between two operations", () => {
    const ops = [
      op("a", 0, ["src/auth/a.ts"]),
      op("b", 1, ["src/auth/b.ts"]),
      op("c", 3, ["src/auth/c.ts"]),
    ];
    const p = proposeMilestones(ops, [{ kind: "tests_passed", ts: 2 * MIN }]);
    expect(p.map((x) => [x.snapshotIds, x.reason])).toEqual([
      [["a", "b"], "tests_passed"],
      [["c"], "end"],
    ]);
  });

  it("closes on a long pause and on a switch of module", () => {
    const ops = [
      op("a", 0, ["src/auth/a.ts"]),
      op("b", 90, ["src/auth/a.ts"]),
      op("c", 91, ["src/auth/b.ts"]),
      op("d", 92, ["src/ui/x.tsx"]),
      op("e", 93, ["src/ui/y.tsx", "src/auth/a.ts"]),
    ];
    const p = proposeMilestones(ops, []);
    expect(p.map((x) => [x.snapshotIds, x.reason])).toEqual([
      [["a"], "pause"],
      [["b", "c"], "module_switch"],
      [["d", "e"], "end"],
    ]);
    expect(p[0]?.id).toBe("p_a_a");
  });

  it("an explicit signal after the last operation closes it with that reason", () => {
    const p = proposeMilestones([op("a", 0, ["x.ts"])], [{ kind: "explicit", ts: MIN }]);
    expect(p).toHaveLength(1);
    expect(p[0]?.reason).toBe("explicit");
  });

  it("a signal before any operation does not split anything", () => {
    const p = proposeMilestones(
      [op("a", 5, ["x.ts"]), op("b", 6, ["x.ts"])],
      [{ kind: "explicit", ts: 0 }],
    );
    expect(p.map((x) => x.snapshotIds)).toEqual([["a", "b"]]);
  });
});
