import { spawnSync } from "node:child_process";
import { chmodSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { systemClock, workspacePaths } from "../src/core/index.ts";
import { installAgent } from "../src/hooks/index.ts";
import { initWorkspace, readManifest } from "../src/store/index.ts";
import { parseTranscript, readStatus } from "../src/timemachine/index.ts";
import { cliCommand, makeTempDir, REPO_ROOT } from "./helpers/cli.ts";
import { events, imageText, ledgerRecords } from "./hooks-helpers.ts";

// The real OpenCode plugin module, as `timewarp install opencode` writes it, loaded the way
// OpenCode loads it (an ES module exporting plugin functions), driving the real CLI. The client
// is a stand-in for OpenCode's SDK client: only `session.messages` is used.
interface Hooks {
  tool?: Record<string, unknown>;
  dispose: () => Promise<void>;
  event: (input: { event: { type: string; properties: unknown } }) => Promise<void>;
  "tool.execute.before": (
    input: Record<string, unknown>,
    output: { args: Record<string, unknown> },
  ) => Promise<void>;
  "tool.execute.after": (
    input: Record<string, unknown>,
    output: Record<string, unknown>,
  ) => Promise<void>;
}

let dir: string;
let cleanup: () => void;
beforeEach(() => {
  ({ dir, cleanup } = makeTempDir("tw-opencode-"));
  writeFileSync(join(dir, "a.txt"), "one\n");
});
afterEach(() => cleanup());

const messages = [
  { info: { role: "user", id: "m1" }, parts: [{ type: "text", text: "rename one to two" }] },
  {
    info: { role: "assistant", id: "m2" },
    parts: [
      { type: "text", text: "Editing a.txt." },
      {
        type: "tool",
        tool: "edit",
        callID: "call_1",
        state: { status: "completed", input: { filePath: "a.txt" }, output: "Edit applied" },
      },
    ],
  },
];

async function loadPlugin(command?: string): Promise<Hooks> {
  const cli = cliCommand();
  await installAgent({
    root: dir,
    agent: "opencode",
    command: command ?? [cli.command, ...cli.args].join(" "),
    clock: systemClock,
  });
  const mod = (await import(
    pathToFileURL(join(dir, ".opencode", "plugins", "timewarp.js")).href
  )) as {
    TimewarpPlugin: (ctx: unknown) => Promise<Hooks>;
  };
  const client = {
    session: {
      messages: async ({ path }: { path: { id: string } }) => ({
        data: path.id === "ses_1" ? messages : [],
      }),
    },
  };
  return mod.TimewarpPlugin({ client, directory: dir, worktree: dir, project: {}, $: undefined });
}

/** The session's record, as `session-start`/`session-end` left it. */
function sessionRecord(id: string): { ended_at?: string | null } {
  return JSON.parse(readFileSync(join(workspacePaths(dir).sessions, `${id}.json`), "utf8"));
}

function writeGoal(goal: Record<string, unknown>): void {
  mkdirSync(join(dir, ".timewarp", "memory"), { recursive: true });
  writeFileSync(join(dir, ".timewarp", "memory", "goal.json"), JSON.stringify(goal));
}

describe("the OpenCode plugin module", () => {
  it("session.created snapshots; an edit between tool.execute.before/after lands in the ledger; issue_report gets the chat", async () => {
    const plugin = await loadPlugin();
    await plugin.event({
      event: { type: "session.created", properties: { info: { id: "ses_1" } } },
    });
    expect(readStatus(dir).session_id).toBe("ses_1");

    const input = { tool: "edit", sessionID: "ses_1", callID: "call_1" };
    await plugin["tool.execute.before"](input, {
      args: { filePath: join(dir, "a.txt"), oldString: "one", newString: "two" },
    });
    writeFileSync(join(dir, "a.txt"), "two\n");
    await plugin["tool.execute.after"](input, {
      title: "a.txt",
      output: "Edit applied",
      metadata: {},
    });
    const [record] = ledgerRecords(dir);
    expect(record?.tool).toBe("Edit");
    expect(imageText(dir, record?.files[0]?.before ?? null)).toBe("one\n");
    expect(imageText(dir, record?.files[0]?.after ?? null)).toBe("two\n");

    // Before the MCP server's issue_report runs, the session's chat is exported where the
    // session record's transcript_path points.
    await plugin["tool.execute.before"](
      { tool: "timewarp_issue_report", sessionID: "ses_1", callID: "c9" },
      { args: {} },
    );
    const session = JSON.parse(
      readFileSync(join(workspacePaths(dir).sessions, "ses_1.json"), "utf8"),
    ) as { transcript_path: string };
    const entries = parseTranscript(readFileSync(session.transcript_path, "utf8"));
    expect(entries).toEqual([
      { kind: "user", text: "rename one to two" },
      { kind: "assistant", text: "Editing a.txt." },
      expect.objectContaining({ kind: "tool_input", tool: "edit" }),
      expect.objectContaining({ kind: "tool_output", text: "Edit applied" }),
    ]);
  });

  it("a tool call waits for the session start OpenCode did not wait for", async () => {
    // A session start slow enough to still run when the first tool call comes (a first snapshot
    // of a large tree): its command sleeps before it runs the CLI.
    const cli = cliCommand();
    const slow = join(dir, "..", `${dir.split("/").pop()}-slow`);
    const quoted = [cli.command, ...cli.args].map((a) => `'${a.replace(/'/g, `'\\''`)}'`);
    writeFileSync(
      slow,
      `#!/bin/sh\ncase "$*" in *session-start*) sleep 1 ;; esac\nexec ${quoted.join(" ")} "$@"\n`,
    );
    chmodSync(slow, 0o755);
    try {
      const plugin = await loadPlugin(slow);
      // OpenCode calls event hooks without awaiting them, then runs the model's first tool call.
      const started = plugin.event({
        event: { type: "session.created", properties: { info: { id: "ses_3" } } },
      });
      const input = { tool: "edit", sessionID: "ses_3", callID: "call_3" };
      await plugin["tool.execute.before"](input, {
        args: { filePath: join(dir, "a.txt"), oldString: "one", newString: "two" },
      });
      writeFileSync(join(dir, "a.txt"), "two\n");
      await plugin["tool.execute.after"](input, { title: "a.txt", output: "ok", metadata: {} });
      await started;
      // The session's snapshot is the tree before the session's first edit.
      const snapshot = readStatus(dir).session_snapshot_id ?? "";
      const entry = readManifest(dir, snapshot).entries.find((e) => e.path === "a.txt");
      expect(imageText(dir, entry?.oid === undefined ? null : { oid: entry.oid })).toBe("one\n");
      const [record] = ledgerRecords(dir);
      expect(imageText(dir, record?.files[0]?.after ?? null)).toBe("two\n");
    } finally {
      rmSync(slow, { force: true });
    }
  });

  it("registers no tools, even where OpenCode provides @opencode-ai/plugin: the MCP server is their one home", async () => {
    // Where OpenCode installs its plugin package for .opencode/plugins/ (a stand-in with the
    // same `tool` helper and `tool.schema`).
    const pkg = join(dir, ".opencode", "node_modules", "@opencode-ai", "plugin");
    mkdirSync(pkg, { recursive: true });
    writeFileSync(
      join(pkg, "package.json"),
      JSON.stringify({ name: "@opencode-ai/plugin", type: "module", exports: "./index.js" }),
    );
    writeFileSync(
      join(pkg, "index.js"),
      [
        "const leaf = () => ({ optional: leaf, describe: leaf });",
        "export const tool = Object.assign((def) => def, { schema: { string: leaf, enum: leaf } });",
      ].join("\n"),
    );
    const plugin = await loadPlugin();
    // The five it offered (timewarp_travel, timewarp_return, timewarp_issue_list,
    // timewarp_issue_get, issue_report) doubled the MCP server's in OpenCode's tool list.
    expect(plugin.tool ?? {}).toEqual({});
  });

  it("with a plain `timewarp` command, hooks go through timewarp-hook beside it, or the CLI without one", async () => {
    // a bin directory as npm makes one: `timewarp` (logging, then the real CLI) and the link
    const bin = join(dir, "..", `${dir.split("/").pop()}-bin`);
    mkdirSync(bin);
    const log = join(bin, "calls.log");
    const cli = [cliCommand().command, ...cliCommand().args].map((a) => `'${a}'`).join(" ");
    writeFileSync(
      join(bin, "timewarp"),
      `#!/bin/sh\nprintf '%s\\n' "tried=\${TIMEWARP_HOOK_TRIED-} $*" >> '${log}'\nexec ${cli} "$@"\n`,
    );
    chmodSync(join(bin, "timewarp"), 0o755);
    symlinkSync(join(REPO_ROOT, "bin", "timewarp-hook"), join(bin, "timewarp-hook"));
    // The client looks for a hook server only where watching is allowed; the workspace's config
    // keeps the CLI's session start from starting a daemon.
    initWorkspace(dir);
    const config = workspacePaths(dir).config;
    writeFileSync(
      config,
      JSON.stringify({ ...JSON.parse(readFileSync(config, "utf8")), watch: false }),
    );
    const watchEnv = process.env.TIMEWARP_WATCH;
    delete process.env.TIMEWARP_WATCH;
    try {
      const plugin = await loadPlugin(join(bin, "timewarp"));
      const created = (id: string) =>
        plugin.event({ event: { type: "session.created", properties: { info: { id } } } });
      await created("ses_3");
      expect(readStatus(dir).session_id).toBe("ses_3");
      // no watch daemon here (the tests run without): timewarp-hook handed the hook to the CLI
      expect(readFileSync(log, "utf8")).toBe(
        "tried=1 hook session-start --agent opencode --json\n",
      );
      rmSync(join(bin, "timewarp-hook"));
      await created("ses_4");
      expect(readStatus(dir).session_id).toBe("ses_4");
      expect(readFileSync(log, "utf8").split("\n")[1]).toBe(
        "tried= hook session-start --agent opencode --json",
      );
    } finally {
      if (watchEnv === undefined) delete process.env.TIMEWARP_WATCH;
      else process.env.TIMEWARP_WATCH = watchEnv;
      rmSync(bin, { recursive: true, force: true });
    }
  });

  it("a session ends when OpenCode deletes it, without waiting for the handler, or when it disposes of the plugin", async () => {
    const plugin = await loadPlugin();
    const event = (type: string, id: string) =>
      // OpenCode's bus payload for session events: { sessionID, info: Session.Info }
      plugin.event({ event: { type, properties: { sessionID: id, info: { id } } } });
    await event("session.created", "ses_7");
    await event("session.created", "ses_8");
    // OpenCode calls event hooks without awaiting them (`opencode session delete` exits next).
    const handled = event("session.deleted", "ses_7");
    expect(sessionRecord("ses_7").ended_at).toEqual(expect.any(String));
    await handled;
    expect(sessionRecord("ses_8").ended_at ?? null).toBeNull();
    // `opencode run` deletes nothing: the session ends when the plugin is disposed of.
    await plugin.dispose();
    expect(sessionRecord("ses_8").ended_at).toEqual(expect.any(String));
    const ended = events(dir).filter((e) => e.type === "session.ended");
    expect(ended.map((e) => [e.data.session_id, e.data.reason])).toEqual([
      ["ses_7", "deleted"],
      ["ses_8", "dispose"],
    ]);
  });

  it("a session still open when OpenCode's process exits ends then", async () => {
    await loadPlugin();
    const script = [
      `const { TimewarpPlugin } = await import(${JSON.stringify(pathToFileURL(join(dir, ".opencode", "plugins", "timewarp.js")).href)});`,
      `const plugin = await TimewarpPlugin({ client: {}, directory: ${JSON.stringify(dir)}, worktree: ${JSON.stringify(dir)} });`,
      `await plugin.event({ event: { type: "session.created", properties: { info: { id: "ses_9" } } } });`,
      "process.exit(0);",
    ].join("\n");
    const res = spawnSync(process.execPath, ["--input-type=module", "-e", script], {
      cwd: dir,
      encoding: "utf8",
    });
    expect(res.stderr).toBe("");
    expect(res.status).toBe(0);
    expect(sessionRecord("ses_9").ended_at).toEqual(expect.any(String));
  });

  it("a drift warning from tool.execute.before reaches the model in the tool's output", async () => {
    // weights under which an edit outside the whitelist warns (the blacklist would still block)
    writeGoal({
      objective: "fix the greeting",
      whitelist: ["src/**"],
      blacklist: ["package.json"],
      checkpoints: [],
      weights: { scope: 0.5, plan: 1, test: 0.2, evidence: 0.1 },
      thresholds: { warn: 0.4, rollback: 0.9 },
    });
    const plugin = await loadPlugin();
    const input = { tool: "write", sessionID: "ses_5", callID: "call_5" };
    const args = { filePath: join(dir, "README.md"), content: "# x\n" };
    await plugin["tool.execute.before"](input, { args });
    writeFileSync(join(dir, "README.md"), "# x\n");
    // OpenCode's shapes: the after hook's input carries the args, its output is what the model reads.
    const output = { title: "README.md", output: "Wrote file successfully.", metadata: {} };
    await plugin["tool.execute.after"]({ ...input, args }, output);
    expect(output.output).toMatch(
      /^Wrote file successfully\.\n\ntimewarp drift warning for README\.md: .*README\.md is not in the whitelist/,
    );
    const [record] = ledgerRecords(dir);
    expect(record?.files.map((f) => f.newPath)).toEqual(["README.md"]);
  });

  it("the guard reads the new text of OpenCode's edit, multiedit and apply_patch arguments", async () => {
    writeGoal({ objective: "x", checkpoints: [] });
    mkdirSync(join(dir, "src"));
    const test = join(dir, "src", "a.test.ts");
    writeFileSync(test, 'it("works", () => {});\n');
    const plugin = await loadPlugin();
    const guarded = (tool: string, args: Record<string, unknown>) =>
      plugin["tool.execute.before"]({ tool, sessionID: "ses_6", callID: `call_${tool}` }, { args });
    // The argument names of OpenCode's own tools (packages/opencode/src/tool/*.ts).
    await expect(
      guarded("edit", { filePath: test, oldString: "it(", newString: "it.skip(" }),
    ).rejects.toThrow(/test tampering in src\/a\.test\.ts: adds jest\/vitest\/mocha skip/);
    await expect(
      guarded("multiedit", {
        filePath: test,
        edits: [{ filePath: test, oldString: "it(", newString: "it.skip(" }],
      }),
    ).rejects.toThrow(/test tampering in src\/a\.test\.ts/);
    const patchText = [
      "*** Begin Patch",
      "*** Update File: src/a.test.ts",
      "@@",
      '-it("works", () => {});',
      '+it.skip("works", () => {});',
      "*** End Patch",
    ].join("\n");
    await expect(guarded("apply_patch", { patchText })).rejects.toThrow(
      /test tampering in src\/a\.test\.ts/,
    );
  });

  it("a drift guard's block becomes a thrown error that stops the tool", async () => {
    writeGoal({ objective: "x", blacklist: ["a.txt"], checkpoints: [] });
    const plugin = await loadPlugin();
    await expect(
      plugin["tool.execute.before"](
        { tool: "write", sessionID: "ses_2", callID: "call_2" },
        { args: { filePath: join(dir, "a.txt"), content: "x" } },
      ),
    ).rejects.toThrow(/a\.txt is blacklisted/);
  });
});
