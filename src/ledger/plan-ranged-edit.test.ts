import { describe, expect, it } from "vitest";
import { isTimewarpError } from "../core/index.ts";
import { applyRangedEditToText } from "./plan-ranged-edit.ts";

const edit = (text: string, startLine: number, endLine: number, content: string) =>
  applyRangedEditToText({ text, startLine, endLine, content, path: "f" });

describe("applyRangedEditToText", () => {
  it("replaces an inclusive range and keeps the file's EOL", () => {
    expect(edit("1\n2\n3\n4\n", 2, 3, "two\nthree")).toBe("1\ntwo\nthree\n4\n");
    expect(edit("1\r\n2\r\n3\r\n", 2, 2, "B")).toBe("1\r\nB\r\n3\r\n");
  });

  it("inserts with endLine = startLine - 1 and appends at lines + 1", () => {
    expect(edit("1\n2\n", 2, 1, "x\n")).toBe("1\nx\n2\n");
    expect(edit("1\n2\n", 3, 2, "3")).toBe("1\n2\n3\n");
  });

  it("appending after a last line without newline gives it one", () => {
    expect(edit("1\n2", 3, 2, "3")).toBe("1\n2\n3\n");
  });

  it("replacing the newline-less last line keeps it newline-less", () => {
    expect(edit("1\n2", 2, 2, "two")).toBe("1\ntwo");
  });

  it("deletes lines with empty content", () => {
    expect(edit("1\n2\n3\n", 2, 2, "")).toBe("1\n3\n");
  });

  it("refuses ranges outside the file", () => {
    for (const [s, e] of [
      [0, 1],
      [5, 5],
      [2, 4],
      [3, 1],
    ] as const) {
      try {
        edit("1\n2\n3\n", s, e, "x");
        expect.unreachable(`range ${s}-${e} accepted`);
      } catch (error) {
        expect(isTimewarpError(error, "RANGE_INVALID")).toBe(true);
      }
    }
  });
});
