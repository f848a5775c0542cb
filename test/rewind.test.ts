import { spawnSync } from "node:child_process";
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  writeFileSync,
} from "node:fs";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { systemClock, workspacePaths } from "../src/core/index.ts";
import { installAgent } from "../src/hooks/index.ts";
import { type CliRun, cliCommand, makeTempDir, runCli } from "./helpers/cli.ts";
import { readDiskTree, treeLines } from "./helpers/disk-tree.ts";
import { holdLockInChild } from "./helpers/lock-holder.ts";
import { hook, ledgerRecords } from "./hooks-helpers.ts";

// Turn checkpoints and `timewarp rewind` through the real CLI: hook payloads as each agent
// sends them, real files in a temp dir, the rewind's ledger record, its undo and its crashes.

let dir: string;
let cleanup: () => void;
const cleanups: (() => void)[] = [];
beforeEach(() => {
  ({ dir, cleanup } = makeTempDir("tw-rewind-"));
  // The store is found by looking up from the cwd: an empty one here keeps every command in
  // this directory, whatever a stray `.timewarp/` above it (in /tmp) would say.
  mkdirSync(join(dir, ".timewarp"));
  mkdirSync(join(dir, "src"));
  writeFileSync(join(dir, "src", "app.ts"), "export const answer = 41;\n");
  writeFileSync(join(dir, "README.md"), "# demo\n");
});
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
  cleanup();
});

/** Each test runs the CLI a dozen times or more (over a second each from the sources). */
const SLOW = 180_000;

const file = (rel: string) => join(dir, rel);
const read = (rel: string) => readFileSync(file(rel), "utf8");
const write = (rel: string, text: string) => {
  mkdirSync(dirname(file(rel)), { recursive: true });
  writeFileSync(file(rel), text);
};

type Body = Record<string, unknown>;
interface TurnJson {
  turn: number;
  prompt: string;
  until: string;
  files_changed: unknown[];
}
const errorOf = (body: Body) => (body.error ?? {}) as { code?: string; message?: string };
const turnsOf = (body: Body) => body.turns as TurnJson[];

/** `timewarp … --json` in the workspace, its document parsed. */
function tw(args: string[], env?: NodeJS.ProcessEnv): { run: CliRun; body: Body } {
  const run = runCli([...args, "--json"], { cwd: dir, ...(env ? { env } : {}) });
  let body: Body = {};
  try {
    body = run.json() as Body;
  } catch {
    // a killed process prints nothing
  }
  return { run, body };
}

function sessionStart(session: string, agent = "claude-code"): void {
  const r = hook(
    "session-start",
    { session_id: session, cwd: dir, hook_event_name: "SessionStart", source: "startup" },
    dir,
    { args: ["--agent", agent] },
  );
  expect(r.status, r.stderr).toBe(0);
}

/** A Claude Code prompt, as UserPromptSubmit sends it. */
function prompt(session: string, text: string): CliRun {
  const r = hook(
    "user-prompt-submit",
    {
      session_id: session,
      transcript_path: join(dir, "t.jsonl"),
      cwd: dir,
      permission_mode: "default",
      hook_event_name: "UserPromptSubmit",
      prompt: text,
    },
    dir,
    { args: ["--agent", "claude-code"] },
  );
  expect(r.status, r.stderr).toBe(0);
  return r;
}

/** A Bash call as Claude Code's hooks see it: the baseline, the command itself, the rescan. */
function shell(session: string, id: string, command: string): void {
  const call = { session_id: session, cwd: dir, tool_name: "Bash", tool_use_id: id };
  const pre = hook("pre-tool-use", { ...call, tool_input: { command } }, dir);
  expect(pre.status, pre.stderr).toBe(0);
  const r = spawnSync("sh", ["-c", command], { cwd: dir });
  expect(r.status).toBe(0);
  const post = hook(
    "post-tool-use",
    { ...call, tool_input: { command }, tool_response: { stdout: "" } },
    dir,
  );
  expect(post.status, post.stderr).toBe(0);
}

