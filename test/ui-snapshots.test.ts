import {
  chmodSync,
  existsSync,
  mkdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { applyFilePatch, parsePatch } from "../src/diff/index.ts";
import { checkpointTurn, createManualSnapshot } from "../src/timemachine/index.ts";
import { startUiServer, type UiServer } from "../src/ui/index.ts";
import { makeTempDir, runCli } from "./helpers/cli.ts";
import { readDiskTree } from "./helpers/disk-tree.ts";
import { uiCall } from "./helpers/ui-call.ts";

// The snapshot views' API against a real server on a free port: the list, one snapshot and its
// files, `snapshot diff` and one path's text diff as the CLI has them; travel then return
// through the API leave the tree byte-exact, and their documents have the CLI's shape.

const SLOW = 120_000;
const TOKEN = "snapshots-test-token";
const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

type Doc = Record<string, unknown>;

async function waitFor(check: () => boolean): Promise<void> {
  for (let i = 0; !check(); i++) {
    if (i > 3000) throw new Error("timed out waiting");
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** A workspace with snapshot `old`, then changes (modified, added, removed, chmod), then `now`. */
function workspace(): { dir: string; old: string; now: string } {
  const { dir, cleanup } = makeTempDir("tw-ui-snapshots-");
  cleanups.push(cleanup);
  const write = (rel: string, text: string) => writeFileSync(join(dir, rel), text);
  mkdirSync(join(dir, ".timewarp"));
  mkdirSync(join(dir, "src", "lib"), { recursive: true });
  write("src/a.ts", "export const a = 1;\nexport const keep = true;\n");
  write("src/lib/b.ts", "export const b = 2;\n");
  write("run.sh", "#!/bin/sh\necho hi\n");
  write("gone.md", "# soon gone\n");
  symlinkSync("src/a.ts", join(dir, "link-to-a"));
  const old = createManualSnapshot({ root: dir }).id;
  write("src/a.ts", "export const a = 10;\nexport const keep = true;\n");
  write("src/lib/c.ts", "export const c = 3;\n");
  rmSync(join(dir, "gone.md"));
  chmodSync(join(dir, "run.sh"), 0o755);
  const now = createManualSnapshot({ root: dir }).id;
  return { dir, old, now };
}

async function serve(root: string, allowActions = true): Promise<UiServer> {
  const server = await startUiServer({ root, allowActions, token: TOKEN });
  cleanups.push(() => server.close());
  return server;
}

function call(server: UiServer, path: string, body?: unknown) {
  return uiCall(server.origin, path, { token: TOKEN, body });
}

function cli(dir: string, ...args: string[]): Doc {
  const r = runCli([...args, "--json"], { cwd: dir });
  expect(r.status, r.stderr || r.stdout).toBe(0);
  return r.json() as Doc;
}

/** The shape of a document: its keys, recursively, with the type of each value. */
function shapeOf(value: unknown): unknown {
  if (Array.isArray(value)) return value.length === 0 ? [] : [shapeOf(value[0])];
  if (value === null || typeof value !== "object") return value === null ? "null" : typeof value;
  return Object.fromEntries(
    Object.entries(value)
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([k, v]) => [k, shapeOf(v)]),
  );
}

describe("the snapshot views' API", () => {
  it(
    "lists snapshots newest first as `snapshot list` does, paged; shows one as `snapshot show`",
    async () => {
      const { dir, old, now } = workspace();
      const server = await serve(dir, false);
      const listed = cli(dir, "snapshot", "list").snapshots as Doc[];
      const all = await call(server, "/api/snapshots");
      expect(all.json).toMatchObject({ total: 2, next: null, corrupt: [] });
      expect(all.json.items).toEqual([...listed].reverse());
      const first = await call(server, "/api/snapshots?limit=1");
      expect((first.json.items as Doc[])[0]?.snapshot_id).toBe(now);
      const second = await call(server, `/api/snapshots?limit=1&cursor=${first.json.next}`);
      expect(second.json).toMatchObject({
        items: [{ snapshot_id: old, origin: "manual" }],
        next: null,
      });

      const shown = await call(server, `/api/snapshots/${old}`);
      expect(shown.json.snapshot).toEqual(cli(dir, "snapshot", "show", old));
      expect(shown.json.turns).toEqual([]);
      const missing = await call(server, "/api/snapshots/s_nope");
      expect(missing.status).toBe(404);
      expect((missing.json.error as Doc).code).toBe("SNAPSHOT_NOT_FOUND");
    },
    SLOW,
  );

  it("pages a snapshot's files from its manifest, filtered by a glob", async () => {
    const { dir, old } = workspace();
    const server = await serve(dir, false);
    const files = await call(
      server,
      `/api/snapshots/${old}/files?glob=${encodeURIComponent("src/**/*.ts")}`,
    );
    expect(files.json).toMatchObject({ total: 2, next: null });
    expect(files.json.items).toEqual([
      { path: "src/a.ts", type: "file", mode: "0644", size: 46 },
      { path: "src/lib/b.ts", type: "file", mode: "0644", size: 20 },
    ]);
    const page = await call(server, `/api/snapshots/${old}/files?limit=2`);
    const rows = page.json.items as Doc[];
    expect(rows).toHaveLength(2);
    expect(page.json.total).toBe(7); // 4 files, a symlink, src/ and src/lib/
    const rest = await call(
      server,
      `/api/snapshots/${old}/files?limit=10&cursor=${page.json.next}`,
    );
    expect((rest.json.items as Doc[]).length).toBe(5);
    const link = (rest.json.items as Doc[]).concat(rows).find((e) => e.path === "link-to-a");
    expect(link).toMatchObject({ type: "symlink", target: "src/a.ts" });
  });

  it(
    "compares as `snapshot diff` does, and gives one path's diff that turns one side into the other",
    async () => {
      const { dir, old, now } = workspace();
      writeFileSync(join(dir, "src", "lib", "b.ts"), "export const b = 20;\n");
      const server = await serve(dir, false);
      const between = await call(server, `/api/snapshots/${old}/diff?to=${now}`);
      expect(between.json).toEqual(cli(dir, "snapshot", "diff", old, now));
      expect(between.json).toMatchObject({
        added: ["src/lib/c.ts"],
        removed: ["gone.md"],
        modified: ["src/a.ts"],
        mode_changed: [{ path: "run.sh", before: "644", after: "755" }],
      });
      const present = await call(server, `/api/snapshots/${old}/diff`);
      expect(present.json).toEqual(cli(dir, "snapshot", "diff", old));
      expect(present.json.modified).toEqual(["src/a.ts", "src/lib/b.ts"]);

      const oldA = "export const a = 1;\nexport const keep = true;\n";
      const file = await call(server, `/api/snapshots/${old}/diff/file?to=${now}&path=src/a.ts`);
      expect(file.json).toMatchObject({ from: old, to: now, path: "src/a.ts", omitted: null });
      const [patch] = parsePatch(String(file.json.diff));
      expect(patch).toBeDefined();
      if (patch === undefined) return;
      const applied = applyFilePatch(Buffer.from(oldA), patch);
      expect(Buffer.from(applied ?? []).toString()).toBe(
        readFileSync(join(dir, "src", "a.ts"), "utf8"),
      );
      // Against the workspace: read from disk, not from the store.
      const live = await call(server, `/api/snapshots/${old}/diff/file?path=src/lib/b.ts`);
      expect(live.json.diff).toContain("+export const b = 20;");
      const gone = await call(server, `/api/snapshots/${old}/diff/file?to=${now}&path=gone.md`);
      expect(gone.json.diff).toContain("-# soon gone");
      const none = await call(server, `/api/snapshots/${old}/diff/file?to=${now}&path=nowhere`);
      expect(none.status).toBe(404);
    },
    SLOW,
  );

  it(
    "travels and returns through the API: the tree byte-exact after, the CLI's documents",
    async () => {
      const { dir, old } = workspace();
      writeFileSync(join(dir, "uncaptured-yet.txt"), "made after the last snapshot\n");
      const original = readDiskTree(dir);
      const server = await serve(dir);

      const preview = await call(server, `/api/snapshots/${old}/travel`, { dry_run: true });
      expect(preview.json).toMatchObject({
        dry_run: true,
        snapshot_id: old,
        status: { mode: "present" },
      });
      expect(preview.json.difference).toEqual(cli(dir, "snapshot", "diff", old));
      expect(readDiskTree(dir)).toEqual(original);

      const went = await call(server, `/api/snapshots/${old}/travel`, {});
      expect(went.status, JSON.stringify(went.json)).toBe(200);
      expect(went.json).toMatchObject({ mode: "past", snapshot_id: old });
      expect(readFileSync(join(dir, "gone.md"), "utf8")).toBe("# soon gone\n");
      const status = await call(server, "/api/status");
      expect(status.json).toMatchObject({ mode: "past", current_snapshot_id: old });

      // Travel from the past is refused with the library's code.
      const nested = await call(server, `/api/snapshots/${old}/travel`, {});
      expect(nested.status).toBe(409);
      expect((nested.json.error as Doc).code).toBe("NESTED_TRAVEL");

      const back = await call(server, "/api/return", {});
      expect(back.status, JSON.stringify(back.json)).toBe(200);
      expect(back.json).toMatchObject({ mode: "present", snapshot_id: old });
      const after = readDiskTree(dir);
      expect([...after.tree.keys()].sort()).toEqual([...original.tree.keys()].sort());
      for (const [path, entry] of original.tree) expect(after.tree.get(path), path).toEqual(entry);
      expect(after.dirs).toEqual(original.dirs);

      const again = await call(server, "/api/return", {});
      expect((again.json.error as Doc).code).toBe("NOT_IN_PAST");

      // The same two steps through the CLI: the documents have the same shape.
      const cliTravel = cli(dir, "travel", old);
      const cliReturn = cli(dir, "return");
      expect(shapeOf(went.json)).toEqual(shapeOf(cliTravel));
      expect(shapeOf(back.json)).toEqual(shapeOf(cliReturn));
      expect(readDiskTree(dir)).toEqual(original);
    },
    SLOW,
  );

  it(
    "rewinds to before a turn as `timewarp rewind` does, the turn found from its snapshot",
    async () => {
      const { dir } = workspace();
      const turn = await checkpointTurn({ root: dir, sessionId: "sess-ui", prompt: "make a 100" });
      const at = turn.turn?.snapshot_id ?? "";
      writeFileSync(join(dir, "src", "a.ts"), "export const a = 100;\n");
      const server = await serve(dir);
      const shown = await call(server, `/api/snapshots/${at}`);
      expect(shown.json.turns).toMatchObject([
        { session_id: "sess-ui", turn: 1, prompt: "make a 100" },
      ]);
      const body = { turn: "1", session_id: "sess-ui" };
      const preview = await call(server, "/api/rewind", { ...body, dry_run: true });
      const cliPreview = cli(dir, "rewind", "1", "--session", "sess-ui", "--dry-run");
      const noTime = (d: Doc) => ({ ...d, duration_ms: 0 });
      expect(noTime(preview.json)).toEqual(noTime(cliPreview));
      expect(preview.json.changes).toEqual([{ path: "src/a.ts", change: "modified" }]);
      const done = await call(server, "/api/rewind", body);
      expect(done.status, JSON.stringify(done.json)).toBe(200);
      expect(done.json).toMatchObject({ dry_run: false, turn: 1, verified: { ok: true } });
      expect(readFileSync(join(dir, "src", "a.ts"), "utf8")).toBe(
        "export const a = 10;\nexport const keep = true;\n",
      );

      // and taken back: the preview is the CLI's dry run, the undo puts the file back
      const undoPreview = await call(server, "/api/rewind/undo", { dry_run: true });
      expect(undoPreview.json).toEqual(cli(dir, "rewind", "--undo", "--dry-run"));
      expect(undoPreview.json).toMatchObject({ dry_run: true, affected_files: ["src/a.ts"] });
      const undone = await call(server, "/api/rewind/undo", {});
      expect(undone.status, JSON.stringify(undone.json)).toBe(200);
      expect(undone.json).toMatchObject({ dry_run: false, affected_files: ["src/a.ts"] });
      expect(readFileSync(join(dir, "src", "a.ts"), "utf8")).toBe("export const a = 100;\n");
      const again = await call(server, "/api/rewind/undo", {});
      expect(again.status).toBe(409);
      expect((again.json.error as Doc).code).toBe("NOTHING_TO_UNDO");
    },
    SLOW,
  );

  it(
    "runs a travel in the CLI's own process: the server keeps answering while it works",
    async () => {
      const { dir, old } = workspace();
      const server = await serve(dir);
      // The CLI the server starts inherits this: each state write of the travel waits 2 s.
      // An action run inside the server's process would block its event loop (and this test's,
      // since the server is in it) until the travel ends; so would a GET behind it.
      process.env.TIMEWARP_PAUSE_AT = "state-write:2000";
      cleanups.push(() => {
        delete process.env.TIMEWARP_PAUSE_AT;
      });
      let travelled = false;
      const went = call(server, `/api/snapshots/${old}/travel`, {}).then((r) => {
        travelled = true;
        return r;
      });
      // the travel holds the workspace's lock while it works
      await waitFor(() => existsSync(join(dir, ".timewarp", "lock")));
      const status = await call(server, "/api/status");
      expect(status.status).toBe(200);
      expect(travelled).toBe(false);
      const done = await went;
      expect(done.status, JSON.stringify(done.json)).toBe(200);
      expect(done.json).toMatchObject({ mode: "past", snapshot_id: old });
    },
    SLOW,
  );

  it("refuses travel, return and rewind on a read-only server (403)", async () => {
    const { dir, old } = workspace();
    const server = await serve(dir, false);
    const before = readDiskTree(dir);
    for (const [path, body] of [
      [`/api/snapshots/${old}/travel`, {}],
      ["/api/return", {}],
      ["/api/rewind", { turn: "1" }],
      ["/api/rewind/undo", {}],
    ] as const) {
      const r = await call(server, path, body);
      expect(r.status, path).toBe(403);
      expect((r.json.error as Doc).code).toBe("ACTIONS_DISABLED");
    }
    expect(readDiskTree(dir)).toEqual(before);
  });
});
