import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { appendEvent, systemClock, workspacePaths } from "../src/core/index.ts";
import { applyEditBlock, recordEdits } from "../src/ledger/index.ts";
import { runSkill } from "../src/runs/index.ts";
import {
  checkpointTurn,
  createManualSnapshot,
  reportIssue,
  returnToPresent,
  startSession,
  travel,
} from "../src/timemachine/index.ts";
import { startUiServer, type UiServer } from "../src/ui/index.ts";
import { makeTempDir } from "./helpers/cli.ts";
import { writeFiles } from "./helpers/timemachine-fixtures.ts";
import { copyDesign, FAST, settings } from "./runs-helpers.ts";

/**
 * The timeline API over a small real workspace made with the library: two sessions of two
 * agents, a turn, edits by an agent's tool, timewarp's own tool and the shell, a snapshot, a
 * travel and return, an issue, a guard warning and a real SkillPilot job (tclsh).
 */
let tmp: { dir: string; cleanup: () => void };
let root: string;
let server: UiServer;
const ids = {
  snapA: "",
  agentEdit: "",
  mcpEdit: "",
  shellEdit: "",
  manual: "",
  issue: "",
  job: "",
};

interface Row {
  key: string;
  ts: string;
  kind: string;
  action?: string;
  session_id: string | null;
  turn?: number;
  files?: string[];
  link?: string;
  source?: string;
  agent_tool?: string;
  snapshot_id?: string;
  operation_id?: string;
  job_id?: string;
  issue_id?: string;
}
interface Page {
  items: Row[];
  next: string | null;
  total: number;
  head: string | null;
  truncated: boolean;
  sessions: Record<string, { agent: string | null }>;
  agents: string[];
}

async function api(query: Record<string, string> = {}, expectStatus = 200): Promise<Page> {
  const url = new URL(`${server.origin}/api/timeline`);
  for (const [k, v] of Object.entries(query)) url.searchParams.set(k, v);
  const res = await fetch(url, { headers: { authorization: `Bearer ${server.token}` } });
  expect(res.status).toBe(expectStatus);
  return (await res.json()) as Page;
}

const edit = (file: string, text: string) => {
  const before = readFileSync(join(root, file), "utf8");
  writeFileSync(join(root, file), text);
  return { file, before, after: text };
};

beforeAll(async () => {
  tmp = makeTempDir("tw-ui-timeline-");
  root = tmp.dir;
  copyDesign(root);
  writeFiles(root, { "src/a.ts": "export const a = 1;\n", "docs/notes.md": "# notes\nold\n" });
  const a = await startSession({ root, sessionId: "sess-a", agent: "claude-code", pid: null });
  ids.snapA = a.snapshot_id;
  await checkpointTurn({ root, sessionId: "sess-a", prompt: "make a two", agent: "claude-code" });
  const e1 = await recordEdits({
    root,
    sessionId: "sess-a",
    tool: "Edit",
    files: [edit("src/a.ts", "export const a = 2;\n")],
  });
  ids.agentEdit = e1.snapshotId ?? "";
  appendEvent(
    workspacePaths(root).events,
    "guard.checked",
    { action: "warn", score: 0.6, tool: "Edit", paths: ["src/a.ts"], session_id: "sess-a" },
    systemClock,
  );
  const m = await applyEditBlock(
    { root },
    { path: "docs/notes.md", searchBlock: "old", replaceBlock: "new" },
  );
  ids.mcpEdit = m.snapshotId ?? "";
  await startSession({ root, sessionId: "sess-b", agent: "codex", pid: null });
  const sh = await recordEdits({
    root,
    sessionId: "sess-b",
    tool: "shell",
    description: "sed -i s/2/3/ src/a.ts",
    files: [edit("src/a.ts", "export const a = 3;\n")],
  });
  ids.shellEdit = sh.snapshotId ?? "";
  appendEvent(
    workspacePaths(root).events,
    "shell.changed",
    { files: ["src/a.ts"], session_id: "sess-b", tool: "Bash", operations: [ids.shellEdit] },
    systemClock,
  );
  ids.manual = createManualSnapshot({ root }).id;
  travel({ root, snapshotId: ids.snapA });
  returnToPresent({ root });
  const issue = await reportIssue({
    root,
    sessionId: "sess-b",
    task_context: "make a three",
    symptom: "it took two tries",
    success_criteria: "a is 3",
  });
  ids.issue = issue.issue_id;
  const job = await runSkill({
    cwd: root,
    design: "AAA",
    skill: "summary_health",
    settings: settings(),
    timings: FAST,
  });
  ids.job = job.manifest.job_id;
  server = await startUiServer({ root, token: "test-token" });
}, 60_000);

