import { describe, expect, it } from "vitest";
import { hooksFor } from "./agent-wiring.ts";
import { codexHookHash, reviewCodexHooks } from "./codex-trust.ts";

// What Codex 0.171.0's own `hooks/list` reported as `currentHash` for the hooks
// `timewarp install codex` wrote with the command /work/wt-codex/bin/timewarp.cjs.
const HOOK = "/work/wt-codex/bin/timewarp-hook";
const MATCHER = "^(apply_patch|Bash)$";
const CODEX_SAYS = {
  PreToolUse: "sha256:b14169432ebe72bce2b52fb3f0985b39bcb735ebc8b547d249154b5d73ea7ec7",
  PostToolUse: "sha256:df6423759d75bf5831e1fd2946dd640d638b658152cfdb9aab64987bebfb674e",
  SessionStart: "sha256:a22c0bb091a7ef73448ec15813fd61b19d143d464a223f26f95b9583e8d01fcd",
  SessionEnd: "sha256:315f0519c3abb334251a7b9813d718023153a12e0e658ded28a0fa9bab099313",
};

describe("Codex's hook trust, read as Codex reads it", () => {
  it("hashes a hook as Codex does", () => {
    expect(
      codexHookHash("PreToolUse", MATCHER, {
        command: `${HOOK} pre-tool-use --agent codex`,
        timeout: 150,
      }),
    ).toBe(CODEX_SAYS.PreToolUse);
    expect(
      codexHookHash("SessionEnd", undefined, {
        command: `${HOOK} session-end --agent codex`,
        timeout: 3,
      }),
    ).toBe(CODEX_SAYS.SessionEnd);
  });

  it("reviews timewarp's handlers in hooks.json: trusted, new, changed, turned off; the user's own are not judged", () => {
    const table = hooksFor("codex", "/work/wt-codex/bin/timewarp.cjs");
    const user = { hooks: [{ type: "command", command: "true" }] };
    // the user's own group first: timewarp's PreToolUse handler is group 1 there
    const hooksJson = { hooks: { ...table, PreToolUse: [user, ...(table.PreToolUse ?? [])] } };
    const file = "/p/.codex/hooks.json";
    const state = {
      [`${file}:session_start:0:0`]: { trusted_hash: CODEX_SAYS.SessionStart },
      [`${file}:pre_tool_use:1:0`]: { trusted_hash: CODEX_SAYS.PreToolUse },
      [`${file}:post_tool_use:0:0`]: { trusted_hash: "sha256:0000" },
      [`${file}:session_end:0:0`]: { trusted_hash: CODEX_SAYS.SessionEnd, enabled: false },
    };
    const reviews = reviewCodexHooks({
      hooksFiles: ["/link/.codex/hooks.json", file],
      hooksJson,
      state,
    });
    expect(reviews.map((r) => [r.event, r.key, r.status])).toEqual([
      ["SessionStart", `${file}:session_start:0:0`, "trusted"],
      ["PreToolUse", `${file}:pre_tool_use:1:0`, "trusted"],
      ["PostToolUse", `${file}:post_tool_use:0:0`, "modified"],
      ["SessionEnd", `${file}:session_end:0:0`, "disabled"],
      // the turn checkpoint's hook, trusted under no name: keyed by the first name Codex reads
      ["UserPromptSubmit", "/link/.codex/hooks.json:user_prompt_submit:0:0", "untrusted"],
    ]);
    // the hashes Codex itself computed for the four events it was asked about
    for (const r of reviews.filter((r) => r.event in CODEX_SAYS))
      expect(r.hash).toBe(CODEX_SAYS[r.event as keyof typeof CODEX_SAYS]);
    expect(
      reviewCodexHooks({ hooksFiles: [file], hooksJson, state: {} }).map((r) => r.status),
    ).toEqual(["untrusted", "untrusted", "untrusted", "untrusted", "untrusted"]);
    expect(reviewCodexHooks({ hooksFiles: [file], hooksJson: null, state })).toEqual([]);
  });
});
