import { readFileSync, truncateSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runCli } from "./helpers/cli.ts";
import { tempDirs } from "./helpers/temp-dirs.ts";

type Json = Record<string, unknown>;

describe("damaged records and caches through the CLI (issue 16, class 6)", () => {
  const tmp = tempDirs();
  const cli = (root: string, ...args: string[]) => runCli(["-C", root, ...args]);
  const json = (root: string, ...args: string[]) => {
    const run = runCli(["--json", "-C", root, ...args]);
    return { ...run, doc: run.json() as Json };
  };

  it("snapshot list lists the good records and flags the truncated one; show says CORRUPT_FILE", () => {
    const root = tmp();
    writeFileSync(join(root, "a.txt"), "a\n");
    const ids = [1, 2, 3].map(() => String(json(root, "snapshot", "create").doc.snapshot_id));
    const bad = ids[1] ?? "";
    truncateSync(join(root, ".timewarp/snapshots", bad, "snapshot.json"), 30);
    const listed = json(root, "snapshot", "list");
    expect(listed.status).toBe(0);
    expect((listed.doc.snapshots as Json[]).map((s) => s.snapshot_id)).toEqual([ids[0], ids[2]]);
    expect(listed.doc.corrupt).toEqual([
      expect.objectContaining({ id: bad, code: "CORRUPT_FILE", message: expect.any(String) }),
    ]);
    const text = cli(root, "snapshot", "list");
    expect(text.status).toBe(0);
    expect(text.stdout).toContain(String(ids[0]));
    expect(text.stdout).toMatch(new RegExp(`${bad}\\s+CORRUPT_FILE`));
    // a truncated manifest: CORRUPT_FILE, not IO_ERROR
    truncateSync(join(root, ".timewarp/snapshots", String(ids[2]), "manifest.json.br"), 8);
    const show = json(root, "snapshot", "show", String(ids[2]), "--files");
    expect(show.status).toBe(1);
    expect(show.doc).toMatchObject({ error: { code: "CORRUPT_FILE" } });
  });

  it("fsck reports a tampered stat cache and a truncated manifest, each with a path and a code", () => {
    const root = tmp();
    writeFileSync(join(root, "a.txt"), "AAAA\n");
    writeFileSync(join(root, "b.txt"), "BBBB\n");
    const id = String(json(root, "snapshot", "create").doc.snapshot_id);
    expect(json(root, "fsck").doc).toMatchObject({ ok: true, problems: [] });
    const cache = join(root, ".timewarp/stat-cache.bin");
    const buf = readFileSync(cache);
    buf[200] = (buf[200] ?? 0) ^ 0xff;
    writeFileSync(cache, buf);
    const manifest = join(root, ".timewarp/snapshots", id, "manifest.json.br");
    truncateSync(manifest, 8);
    const report = json(root, "fsck");
    expect(report.status).toBe(1);
    expect(report.doc.ok).toBe(false);
    expect(report.doc.problems).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ kind: "corrupt_cache", path: cache, code: "CORRUPT_FILE" }),
        expect.objectContaining({ kind: "bad_record", path: manifest, code: "CORRUPT_FILE" }),
      ]),
    );
    const text = cli(root, "fsck");
    expect(text.status).toBe(1);
    expect(text.stdout).toContain(`CORRUPT_FILE corrupt_cache ${cache}`);
  });
});
