import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { makeTempDir, runCli } from "./helpers/cli.ts";
import { readTree, treeDiff } from "./helpers/timemachine-fixtures.ts";

/**
 * Issue 16, class 4 (edits ignore the time machine's state) and class 9 (defaults that destroy
 * the user's work: past work dropped by return, hand-made snapshots cleaned up, `.git` deleted
 * by the ledger). Real CLI, real processes, a real kill -9 for the interrupted transition.
 */

let tmp: ReturnType<typeof makeTempDir>;
let ws: string;
beforeEach(() => {
  tmp = makeTempDir("tw-tm-edits-");
  ws = join(tmp.dir, "ws");
  mkdirSync(ws);
  writeFileSync(join(ws, "a.txt"), "v1\n");
});
afterEach(() => tmp.cleanup());

const tw = (args: string[], options: { input?: string; env?: NodeJS.ProcessEnv } = {}) =>
  runCli([...args, "--json"], { cwd: ws, ...options });
const ok = <T>(args: string[], options: { input?: string; env?: NodeJS.ProcessEnv } = {}): T => {
  const r = tw(args, options);
  expect(r.status, `${args.join(" ")}: ${r.stdout}${r.stderr}`).toBe(0);
  return r.json() as T;
};
const errorCode = (args: string[], options: { input?: string } = {}): string => {
  const r = tw(args, options);
  expect(r.status, `${args.join(" ")} must fail: ${r.stdout}`).not.toBe(0);
  return (r.json() as { error: { code: string } }).error.code;
};
const snapshot = () => ok<{ snapshot_id: string }>(["snapshot", "create"]).snapshot_id;

describe("while a transition awaits recover, every write refuses", () => {
  it("edits, reverts, snapshot create and the PreToolUse of an edit tool refuse; reads work; recover then finishes", () => {
    const s = snapshot();
    const op = ok<{ snapshotId: string }>(["edit", "whole", "a.txt", "--content-file", "-"], {
      input: "v2\n",
    }).snapshotId;
    const killed = tw(["travel", s], { env: { TIMEWARP_CRASH_AT: "travel:journal-restore:1" } });
    expect(killed.status, "the travel must have died").not.toBe(0);

    expect(errorCode(["edit", "whole", "b.txt", "--content-file", "-"], { input: "x" })).toBe(
      "TRANSITION_INTERRUPTED",
    );
    expect(existsSync(join(ws, "b.txt"))).toBe(false);
    expect(errorCode(["edit", "delete", "a.txt"])).toBe("TRANSITION_INTERRUPTED");
    expect(errorCode(["revert", op])).toBe("TRANSITION_INTERRUPTED");
    expect(errorCode(["snapshot", "create"])).toBe("TRANSITION_INTERRUPTED");
    expect(errorCode(["session", "start"])).toBe("TRANSITION_INTERRUPTED");
    // reads still answer
    expect(ok<{ transition: { kind: string } }>(["status"]).transition.kind).toBe("travel");
    expect(ok<{ history: unknown[] }>(["history"]).history).toHaveLength(1);
    // an agent's own edit tool is denied before it writes (the JSON decision, exit 0)
    const pre = runCli(["hook", "pre-tool-use"], {
      cwd: ws,
      input: JSON.stringify({
        session_id: "sess-1",
        hook_event_name: "PreToolUse",
        tool_name: "Write",
        tool_use_id: "tu-1",
        tool_input: { file_path: join(ws, "c.txt"), content: "c" },
        cwd: ws,
      }),
    });
    expect(pre.status).toBe(0);
    expect(JSON.parse(pre.stdout).hookSpecificOutput).toMatchObject({
      permissionDecision: "deny",
      permissionDecisionReason: expect.stringContaining("TRANSITION_INTERRUPTED"),
    });

    expect(ok<{ outcome: string }>(["recover"]).outcome).toBe("travel_finished");
    expect(readFileSync(join(ws, "a.txt"), "utf8")).toBe("v1\n");
  }, 300_000);
});

