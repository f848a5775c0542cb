import { describe, expect, it } from "vitest";
import { isTimewarpError } from "../core/index.ts";
import { applyEditBlockToText } from "./match-edit-block.ts";

const apply = (text: string, search: string, replace: string) =>
  applyEditBlockToText({ text, search, replace, path: "f.ts" });

function codeOf(fn: () => unknown): { code: string; data: Record<string, unknown> | undefined } {
  try {
    fn();
  } catch (error) {
    if (isTimewarpError(error)) return { code: error.code, data: error.data };
    throw error;
  }
  throw new Error("expected a TimewarpError");
}

describe("applyEditBlockToText", () => {
  it("replaces the single exact match", () => {
    expect(apply("a\nb\nc\n", "b\n", "B\nB2\n")).toBe("a\nB\nB2\nc\n");
  });

  it("refuses a block that matches nowhere (whitespace counts)", () => {
    expect(codeOf(() => apply("  x = 1\n", "x  = 1", "y")).code).toBe("EDIT_BLOCK_NOT_FOUND");
  });

  it("refuses an ambiguous block and names the candidate lines", () => {
    const r = codeOf(() => apply("foo()\nbar\nfoo()\nbaz\nfoo()\n", "foo()", "x"));
    expect(r.code).toBe("EDIT_BLOCK_AMBIGUOUS");
    expect(r.data?.candidates).toEqual([1, 3, 5]);
  });

  it("counts overlapping occurrences as ambiguous", () => {
    const r = codeOf(() => apply("aaa\n", "aa", "b"));
    expect(r.code).toBe("EDIT_BLOCK_AMBIGUOUS");
  });

  it("matches an LF block in a CRLF file and writes CRLF", () => {
    expect(apply("a\r\nb\r\nc\r\n", "a\nb", "x\ny")).toBe("x\r\ny\r\nc\r\n");
  });

  it("rejects an empty search block", () => {
    expect(codeOf(() => apply("abc", "", "x")).code).toBe("INVALID_INPUT");
  });
});
