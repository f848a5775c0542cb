import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { makeTempDir, REPO_ROOT, runCli } from "./helpers/cli.ts";

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.splice(0).reverse()) c();
});

function workspace(): string {
  const t = makeTempDir("tw-cli-tm-");
  cleanups.push(t.cleanup);
  writeFileSync(join(t.dir, "a.txt"), "past\n");
  return t.dir;
}

const tw = (cwd: string, ...args: string[]) => runCli(["--json", ...args], { cwd });

describe("timewarp CLI: the time machine", () => {
  it("session list: each session with its agent, live until its end; reads only", () => {
    const ws = workspace();
    expect(tw(ws, "session", "list").json()).toEqual({ sessions: [] });
    expect(readdirSync(ws)).toEqual(["a.txt"]); // no store made by a listing
    const payload = (event: string) =>
      JSON.stringify({ session_id: "s-list", cwd: ws, hook_event_name: event });
    const hook = (event: string, name: string) =>
      runCli(["hook", event, "--agent", "codex"], { cwd: ws, input: payload(name) });
    expect(hook("session-start", "SessionStart").status).toBe(0);
    const started = tw(ws, "session", "list").json() as { sessions: Record<string, unknown>[] };
    expect(started.sessions).toEqual([
      expect.objectContaining({ session_id: "s-list", agent: "codex", ended_at: null }),
    ]);
    expect(hook("session-end", "SessionEnd").status).toBe(0);
    const ended = tw(ws, "session", "list").json() as { sessions: Record<string, unknown>[] };
    expect(ended.sessions).toEqual([
      expect.objectContaining({
        session_id: "s-list",
        agent: "codex",
        live: false,
        ended_at: expect.any(String),
      }),
    ]);
    const human = runCli(["session", "list"], { cwd: ws });
    expect(human.stdout).toMatch(/^s-list {2}codex {2}ended {2}/);
  });

  it("session start, issue report/list/get/fix, travel, return, status — seed field names, one JSON document each", () => {
    const ws = workspace();
    const start = tw(ws, "session", "start", "--session-id", "cli-1", "--task-hint", "hint");
    expect(start.status).toBe(0);
    const s = start.json() as { snapshot_id: string; session_id: string; files: number };
    expect(s).toMatchObject({ session_id: "cli-1", files: 1 });

    const transcript = join(ws, "chat.txt");
    writeFileSync(transcript, "User: deploy with password=hunter2secret\nAssistant: done\n");
    const rep = tw(
      ws,
      "issue",
      "report",
      "--task-context",
      "deploy",
      "--symptom",
      "token=abcdef123456 leaked",
      "--success-criteria",
      "deploy in one try",
      "--transcript",
      transcript,
    );
    expect(rep.status).toBe(0);
    const r = rep.json() as { ok: boolean; issue_id: string; snapshot_id: string };
    expect(r).toMatchObject({ ok: true, snapshot_id: s.snapshot_id });
    const dir = join(ws, ".timewarp", "issues", r.issue_id);
    expect(readdirSync(dir).sort()).toEqual(["chat.md", "experiment.md", "issue.json"]);
    const issue = JSON.parse(readFileSync(join(dir, "issue.json"), "utf8"));
    expect(issue).toMatchObject({
      issue_id: r.issue_id,
      status: "open",
      snapshot_id: s.snapshot_id,
      chat_file: "chat.md",
      experiment_file: "experiment.md",
      symptom: "token=***REDACTED*** leaked",
    });
    expect(readFileSync(join(dir, "chat.md"), "utf8")).toContain(
      "[user] deploy with password=***REDACTED***",
    );
    expect(readFileSync(join(dir, "experiment.md"), "utf8")).toContain(
      `- snapshot_id: ${s.snapshot_id}\n\n## Success Criteria\ndeploy in one try`,
    );

    expect(tw(ws, "issue", "list").json()).toMatchObject({
      status: "open",
      issues: [{ issue_id: r.issue_id, status: "open" }],
    });
    expect(tw(ws, "issue", "get", r.issue_id).json()).toMatchObject({
      success_criteria: "deploy in one try",
      chat_path: join(dir, "chat.md"),
    });

    writeFileSync(join(ws, "a.txt"), "present\n");
    const t = tw(ws, "travel", s.snapshot_id).json() as { backup_path: string; mode: string };
    expect(t.mode).toBe("past");
    expect(readFileSync(join(ws, "a.txt"), "utf8")).toBe("past\n");
    expect(tw(ws, "status").json()).toMatchObject({
      mode: "past",
      current_snapshot_id: s.snapshot_id,
      backup_path: t.backup_path,
    });
    const nested = tw(ws, "travel", s.snapshot_id);
    expect(nested.status).toBe(1);
    expect(nested.json()).toMatchObject({ error: { code: "NESTED_TRAVEL" } });
    expect(tw(ws, "return").json()).toMatchObject({ mode: "present", patch_path: null });
    expect(readFileSync(join(ws, "a.txt"), "utf8")).toBe("present\n");
    expect(tw(ws, "issue", "fix", r.issue_id).json()).toMatchObject({ status: "fixed" });
    expect(tw(ws, "issue", "list").json()).toMatchObject({ issues: [] });
    expect(tw(ws, "issue", "list", "--status", "all").json()).toMatchObject({
      issues: [{ status: "fixed" }],
    });
  }, 90_000);

  it("errors: stable codes, the JSON error document, non-zero exits", () => {
    const ws = workspace();
    const cases: [string[], string][] = [
      [
        ["issue", "report", "--task-context", "t", "--symptom", "s", "--success-criteria", "c"],
        "NO_SESSION_SNAPSHOT",
      ],
      [["issue", "get", "../../etc/passwd"], "INVALID_ISSUE_ID"],
      [["issue", "get", "i_20260101_000000_abcdef"], "ISSUE_NOT_FOUND"],
      [["return"], "NOT_IN_PAST"],
      [["travel", "s_20260101_000000_abcdef"], "SNAPSHOT_NOT_FOUND"],
      [["recover"], "NOTHING_TO_RECOVER"],
      [["issue", "report", "--symptom", "s"], "INVALID_INPUT"],
    ];
    for (const [args, code] of cases) {
      const r = tw(ws, ...args);
      expect(r.status, args.join(" ")).not.toBe(0);
      expect(r.json(), args.join(" ")).toMatchObject({ error: { code } });
    }
  }, 90_000);

  it("the 7-step optimization protocol walk-through runs end to end (examples/walkthrough.sh)", () => {
    const ws = makeTempDir("tw-walk-");
    cleanups.push(ws.cleanup);
    // As the README runs it: `bash examples/walkthrough.sh`, on this checkout's bin (no TIMEWARP)
    const { TIMEWARP: _ignored, ...env } = process.env;
    const r = spawnSync("bash", [join(REPO_ROOT, "examples", "walkthrough.sh"), ws.dir], {
      encoding: "utf8",
      env: { ...env, NO_COLOR: "1" },
      timeout: 120_000,
    });
    expect(r.status, r.stderr + r.stdout).toBe(0);
    for (let step = 1; step <= 7; step++) expect(r.stdout).toContain(`== ${step}. `);
    expect(r.stdout).toContain("reproduced: 'accented titles keep their letters' fails");
    expect(r.stdout).toContain("the present's own changes are back");
    expect(r.stdout).toMatch(/experiment patch \(1 files\): .*experiment-\d{8}_\d{6}\.patch/);
    expect(r.stdout).toContain("walkthrough complete");
    const issues = readdirSync(join(ws.dir, ".timewarp", "issues"));
    const experiment = readFileSync(
      join(ws.dir, ".timewarp", "issues", issues[0] ?? "", "experiment.md"),
      "utf8",
    );
    expect(experiment).toContain("node --test: 3 pass, 0 fail");
  }, 150_000);
});