afterAll(async () => {
  await server?.close();
  tmp?.cleanup();
});

describe("GET /api/timeline", () => {
  it("lists every kind of fact, newest first, each linking to its view", async () => {
    const page = await api({ limit: "500" });
    expect(page.total).toBe(page.items.length);
    expect(page.next).toBeNull();
    const times = page.items.map((r) => Date.parse(r.ts));
    expect(times).toEqual([...times].sort((x, y) => y - x));
    const kinds = new Set(page.items.map((r) => r.kind));
    for (const k of [
      "session",
      "turn",
      "edit",
      "snapshot",
      "travel",
      "return",
      "issue",
      "guard",
      "job",
    ])
      expect(kinds, k).toContain(k);
    const byOp = (id: string) => page.items.find((r) => r.operation_id === id);
    expect(byOp(ids.agentEdit)).toMatchObject({
      kind: "edit",
      source: "agent",
      session_id: "sess-a",
      turn: 1,
      files: ["src/a.ts"],
      link: `/edits/${ids.agentEdit}`,
    });
    expect(byOp(ids.mcpEdit)).toMatchObject({ source: "mcp", session_id: null });
    expect(byOp(ids.shellEdit)).toMatchObject({
      source: "shell",
      agent_tool: "Bash",
      session_id: "sess-b",
    });
    expect(page.items.find((r) => r.kind === "travel")?.link).toBe(`/snapshots/${ids.snapA}`);
    expect(page.items.find((r) => r.kind === "issue")).toMatchObject({
      link: `/issues/${ids.issue}`,
      session_id: "sess-b",
    });
    const jobRows = page.items.filter((r) => r.kind === "job");
    expect(jobRows.map((r) => r.action).sort()).toEqual(["finished", "started"]);
    expect(jobRows.every((r) => r.link === `/runs/${ids.job}`)).toBe(true);
    expect(page.items.find((r) => r.kind === "guard")).toMatchObject({
      action: "warn",
      session_id: "sess-a",
    });
    // a session's own snapshot is its session row, not a second snapshot row
    const snapshotRows = page.items.filter((r) => r.kind === "snapshot");
    expect(snapshotRows.map((r) => r.snapshot_id)).toContain(ids.manual);
    expect(snapshotRows.map((r) => r.snapshot_id)).not.toContain(ids.snapA);
    expect(page.sessions["sess-a"]?.agent).toBe("claude-code");
    expect(page.agents).toEqual(["claude-code", "codex"]);
    expect(new Set(page.items.map((r) => r.key)).size).toBe(page.items.length);
  });

  it("filters by agent, file glob, kind, session and time", async () => {
    const codex = await api({ agent: "codex", limit: "500" });
    expect(codex.items.length).toBeGreaterThan(0);
    expect(codex.items.every((r) => r.session_id === "sess-b")).toBe(true);
    const docs = await api({ glob: "docs/**", limit: "500" });
    expect(docs.items.map((r) => r.operation_id)).toEqual([ids.mcpEdit]);
    const edits = await api({ kind: "edit", limit: "500" });
    expect(edits.items.map((r) => r.operation_id).sort()).toEqual(
      [ids.agentEdit, ids.mcpEdit, ids.shellEdit].sort(),
    );
    const sessA = await api({ session: "sess-a", kind: "edit,guard,turn" });
    expect(sessA.items.map((r) => r.kind).sort()).toEqual(["edit", "guard", "turn"]);
    const all = await api({ limit: "500" });
    const mcp = all.items.find((r) => r.operation_id === ids.mcpEdit);
    const until = await api({ until: mcp?.ts ?? "", limit: "500" });
    expect(until.items.length).toBeGreaterThan(0);
    expect(until.items.every((r) => Date.parse(r.ts) <= Date.parse(mcp?.ts ?? ""))).toBe(true);
    expect(until.items.some((r) => r.kind === "job")).toBe(false);
    const since = await api({ since: mcp?.ts ?? "", limit: "500" });
    expect(since.total + until.total).toBeGreaterThanOrEqual(all.total);
    expect(since.items.every((r) => Date.parse(r.ts) >= Date.parse(mcp?.ts ?? ""))).toBe(true);
  });

  it("pages on the server: the pages together are the whole list, once each", async () => {
    const all = await api({ limit: "500" });
    const keys: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page: Page = await api({ limit: "3", ...(cursor === null ? {} : { cursor }) });
      expect(page.items.length).toBeLessThanOrEqual(3);
      expect(page.total).toBe(all.total);
      keys.push(...page.items.map((r) => r.key));
      cursor = page.next;
      pages++;
    } while (cursor !== null && pages < 100);
    expect(keys).toEqual(all.items.map((r) => r.key));
    expect(pages).toBe(Math.ceil(all.total / 3));
  });

  it("answers what came since the head, and refuses a bad query", async () => {
    const first = await api({ limit: "5" });
    expect((await api({ after: first.head ?? "" })).items).toEqual([]);
    const late = await recordEdits({
      root,
      sessionId: "sess-b",
      tool: "Write",
      files: [edit("docs/notes.md", "# notes\nlater\n")],
    });
    const since = await api({ after: first.head ?? "" });
    expect(since.items.map((r) => r.operation_id)).toEqual([late.snapshotId]);
    const bad = (await api({ kind: "nonsense" }, 400)) as unknown as { error: { code: string } };
    expect(bad.error.code).toBe("INVALID_INPUT");
    await api({ limit: "0" }, 400);
    await api({ since: "yesterday-ish" }, 400);
    await api({ cursor: "nope" }, 400);
  });
});

