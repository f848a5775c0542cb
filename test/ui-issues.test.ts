import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  fixIssue,
  getIssue,
  listIssuesChecked,
  reportIssue,
  returnToPresent,
  startSession,
  travel,
} from "../src/timemachine/index.ts";
import { startUiServer, type UiServer } from "../src/ui/index.ts";
import { makeTempDir, runCli } from "./helpers/cli.ts";
import { uiGet } from "./helpers/ui-call.ts";

// A password under a name that says so: redacted by the context rules, whatever the detector.
const SECRET = "Zr8vK2qLm5Xw9Tb3";

let tmp: { dir: string; cleanup: () => void };
let server: UiServer;
let ids: { open: string; fixed: string };
let snapshotId: string;
/** `issue list --status all --json`, run before the server starts (a sync child would stall it). */
let cliList: { issues: unknown[] };

/** A GET of the API with the server's token. */
const api = (path: string) => uiGet(server, path);

beforeAll(async () => {
  tmp = makeTempDir("tw-ui-issues-");
  const root = tmp.dir;
  writeFileSync(join(root, "app.txt"), "one\n");
  const transcript = join(root, "t.jsonl");
  const line = (role: "user" | "assistant", content: string) =>
    JSON.stringify({ type: role, message: { role, content } });
  writeFileSync(
    transcript,
    [
      line("user", `connect with PGPASSWORD=${SECRET} and fix <b>app</b>`),
      line("assistant", "I changed app.txt.\n\nThe test still fails."),
    ].join("\n"),
  );
  const session = await startSession({ root, sessionId: "ui-1", pid: null });
  snapshotId = session.snapshot_id;
  const open = await reportIssue({
    root,
    task_context: "make app print two",
    symptom: "three retries <script>alert(1)</script>",
    success_criteria: "app.txt says two",
    transcriptPath: transcript,
  });
  const fixed = await reportIssue({
    root,
    task_context: "second",
    symptom: "flaky",
    success_criteria: "green",
    transcriptPath: transcript,
  });
  fixIssue({ root, issueId: fixed.issue_id });
  // an experiment in the past, kept as a patch in the open issue's folder
  travel({ root, snapshotId });
  writeFileSync(join(root, "app.txt"), "two\n");
  returnToPresent({ root, savePatch: open.issue_id });
  ids = { open: open.issue_id, fixed: fixed.issue_id };
  const cli = runCli(["--json", "issue", "list", "--status", "all"], { cwd: root });
  expect(cli.status).toBe(0);
  cliList = cli.json() as typeof cliList;
  server = await startUiServer({ root, token: "t".repeat(32) });
}, 60_000);

afterAll(async () => {
  await server?.close();
  tmp?.cleanup();
});

describe("the issues API", () => {
  it("lists what `issue list --status all --json` lists, newest first, paged", async () => {
    const all = await api("/api/issues?status=all");
    expect(all.status).toBe(200);
    const doc = all.json();
    expect(doc.items).toEqual(cliList.issues);
    expect(doc.items).toEqual(listIssuesChecked({ root: tmp.dir, status: "all" }).issues);
    expect(doc.total).toBe(2);
    const first = (await api("/api/issues?status=all&limit=1")).json();
    expect(first.items).toHaveLength(1);
    expect(first.next).not.toBeNull();
    const second = (await api(`/api/issues?status=all&limit=1&cursor=${first.next}`)).json();
    expect([...first.items, ...second.items]).toEqual(doc.items);
    expect(second.next).toBeNull();
    const open = (await api("/api/issues?status=open")).json();
    expect(open.items.map((i: { issue_id: string }) => i.issue_id)).toEqual([ids.open]);
    expect((await api("/api/issues?limit=0")).status).toBe(400);
  });

  it("gives issue.json, the chat by role, experiment.md and the saved patch", async () => {
    const res = await api(`/api/issues/${ids.open}`);
    expect(res.status).toBe(200);
    const doc = res.json();
    expect(doc.issue).toEqual(getIssue({ root: tmp.dir, issueId: ids.open }));
    expect(JSON.parse(doc.raw).issue_id).toBe(ids.open);
    expect(doc.chat.header.session_id).toBe("ui-1");
    expect(doc.chat.entries.map((e: { kind: string }) => e.kind)).toEqual(["user", "assistant"]);
    expect(doc.chat.entries[1].text).toBe("I changed app.txt.\n\nThe test still fails.");
    expect(doc.experiment).toContain(snapshotId);
    expect(doc.patches).toHaveLength(1);
    expect(doc.patches[0].name).toMatch(/^experiment-.*\.patch$/);
    expect(doc.patches[0].text).toContain("-one\n+two");
  });

  it("never answers with the secret of the transcript: the chat is the redacted one", async () => {
    expect(leaksSecret((await api(`/api/issues/${ids.open}`)).body)).toBe(false);
    expect(leaksSecret((await api("/api/issues?status=all")).body)).toBe(false);
    const chat = (await api(`/api/issues/${ids.open}`)).json().chat;
    expect(chat.entries[0].text).toContain("***REDACTED***");
    expect(chat.text).toContain("***REDACTED***");
  });

  it("answers an unknown or malformed id with the library's code", async () => {
    const missing = await api("/api/issues/i_20200101_000000_aaaaaa");
    expect(missing.status).toBe(404);
    expect(missing.json().error.code).toBe("ISSUE_NOT_FOUND");
    const bad = await api("/api/issues/..%2F..%2Fetc");
    expect(bad.json().error.code).toBe("INVALID_ISSUE_ID");
  });
});

function leaksSecret(text: string): boolean {
  return (
    text.includes(SECRET) || text.includes(SECRET.slice(0, 8)) || text.includes(SECRET.slice(8))
  );
}
