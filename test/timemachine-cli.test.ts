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

  it("session list: the records, with the agent the hooks named and when a session ended", () => {
    const ws = workspace();
    expect(tw(ws, "session", "list").json()).toEqual({ sessions: [] });
    const payload = (event: string) =>
      JSON.stringify({ session_id: "codex-1", cwd: ws, hook_event_name: event, turn_id: "t1" });
    const env = { TIMEWARP_WATCH: "0" };
    const start = runCli(["hook", "session-start", "--agent", "codex"], {
      cwd: ws,
      input: payload("SessionStart"),
      env,
    });
    expect(start.status, start.stderr).toBe(0);
    expect(tw(ws, "session", "start", "--session-id", "cli-2").status).toBe(0);
    const live = tw(ws, "session", "list").json() as {
      sessions: { session_id: string; agent?: string; ended_at?: string | null }[];
    };
    expect(live.sessions.map((s) => s.session_id).sort()).toEqual(["cli-2", "codex-1"]);
    const codex = live.sessions.find((s) => s.session_id === "codex-1");
    expect(codex).toMatchObject({ agent: "codex" });
    expect(codex?.ended_at ?? null).toBeNull();
    const end = runCli(["hook", "session-end", "--agent", "codex"], {
      cwd: ws,
      input: payload("SessionEnd"),
      env,
    });
    expect(end.status, end.stderr).toBe(0);
    const after = tw(ws, "session", "list").json() as typeof live;
    expect(after.sessions.find((s) => s.session_id === "codex-1")?.ended_at).toEqual(
      expect.any(String),
    );
    const human = runCli(["session", "list"], { cwd: ws });
    expect(human.stdout).toMatch(/codex-1 {2}codex {2}pid \d+ .*ended /);
    expect(human.stdout).toMatch(/cli-2 {2}- .*not ended/);
  });

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