const turnFiles = (session: string) => {
  const d = join(workspacePaths(dir).turns, session);
  return existsSync(d) ? readdirSync(d).sort() : [];
};
const turn = (session: string, n: number) =>
  JSON.parse(
    readFileSync(
      join(workspacePaths(dir).turns, session, `${String(n).padStart(6, "0")}.json`),
      "utf8",
    ),
  ) as { turn: number; agent: string; prompt: string; snapshot_id: string; stored: boolean };
const snapshots = () => readdirSync(workspacePaths(dir).snapshots).sort();
/** Every object the store holds, loose and packed (a turn that stored nothing adds none). */
const objects = () =>
  readdirSync(workspacePaths(dir).objects, { recursive: true }).map(String).sort();
/** The tree as lines, with exact permission bits: what a rewind and its undo must give back. */
const tree = () => {
  const { tree: t, dirs } = readDiskTree(dir);
  const modes = [...t.keys()].map((k) => {
    const st = lstatSync(join(dir, Buffer.from(k, "latin1").toString()));
    return `${k} ${(st.mode & 0o7777).toString(8)}`;
  });
  return { files: treeLines(t), modes: modes.sort(), dirs };
};

describe("a turn checkpoint on each user prompt", { timeout: SLOW }, () => {
  it("takes one for each agent's prompt event, answers nothing on stdout, and keeps the first line redacted", () => {
    const secret = "ghp_9aZ3kLmN0pQrStUvWxYz1234567890AbCdEf";
    const payloads: [string, string[], Record<string, unknown>][] = [
      [
        "claude-code",
        ["--agent", "claude-code"],
        {
          session_id: "cc-1",
          transcript_path: join(dir, "cc.jsonl"),
          cwd: dir,
          permission_mode: "default",
          hook_event_name: "UserPromptSubmit",
          prompt: `fix the answer, my token is ${secret}\nsecond line`,
        },
      ],
      [
        "codex",
        ["--agent", "codex"],
        {
          session_id: "codex-1",
          transcript_path: null,
          cwd: dir,
          hook_event_name: "UserPromptSubmit",
          model: "gpt-5-codex",
          permission_mode: "default",
          turn_id: "turn-1",
          prompt: "add a test",
        },
      ],
      [
        "gemini",
        ["--agent", "gemini"],
        {
          session_id: "gem-1",
          transcript_path: join(dir, "g.json"),
          cwd: join(dir, "src"),
          hook_event_name: "BeforeAgent",
          timestamp: "2026-11-23T08:00:00.000Z",
          prompt: "\n\n  explain app.ts  ",
        },
      ],
      // Without --agent: the payload says who it is.
      [
        "gemini",
        [],
        { session_id: "gem-2", cwd: dir, hook_event_name: "BeforeAgent", prompt: "x" },
      ],
      [
        "codex",
        [],
        {
          session_id: "codex-2",
          cwd: dir,
          hook_event_name: "UserPromptSubmit",
          turn_id: "t",
          prompt: "y",
        },
      ],
    ];
    for (const [agent, args, payload] of payloads) {
      const env = agent === "gemini" ? { GEMINI_PROJECT_DIR: dir } : undefined;
      const r = hook("user-prompt-submit", payload, dir, { args, ...(env ? { env } : {}) });
      expect(r.status, r.stderr).toBe(0);
      // Claude Code and Codex hand a prompt hook's stdout to the model: nothing goes there.
      expect(r.stdout).toBe("");
      expect(r.stderr).toBe("");
      const t = turn(String(payload.session_id), 1);
      expect(t.agent).toBe(agent);
      expect(existsSync(join(workspacePaths(dir).snapshots, t.snapshot_id))).toBe(true);
    }
    expect(turn("cc-1", 1).prompt).toBe("fix the answer, my token is ***REDACTED***");
    expect(turn("gem-1", 1).prompt).toBe("explain app.ts");
    for (const s of ["cc-1", "codex-1", "gem-1"]) {
      expect(readFileSync(join(workspacePaths(dir).turns, s, "000001.json"), "utf8")).not.toContain(
        secret,
      );
    }
  });

  it("stores nothing when nothing changed: the turn names the previous checkpoint", () => {
    sessionStart("s1");
    const [sessionSnapshot] = snapshots();
    const before = { snapshots: snapshots(), objects: objects() };
    prompt("s1", "first");
    // Nothing changed since the session started: its snapshot stands for turn 1.
    expect(turn("s1", 1)).toMatchObject({ snapshot_id: sessionSnapshot, stored: false });
    prompt("s1", "second");
    expect(turn("s1", 2)).toMatchObject({ snapshot_id: sessionSnapshot, stored: false });
    expect({ snapshots: snapshots(), objects: objects() }).toEqual(before);
    write("src/app.ts", "export const answer = 42;\n");
    prompt("s1", "third");
    expect(turn("s1", 3).stored).toBe(true);
    expect(snapshots().length).toBe(before.snapshots.length + 1);
    prompt("s1", "fourth");
    expect(turn("s1", 4)).toMatchObject({ snapshot_id: turn("s1", 3).snapshot_id, stored: false });
    const listed = tw(["snapshot", "list"]).body.snapshots as {
      snapshot_id: string;
      origin: string;
    }[];
    expect(listed.map((l) => [l.snapshot_id, l.origin])).toEqual([
      [sessionSnapshot, "session"],
      [turn("s1", 3).snapshot_id, "turn"],
    ]);
    expect(turnFiles("s1")).toEqual(["000001.json", "000002.json", "000003.json", "000004.json"]);
  });

  it("the OpenCode plugin checkpoints on chat.message with the user's text", async () => {
    const cli = cliCommand();
    await installAgent({
      root: dir,
      agent: "opencode",
      command: [cli.command, ...cli.args].join(" "),
      clock: systemClock,
    });
    const mod = (await import(
      pathToFileURL(join(dir, ".opencode", "plugins", "timewarp.js")).href
    )) as {
      TimewarpPlugin: (ctx: unknown) => Promise<Record<string, (...a: unknown[]) => Promise<void>>>;
    };
    const plugin = await mod.TimewarpPlugin({
      client: { session: { messages: async () => ({ data: [] }) } },
      directory: dir,
      worktree: dir,
      project: {},
      $: undefined,
    });
    await plugin["chat.message"]?.(
      { sessionID: "ses_1", agent: "build", messageID: "m1" },
      {
        message: { id: "m1", role: "user", sessionID: "ses_1" },
        parts: [
          { type: "text", text: "Called the Read tool", synthetic: true },
          { type: "text", text: "rename answer to result" },
        ],
      },
    );
    await plugin.dispose?.();
    expect(turn("ses_1", 1)).toMatchObject({
      turn: 1,
      agent: "opencode",
      prompt: "rename answer to result",
    });
  });
});