describe("edits during a travel are recorded as past and kept by return", () => {
  it("the record, the result and history say past; a plain return keeps the work as a binary-safe patch", () => {
    const s = snapshot();
    writeFileSync(join(ws, "gone.txt"), "present only\n"); // not in the snapshot
    ok(["edit", "whole", "a.txt", "--content-file", "-"], { input: "present\n" });
    const t = ok<{ backup_id: string }>(["travel", s]);

    const edit = ok<{ timeline?: string; snapshotId: string }>(
      ["edit", "whole", "a.txt", "--content-file", "-"],
      { input: "experiment\n" },
    );
    expect(edit.timeline).toBe("past");
    const bin = Buffer.from([0, 1, 2, 255, 254, 0, 10, 13]);
    writeFileSync(join(tmp.dir, "bin"), bin);
    ok(["edit", "whole", "new.bin", "--content-file", join(tmp.dir, "bin")]);
    const history = ok<{
      history: { id: string; timeline?: string; travel?: { snapshotId: string } }[];
    }>(["history"]);
    const item = history.history.find((h) => h.id === edit.snapshotId);
    expect(item?.timeline).toBe("past");
    expect(item?.travel?.snapshotId).toBe(s);
    const past = readTree(ws);

    const back = ok<{ past_work_path: string | null; past_work_files: number }>(["return"]);
    expect(back.past_work_path).toBe(join(ws, ".timewarp", "past-work", `${t.backup_id}.patch`));
    expect(back.past_work_files).toBe(2);
    expect(readFileSync(join(ws, "a.txt"), "utf8")).toBe("present\n");
    const meta = JSON.parse(
      readFileSync(join(ws, ".timewarp", "past-work", `${t.backup_id}.json`), "utf8"),
    ) as { snapshot_id: string; files: string[] };
    expect(meta.snapshot_id).toBe(s);
    expect(meta.files.sort()).toEqual(["a.txt", "new.bin"]);
    const status = ok<{ past_work: { patch_path: string; files: number }[] }>(["status"]);
    expect(status.past_work).toEqual([
      expect.objectContaining({ patch_path: back.past_work_path, files: 2 }),
    ]);

    // The patch brings the past tree back exactly: on an export of the snapshot, git apply.
    const out = join(tmp.dir, "export");
    ok(["snapshot", "export", s, out]);
    execFileSync("git", ["apply", "--binary", back.past_work_path ?? ""], {
      cwd: join(out, "workspace"),
    });
    expect(treeDiff(readTree(join(out, "workspace")), past)).toEqual([]);
  }, 300_000);

  it("a return after an untouched past writes nothing and says so", () => {
    const s = snapshot();
    ok(["travel", s]);
    const back = ok<{ past_work_path: string | null }>(["return"]);
    expect(back.past_work_path).toBeNull();
    expect(existsSync(join(ws, ".timewarp", "past-work"))).toBe(false);
  }, 300_000);
});

describe("the ledger never writes into a version-control folder unless forced", () => {
  it("refuses .git, inside .git, a folder holding a nested .git, a patch touching .git; --force does it", () => {
    execFileSync("git", ["init", "-q", ws]);
    mkdirSync(join(ws, "sub", ".hg"), { recursive: true });
    writeFileSync(join(ws, "sub", ".hg", "store"), "x");
    const before = readTree(join(ws, ".git"));
    expect(errorCode(["edit", "delete", ".git"])).toBe("PROTECTED_PATH");
    expect(errorCode(["edit", "delete", ".git", "--dry-run"])).toBe("PROTECTED_PATH");
    expect(errorCode(["edit", "whole", ".git/config", "--content-file", "-"], { input: "" })).toBe(
      "PROTECTED_PATH",
    );
    expect(errorCode(["edit", "mkdir", ".svn"])).toBe("PROTECTED_PATH");
    expect(errorCode(["edit", "delete", "sub"])).toBe("PROTECTED_PATH");
    const patch = "--- /dev/null\n+++ b/.git/hooks/x\n@@ -0,0 +1 @@\n+evil\n";
    writeFileSync(join(tmp.dir, "p.diff"), patch);
    expect(errorCode(["edit", "patch", join(tmp.dir, "p.diff")])).toBe("PROTECTED_PATH");
    expect(treeDiff(readTree(join(ws, ".git")), before)).toEqual([]);
    expect(existsSync(join(ws, "sub", ".hg", "store"))).toBe(true);

    ok(["edit", "delete", "sub", "--force"]);
    expect(existsSync(join(ws, "sub"))).toBe(false);
  }, 300_000);
});

describe("hand-made snapshots are the user's", () => {
  it("a session start keeps them; pin, retention, unpin and delete", () => {
    const m1 = snapshot();
    const m2 = snapshot();
    const first = ok<{ cleanup: { deleted_snapshots: string[] } }>(["session", "start"]);
    expect(first.cleanup.deleted_snapshots).toEqual([]);
    const list = ok<{ snapshots: { snapshot_id: string; origin: string; pinned: boolean }[] }>([
      "snapshot",
      "list",
    ]).snapshots;
    expect(list.filter((x) => x.origin === "manual").map((x) => x.snapshot_id)).toEqual([m1, m2]);

    // retention: keep only the newest hand-made one; a pinned one stays whatever the retention
    ok(["snapshot", "pin", m1]);
    const config = JSON.parse(readFileSync(join(ws, ".timewarp", "config.json"), "utf8"));
    config.retention.manual_snapshots_keep = 1;
    writeFileSync(join(ws, ".timewarp", "config.json"), JSON.stringify(config));
    const m3 = snapshot();
    const second = ok<{ cleanup: { deleted_snapshots: string[] } }>(["session", "start"]);
    expect(second.cleanup.deleted_snapshots).toContain(m2);
    expect(second.cleanup.deleted_snapshots).not.toContain(m1);
    expect(second.cleanup.deleted_snapshots).not.toContain(m3);

    expect(errorCode(["snapshot", "delete", m1])).toBe("SNAPSHOT_PINNED");
    ok(["snapshot", "unpin", m1]);
    ok(["snapshot", "delete", m1]);
    expect(errorCode(["snapshot", "show", m1])).toBe("SNAPSHOT_NOT_FOUND");
  }, 300_000);
});
