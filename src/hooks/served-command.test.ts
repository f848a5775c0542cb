import { describe, expect, it } from "vitest";
import { isServedCommand, servedCommandKind } from "./served-command.ts";

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
      ["snapshot", "create", "extra"],
      ["return", "x"],
      ["revert"],
      ["travel", "--to", "s_a"],
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
      ["rewind", "3", "t1"],
      ["rewind", "--session"],
      ["snapshot", "create", "--session-id", "--json"],
      ["help", "status"],
      ["status", ""],
      ["status", 3],
    ])
      expect(isServedCommand(args), JSON.stringify(args)).toBe(false);
  });
});

describe("servedCommandKind", () => {
  it("tells the write commands, which must run at most once, from the read-only ones", () => {
    for (const args of [
      ["snapshot", "create"],
      ["snapshot", "create", "--session-id", "s1", "--json"],
      ["travel", "s_a"],
      ["-C", "/w", "travel", "s_a", "--json"],
      ["return"],
      ["return", "--save-patch", "i_1"],
      ["revert", "k3v9q2m1xa", "--to", "k3v9q2m1xb", "--dry-run", "--force"],
      // (its listing only reads, but one kind covers every form: at most once is always safe)
      ["rewind"],
      ["rewind", "--session", "s1", "--json"],
      ["rewind", "3", "--dry-run"],
      ["rewind", "--undo", "--force"],
    ])
      expect(servedCommandKind(args), args.join(" ")).toBe("write");
    for (const args of [["status"], ["history", "show", "x"], ["snapshot", "diff", "a"]])
      expect(servedCommandKind(args), args.join(" ")).toBe("read");
    expect(servedCommandKind(["snapshot", "delete", "s_a"])).toBeNull();
  });
});