describe("timewarp rewind", { timeout: SLOW }, () => {
  it("lists the turns with what changed after each, and puts the code back to before a turn, shell edits included", () => {
    sessionStart("s1");
    prompt("s1", "make the answer 42");
    // The agent's own edit tool, then a shell command that edits, creates and deletes.
    const edit = { session_id: "s1", cwd: dir, tool_name: "Edit", tool_use_id: "e1" };
    const editInput = { file_path: file("src/app.ts"), old_string: "41", new_string: "42" };
    expect(hook("pre-tool-use", { ...edit, tool_input: editInput }, dir).status).toBe(0);
    write("src/app.ts", "export const answer = 42;\n");
    expect(
      hook("post-tool-use", { ...edit, tool_input: editInput, tool_response: {} }, dir).status,
    ).toBe(0);
    shell(
      "s1",
      "b1",
      "printf 'gen\\n' > src/gen.ts && rm README.md && mkdir -p docs/deep && echo d > docs/deep/x.md && chmod 755 src/gen.ts",
    );
    prompt("s1", "now rename it");
    write("src/app.ts", "export const result = 42;\n");

    const list = tw(["rewind"]);
    expect(list.run.status, list.run.stderr).toBe(0);
    expect(list.body.session_id).toBe("s1");
    expect(turnsOf(list.body).map((t) => [t.turn, t.prompt, t.until])).toEqual([
      [1, "make the answer 42", "next_turn"],
      [2, "now rename it", "now"],
    ]);
    expect(turnsOf(list.body)[0]?.files_changed).toEqual([
      { path: "README.md", change: "deleted" },
      { path: "docs/deep/x.md", change: "added" },
      { path: "src/app.ts", change: "modified" },
      { path: "src/gen.ts", change: "added" },
    ]);
    expect(turnsOf(list.body)[1]?.files_changed).toEqual([
      { path: "src/app.ts", change: "modified" },
    ]);
    const human = runCli(["rewind"], { cwd: dir });
    expect(human.stdout).toContain("make the answer 42");
    expect(human.stdout).toContain(
      "4 files: D README.md, A docs/deep/x.md, M src/app.ts, A src/gen.ts",
    );

    const now = tree();
    const dry = tw(["rewind", "1", "--dry-run"]);
    expect(dry.run.status, dry.run.stderr).toBe(0);
    expect(dry.body).toMatchObject({ dry_run: true, operation_id: null, verified: null, turn: 1 });
    expect(dry.body.changes).toEqual([
      { path: "README.md", change: "added" },
      { path: "docs", change: "deleted" },
      { path: "docs/deep", change: "deleted" },
      { path: "docs/deep/x.md", change: "deleted" },
      { path: "src/app.ts", change: "modified" },
      { path: "src/gen.ts", change: "deleted" },
    ]);
    expect(tree()).toEqual(now);

    const opsBefore = ledgerRecords(dir).length;
    const r = tw(["rewind", "1"]);
    expect(r.run.status, r.run.stderr).toBe(0);
    expect(r.body).toMatchObject({
      turn: 1,
      dry_run: false,
      verified: { ok: true },
      undo: "timewarp rewind --undo",
    });
    expect(read("src/app.ts")).toBe("export const answer = 41;\n");
    expect(read("README.md")).toBe("# demo\n");
    expect(existsSync(file("src/gen.ts"))).toBe(false);
    expect(existsSync(file("docs"))).toBe(false);
    // One ledger operation for the whole rewind.
    const ops = ledgerRecords(dir);
    expect(ops.length).toBe(opsBefore + 1);
    expect(ops.at(-1)).toMatchObject({ id: r.body.operation_id, tool: "Rewind" });
    expect(ops.at(-1)?.affectedFiles.sort()).toEqual(
      ["README.md", "docs", "docs/deep", "docs/deep/x.md", "src/app.ts", "src/gen.ts"].sort(),
    );

    // --undo gives back exactly what the rewind replaced, modes included.
    const undo = tw(["rewind", "--undo"]);
    expect(undo.run.status, undo.run.stderr).toBe(0);
    expect(undo.body).toMatchObject({ rewind_operation_id: r.body.operation_id, dry_run: false });
    expect(tree()).toEqual(now);
    expect(errorOf(tw(["rewind", "--undo"]).body).code).toBe("NOTHING_TO_UNDO");
  });

  it("never touches what the checkpoint did not capture, excluded paths or .git", () => {
    write(".timewarp/config.json", JSON.stringify({ max_file_bytes: 64 }));
    write("big.bin", "x".repeat(100));
    spawnSync("mkfifo", [file("pipe")]);
    spawnSync("git", ["init", "-q"], { cwd: dir });
    sessionStart("s1");
    prompt("s1", "go");
    const checkpoint = turn("s1", 1).snapshot_id;
    const record = JSON.parse(
      readFileSync(join(workspacePaths(dir).snapshots, checkpoint, "snapshot.json"), "utf8"),
    ) as { skipped: { path: string; reason: string }[] };
    expect(record.skipped.map((s) => [s.path, s.reason]).sort()).toEqual([
      ["big.bin", "too_large"],
      ["pipe", "special_file"],
    ]);
    // After the checkpoint: the skipped file changes, logs and a nested repo's files appear.
    write("big.bin", "y".repeat(100));
    write("run.log", "log\n");
    write("src/app.ts", "changed\n");
    write("vendor/.git/HEAD", "ref: refs/heads/main\n");
    const r = tw(["rewind", "1"]);
    expect(r.run.status, r.run.stderr).toBe(0);
    expect(r.body.changes).toEqual([{ path: "src/app.ts", change: "modified" }]);
    expect(r.body.untouched).toEqual(["big.bin", "pipe"]);
    expect(read("src/app.ts")).toBe("export const answer = 41;\n");
    expect(read("big.bin")).toBe("y".repeat(100));
    expect(lstatSync(file("pipe")).isFIFO()).toBe(true);
    expect(read("run.log")).toBe("log\n");
    expect(read("vendor/.git/HEAD")).toBe("ref: refs/heads/main\n");
    expect(existsSync(file(".git/HEAD"))).toBe(true);
  });

  it("refuses with stable codes: unknown turn, a travel active, the workspace or the ledger locked", async () => {
    expect(errorOf(tw(["rewind", "1"]).body).code).toBe("TURN_NOT_FOUND");
    sessionStart("s1");
    prompt("s1", "one");
    expect(tw(["rewind", "2"]).body.error).toMatchObject({
      code: "TURN_NOT_FOUND",
      data: { available: [1] },
    });
    expect(errorOf(tw(["rewind", "zero"]).body).code).toBe("INVALID_INPUT");
    expect(errorOf(tw(["rewind", "--undo"]).body).code).toBe("NOTHING_TO_UNDO");
    write("src/app.ts", "later\n");

    const snap = tw(["snapshot", "create"]).body.snapshot_id as string;
    expect(tw(["travel", snap]).run.status).toBe(0);
    expect(errorOf(tw(["rewind", "1"]).body).code).toBe("REWIND_IN_PAST");
    // A prompt in the past checkpoints nothing (the tree is the travel's), and says so.
    const inPast = hook("user-prompt-submit", { session_id: "s1", cwd: dir, prompt: "p" }, dir, {
      args: ["--json"],
    });
    expect(inPast.status).toBe(0);
    expect(JSON.parse(inPast.stdout)).toMatchObject({ kind: "ok" });
    expect(JSON.parse(inPast.stdout).summary).toMatch(/no turn checkpoint: a travel is active/);
    expect(turnFiles("s1")).toEqual(["000001.json"]);
    expect(tw(["return"]).run.status).toBe(0);

    const workspace = await holdLockInChild(
      join(dir, ".timewarp", "lock"),
      "snapshot create",
      cleanups,
    );
    const locked = errorOf(tw(["rewind", "1"]).body);
    expect(locked.code).toBe("LOCKED");
    expect(locked.message).toContain("snapshot create");
    workspace.kill("SIGKILL");
    await new Promise((resolve) => workspace.once("exit", resolve));

    const ledger = await holdLockInChild(
      join(dir, ".timewarp", "history", "lock"),
      "edit_block",
      cleanups,
    );
    const ledgerLocked = errorOf(tw(["rewind", "1"]).body);
    expect(ledgerLocked.code).toBe("LOCKED");
    expect(ledgerLocked.message).toContain("edit_block");
    expect(read("src/app.ts")).toBe("later\n");
    ledger.kill("SIGKILL");
    await new Promise((resolve) => ledger.once("exit", resolve));
    expect(tw(["rewind", "1"]).run.status).toBe(0);
    expect(read("src/app.ts")).toBe("export const answer = 41;\n");
  });

  it("--undo refuses to overwrite a change made after the rewind, unless --force", () => {
    sessionStart("s1");
    prompt("s1", "one");
    write("src/app.ts", "agent's version\n");
    expect(tw(["rewind", "1"]).run.status).toBe(0);
    write("src/app.ts", "edited after the rewind\n");
    const refused = tw(["rewind", "--undo"]);
    expect(errorOf(refused.body).code).toBe("REVERT_CONFLICT");
    expect(read("src/app.ts")).toBe("edited after the rewind\n");
    expect(tw(["rewind", "--undo", "--force"]).run.status).toBe(0);
    expect(read("src/app.ts")).toBe("agent's version\n");
  });

  it("a kill -9 in the middle of a rewind leaves what `timewarp recover` completes or undoes, exactly", () => {
    sessionStart("s1");
    prompt("s1", "one");
    const checkpoint = tree();
    for (let i = 0; i < 5; i++) write(`src/f${i}.ts`, `file ${i}\n`);
    write("src/app.ts", "changed\n");
    chmodSync(file("src/f0.ts"), 0o755);
    const present = tree();
    // After the second file written: rolled back. After all files, before the record: rolled forward.
    for (const [point, expected, outcome] of [
      ["ledger:file:2", present, "rolled_back"],
      ["ledger:files:1", checkpoint, "rolled_forward"],
      ["ledger:record:1", checkpoint, "completed"],
    ] as const) {
      const killed = tw(["rewind", "1"], { TIMEWARP_CRASH_AT: point });
      // SIGKILL: no status from the bin, 137 from the tsx launcher around the sources.
      expect([null, 137], `${point}: ${killed.run.stderr}`).toContain(killed.run.status);
      // Everything else refuses to write until it is finished: the next writer completes it.
      const recovered = tw(["recover"]);
      expect(recovered.run.status, recovered.run.stderr).toBe(0);
      expect(recovered.body.ledger).toMatchObject({ outcome, tool: "Rewind" });
      expect(tree().files, point).toEqual(expected.files);
      expect(tw(["fsck"]).run.status).toBe(0);
      if (outcome !== "rolled_back") {
        // Recorded: the undo brings the present back.
        expect(tw(["rewind", "--undo"]).run.status).toBe(0);
        expect(tree().files).toEqual(present.files);
      }
    }
  });
});

