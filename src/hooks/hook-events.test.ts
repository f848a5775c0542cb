import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { hooksFor } from "./agent-wiring.ts";
import { AGENT_EVENT_NAMES, HOOK_AGENTS, HOOK_EVENTS, INSTALL_AGENTS } from "./hook-events.ts";

const ROOT = join(import.meta.dirname, "..", "..");
const read = (path: string) => readFileSync(join(ROOT, path), "utf8");

describe("the one list of hook events and agents", () => {
  it("install lists every hook agent, once", () => {
    expect([...INSTALL_AGENTS].sort()).toEqual([...HOOK_AGENTS].sort());
  });

  it("every agent names every event", () => {
    for (const agent of HOOK_AGENTS)
      expect(Object.keys(AGENT_EVENT_NAMES[agent]).sort()).toEqual([...HOOK_EVENTS].sort());
  });

  it("the Claude Code plugin's hooks.json is what install writes for the shell client", () => {
    const file = JSON.parse(read("plugins/claude-code/hooks/hooks.json")) as { hooks: unknown };
    expect(file.hooks).toEqual(hooksFor("claude-code", "timewarp", { shellClient: true }));
  });

  it("the OpenCode plugin runs exactly the four events, on OpenCode's names for them", () => {
    const source = read("plugins/opencode/timewarp.js");
    const run = [...source.matchAll(/\bhook(?:Sync)?\(\s*"([^"]+)"/g)].map((m) => m[1]);
    expect([...new Set(run)].sort()).toEqual([...HOOK_EVENTS].sort());
    for (const name of Object.values(AGENT_EVENT_NAMES.opencode))
      expect(source).toContain(`"${name}"`);
  });

  it("the POSIX shell client carries no copy: it names no event and no agent", () => {
    const script = read("bin/timewarp-hook");
    for (const name of [...HOOK_EVENTS, ...HOOK_AGENTS]) expect(script).not.toContain(name);
  });
});