/** Server-sent events as they arrive: `{ event, id, data }` per message. */
async function* sseMessages(body: ReadableStream<Uint8Array>) {
  const decoder = new TextDecoder();
  let buffer = "";
  for await (const chunk of body) {
    buffer += decoder.decode(chunk, { stream: true });
    let end = buffer.indexOf("\n\n");
    while (end >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const msg: Record<string, string> = {};
      for (const line of block.split("\n")) {
        const colon = line.indexOf(":");
        if (colon <= 0) continue;
        msg[line.slice(0, colon)] = line.slice(colon + 1).trimStart();
      }
      if (Object.keys(msg).length > 0) yield msg;
      end = buffer.indexOf("\n\n");
    }
  }
}

describe("GET /api/stream", () => {
  it("delivers an appended bus event, and resumes after it on reconnect", async () => {
    const headers = { authorization: `Bearer ${server.token}` };
    const ac = new AbortController();
    const res = await fetch(`${server.origin}/api/stream`, { headers, signal: ac.signal });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/event-stream");
    const messages = sseMessages(res.body as ReadableStream<Uint8Array>);
    const retry = await messages.next();
    expect(retry.value).toMatchObject({ retry: "2000" });
    const ready = await messages.next();
    expect(ready.value).toMatchObject({ event: "ready" });
    appendEvent(workspacePaths(root).events, "issue.fixed", { issue_id: ids.issue }, systemClock);
    const got = await messages.next();
    expect(got.value?.event).toBe("bus");
    expect(JSON.parse(got.value?.data ?? "{}")).toMatchObject({
      type: "issue.fixed",
      data: { issue_id: ids.issue },
    });
    const id = got.value?.id ?? "";
    expect(Number(id)).toBe(readFileSync(workspacePaths(root).events).length);
    ac.abort();

    // a reconnect from before that event replays it (Last-Event-ID), then goes on live
    const readyId = ready.value?.id ?? "";
    const ac2 = new AbortController();
    const again = await fetch(`${server.origin}/api/stream`, {
      headers: { ...headers, "last-event-id": readyId },
      signal: ac2.signal,
    });
    const replay = sseMessages(again.body as ReadableStream<Uint8Array>);
    await replay.next(); // retry
    expect((await replay.next()).value).toMatchObject({ event: "ready", id: readyId });
    const replayed = await replay.next();
    expect(replayed.value).toMatchObject({ event: "bus", id });
    ac2.abort();
  }, 30_000);

  it("ends when the server closes", async () => {
    const own = await startUiServer({ root });
    const res = await fetch(`${own.origin}/api/stream`, {
      headers: { authorization: `Bearer ${own.token}` },
    });
    const messages = sseMessages(res.body as ReadableStream<Uint8Array>);
    await messages.next(); // retry
    await messages.next(); // ready
    await own.close();
    // the body ends (or errors as the socket goes): it never hangs
    const last = await messages.next().catch(() => ({ done: true }));
    expect(last.done).toBe(true);
  }, 30_000);
});