describe("turns and the session-start cleanup", { timeout: SLOW }, () => {
  it("keeps the checkpoints of the last sessions that prompted (retention.turn_sessions_keep), drops the rest", () => {
    write(".timewarp/config.json", JSON.stringify({ retention: { turn_sessions_keep: 1 } }));
    sessionStart("old");
    write("src/app.ts", "v2\n");
    prompt("old", "old turn");
    const oldCheckpoint = turn("old", 1).snapshot_id;
    const end = hook("session-end", { session_id: "old", cwd: dir, reason: "exit" }, dir);
    expect(end.status).toBe(0);
    sessionStart("mid");
    // `old` ended but is the only session with turns: its checkpoint stays.
    expect(snapshots()).toContain(oldCheckpoint);
    write("src/app.ts", "v3\n");
    prompt("mid", "mid turn");
    expect(hook("session-end", { session_id: "mid", cwd: dir }, dir).status).toBe(0);
    sessionStart("new");
    // `mid` prompted last: `old`'s turns and their checkpoint go.
    expect(turnFiles("old")).toEqual([]);
    expect(snapshots()).not.toContain(oldCheckpoint);
    expect(snapshots()).toContain(turn("mid", 1).snapshot_id);
    write("src/app.ts", "v4\n");
    expect(tw(["rewind", "--session", "mid", "1"]).run.status).toBe(0);
    expect(read("src/app.ts")).toBe("v3\n");
  });
});

it("lists nothing, and says why, before any prompt", { timeout: SLOW }, () => {
  const r = runCli(["rewind"], { cwd: dir });
  expect(r.status).toBe(0);
  expect(r.stdout).toContain("no turns recorded");
  expect(tw(["rewind"]).body).toMatchObject({ session_id: null, turns: [] });
});
