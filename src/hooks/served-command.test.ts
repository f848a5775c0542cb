import { describe, expect, it } from "vitest";
import { isServedCommand } from "./served-command.ts";

describe("isServedCommand", () => {
  it("takes the read-only commands with their own options, globals anywhere", () => {
    for (const args of [
      ["status"],
      ["--json", "status"],
      ["-C", "/w", "status", "--json"],
      ["history", "--limit", "5", "--tool", "edit_block", "--tool", "shell", "--include-diffs"],
      [
        "history",
        "--since",
        "2026-01-01T00:00:00Z",
        "--until",
        "x",
        "--file",
        "src/**",
        "--cursor",
        "c",
      ],
      ["history", "show", "k3v9q2m1xa", "--format", "git"],
      ["snapshot", "list", "--cwd", "sub"],
      ["snapshot", "diff", "s_a"],
      ["snapshot", "diff", "s_a", "s_b", "--json"],
    ])
      expect(isServedCommand(args), args.join(" ")).toBe(true);
  });

  it("leaves everything else to the CLI in its own process", () => {
    for (const args of [
      [],
      ["snapshot"],
      ["snapshot", "create"],
      ["snapshot", "diff"],
      ["snapshot", "diff", "a", "b", "c"],
      ["history", "show"],
      ["history", "show", "a", "b"],
      ["history", "prune"],
      ["status", "extra"],
      ["status", "--help"],
      ["history", "--limit=5"],
      ["history", "--limit"],
      ["history", "--limit", "-1"],
      ["-C", "", "status"],
      ["status", "--"],
      ["travel", "s_a"],
      ["help", "status"],
      ["status", ""],
      ["status", 3],
    ])
      expect(isServedCommand(args), JSON.stringify(args)).toBe(false);
  });
});
