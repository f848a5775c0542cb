import { describe, expect, it } from "vitest";
import { parseApplyPatch } from "./parse-apply-patch.ts";

describe("parseApplyPatch", () => {
  it("names every file of a multi-file Codex patch, with its action and a move", () => {
    const patch = [
      "*** Begin Patch",
      "*** Add File: src/new.ts",
      "+export const x = 1;",
      "*** Update File: src/a.ts",
      "*** Move to: src/b.ts",
      "@@ function f()",
      "-  return 1;",
      "+  return 2;",
      "*** Delete File: old/gone.txt",
      "*** End Patch",
      "",
    ].join("\n");
    expect(parseApplyPatch(patch)).toEqual([
      { action: "add", path: "src/new.ts" },
      { action: "update", path: "src/a.ts", moveTo: "src/b.ts" },
      { action: "delete", path: "old/gone.txt" },
    ]);
  });

  it("ignores a shell heredoc around the patch and hunk lines that look like headers", () => {
    const text = [
      "apply_patch <<'EOF'",
      "*** Begin Patch",
      "*** Update File: a b.txt",
      "@@",
      "-*** Add File: not-a-header",
      "+x",
      "*** End Patch",
      "EOF",
      "*** Add File: after-the-end.txt",
    ].join("\n");
    expect(parseApplyPatch(text)).toEqual([{ action: "update", path: "a b.txt" }]);
  });

  it("finds nothing in text that is no patch", () => {
    expect(parseApplyPatch("")).toEqual([]);
    expect(parseApplyPatch("*** Begin Patch\n*** End Patch\n")).toEqual([]);
  });
});
