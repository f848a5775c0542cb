import { describe, expect, it } from "vitest";
import { parseHookArgv } from "./hooks.ts";

describe("parseHookArgv (the entry's fast path for hook calls)", () => {
  it("takes the forms the installed wirings write, options in any order", () => {
    expect(parseHookArgv(["hook", "pre-tool-use", "--agent", "claude-code"])).toEqual({
      event: "pre-tool-use",
      agent: "claude-code",
    });
    expect(parseHookArgv(["hook", "--json", "-C", "/w", "post-tool-use"])).toEqual({
      event: "post-tool-use",
      agent: undefined,
      json: true,
      cwd: "/w",
    });
    expect(parseHookArgv(["hook"])).toEqual({ event: undefined, agent: undefined });
  });

  it("leaves everything else to commander (help, unknown options, other commands)", () => {
    expect(parseHookArgv(["status", "--json"])).toBeNull();
    expect(parseHookArgv(["--json", "hook", "session-start"])).toBeNull();
    expect(parseHookArgv(["hook", "session-start", "--help"])).toBeNull();
    expect(parseHookArgv(["hook", "session-start", "--agent"])).toBeNull();
    expect(parseHookArgv(["hook", "a", "b"])).toBeNull();
  });
});
