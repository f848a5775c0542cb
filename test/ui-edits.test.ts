import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { applyEditBlock, applyWholeFileEdit } from "../src/ledger/index.ts";
import { startUiServer, type UiServer } from "../src/ui/index.ts";
import { makeTempDir, runCli } from "./helpers/cli.ts";
import { readDiskTree } from "./helpers/disk-tree.ts";
import { uiCall } from "./helpers/ui-call.ts";

// The edit view's API against a real server on a free port: an operation's diff is what
// `timewarp history show` prints, its file's history pages through the ledger, and a revert
// through the API is the CLI's revert (files and document), refused by a read-only server.

const SLOW = 120_000;
const TOKEN = "edits-test-token";
const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** Twenty lines, so that two edits at either end are apart (a revert of the first applies). */
const A_TEXT = Array.from({ length: 20 }, (_, i) => `line ${i + 1}\n`).join("");

/** A workspace with three recorded edits: a.txt twice, b.txt once. */
async function workspace(): Promise<{ dir: string; ops: string[] }> {
  const { dir, cleanup } = makeTempDir("tw-ui-edits-");
  cleanups.push(cleanup);
  mkdirSync(join(dir, ".timewarp"));
  mkdirSync(join(dir, "src"));
  writeFileSync(join(dir, "src", "a.txt"), A_TEXT);
  writeFileSync(join(dir, "b.txt"), "bee\n");
  const ctx = { root: dir };
  const ops: string[] = [];
  const edit = async (r: Promise<{ snapshotId?: string }>) => ops.push((await r).snapshotId ?? "");
  await edit(
    applyEditBlock(ctx, { path: "src/a.txt", searchBlock: "line 2\n", replaceBlock: "TWO\n2\n" }),
  );
  await edit(applyWholeFileEdit(ctx, { path: "b.txt", content: Buffer.from("bee\nsee\n") }));
  await edit(
    applyEditBlock(ctx, { path: "src/a.txt", searchBlock: "line 19\n", replaceBlock: "LINE 19\n" }),
  );
  return { dir, ops };
}

async function serve(root: string, allowActions = true): Promise<UiServer> {
  const server = await startUiServer({ root, allowActions, token: TOKEN });
  cleanups.push(() => server.close());
  return server;
}

function call(server: UiServer, path: string, body?: unknown) {
  return uiCall(server.origin, path, { token: TOKEN, body });
}

/** A document with each workspace's own operation ids named by their place, so twins compare. */
function byPlace(doc: unknown, ops: string[]): unknown {
  let text = JSON.stringify(doc);
  ops.forEach((id, i) => {
    text = text.replaceAll(id, `<op${i}>`);
  });
  return JSON.parse(text.replace(/"newSnapshotId":"[0-9a-z]{10}"/g, '"newSnapshotId":"<new>"'));
}

describe("the edit view's API", () => {
  it(
    "gives an operation's diff exactly as `timewarp history show` does, with its record",
    async () => {
      const { dir, ops } = await workspace();
      const server = await serve(dir, false);
      const op = ops[0] ?? "";
      for (const format of ["unified", "git"] as const) {
        const api = await call(server, `/api/edits/${op}?format=${format}`);
        expect(api.status).toBe(200);
        const cli = runCli(["history", "show", op, "--format", format, "--json"], { cwd: dir });
        expect(cli.status, cli.stderr).toBe(0);
        const shown = cli.json() as { diff: string; snapshot: { tool: string } };
        expect(api.json.diff).toBe(shown.diff);
        expect(api.json.diff).toContain("+TWO");
        expect(api.json.tool).toBe(shown.snapshot.tool);
      }
      const { json } = await call(server, `/api/edits/${op}`);
      expect(json).toMatchObject({
        id: op,
        tool: "ApplyEditBlock",
        source: "timewarp",
        affected_files: ["src/a.txt"],
        stats: { lines_added: 2, lines_removed: 1 },
        timeline: "present",
      });
      const missing = await call(server, "/api/edits/zzzzzzzzzz");
      expect(missing.status).toBe(404);
      expect((missing.json.error as { code: string }).code).toBe("OPERATION_NOT_FOUND");
    },
    SLOW,
  );

  it("pages the history of a file, newest first, linking to each operation", async () => {
    const { dir, ops } = await workspace();
    const server = await serve(dir, false);
    const first = await call(server, `/api/edits/${ops[0]}/history?path=src/a.txt&limit=1`);
    expect(first.json).toMatchObject({ total: 2, items: [{ id: ops[2], tool: "ApplyEditBlock" }] });
    expect(typeof first.json.next).toBe("string");
    const second = await call(
      server,
      `/api/edits/${ops[0]}/history?path=src/a.txt&limit=1&cursor=${encodeURIComponent(String(first.json.next))}`,
    );
    expect(second.json).toMatchObject({ items: [{ id: ops[0] }], next: null });
    // A path is matched literally, never as a glob: `src/*.txt` names no file of the ledger.
    const glob = await call(
      server,
      `/api/edits/${ops[0]}/history?path=${encodeURIComponent("src/*.txt")}`,
    );
    expect(glob.json).toMatchObject({ total: 0, items: [] });
  });

  it(
    "reverts as `timewarp revert` does: the same files after, the same document",
    async () => {
      const a = await workspace();
      const b = await workspace();
      const server = await serve(a.dir);
      // a.txt's first edit: the file changed since (its last lines), so the reverse diff applies
      const op = 0;
      // The preview first: the dry run writes nothing and shows the reverse diff.
      const before = readDiskTree(a.dir).tree;
      const preview = await call(server, `/api/edits/${a.ops[op]}/revert`, { dry_run: true });
      expect(preview.status).toBe(200);
      expect(readDiskTree(a.dir).tree).toEqual(before);
      const cliPreview = runCli(["revert", b.ops[op] ?? "", "--dry-run", "--json"], { cwd: b.dir });
      expect(cliPreview.status, cliPreview.stderr).toBe(0);
      expect(byPlace(preview.json, a.ops)).toEqual(byPlace(cliPreview.json(), b.ops));
      expect(preview.json.reversedDiff).toContain("-TWO");

      const api = await call(server, `/api/edits/${a.ops[op]}/revert`, {});
      expect(api.status).toBe(200);
      const cli = runCli(["revert", b.ops[op] ?? "", "--json"], { cwd: b.dir });
      expect(cli.status, cli.stderr).toBe(0);
      expect(byPlace(api.json, a.ops)).toEqual(byPlace(cli.json(), b.ops));
      expect(api.json.success).toBe(true);
      expect(readDiskTree(a.dir)).toEqual(readDiskTree(b.dir));
      expect(readFileSync(join(a.dir, "src", "a.txt"), "utf8")).toBe(
        A_TEXT.replace("line 19\n", "LINE 19\n"),
      );
    },
    SLOW,
  );

  it(
    "reports a conflict as the CLI does (REVERT_CONFLICT, 409) and changes nothing",
    async () => {
      const a = await workspace();
      const b = await workspace();
      for (const w of [a, b]) writeFileSync(join(w.dir, "b.txt"), "changed by hand\n");
      const server = await serve(a.dir);
      const before = readDiskTree(a.dir);
      const api = await call(server, `/api/edits/${a.ops[1]}/revert`, {});
      expect(api.status).toBe(409);
      const cli = runCli(["revert", b.ops[1] ?? "", "--json"], { cwd: b.dir });
      expect(cli.status).toBe(1);
      expect((api.json.error as { code: string }).code).toBe("REVERT_CONFLICT");
      expect(byPlace(api.json, a.ops)).toEqual(byPlace(cli.json(), b.ops));
      expect(readDiskTree(a.dir)).toEqual(before);
    },
    SLOW,
  );

  it("refuses a revert on a read-only server (403 ACTIONS_DISABLED), changing nothing", async () => {
    const { dir, ops } = await workspace();
    const server = await serve(dir, false);
    const before = readDiskTree(dir);
    const r = await call(server, `/api/edits/${ops[0]}/revert`, {});
    expect(r.status).toBe(403);
    expect((r.json.error as { code: string }).code).toBe("ACTIONS_DISABLED");
    expect(readDiskTree(dir)).toEqual(before);
    // Actions allowed, but the request comes from another site's page.
    const open = await serve(dir);
    const refused = await uiCall(open.origin, `/api/edits/${ops[0]}/revert`, {
      token: TOKEN,
      body: {},
      origin: "http://evil.example",
    });
    expect(refused.status).toBe(403);
    expect((refused.json.error as { code: string }).code).toBe("FOREIGN_ORIGIN");
    expect(readDiskTree(dir)).toEqual(before);
  });
});
