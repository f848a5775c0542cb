import { chmodSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { DEFAULT_EXCLUDES } from "../src/core/index.ts";
import { deleteSnapshot } from "../src/store/index.ts";
import { runCli } from "./helpers/cli.ts";
import { tempDirs } from "./helpers/temp-dirs.ts";

type Json = Record<string, unknown>;

describe("timewarp init / snapshot / gc (CLI)", () => {
  const tmp = tempDirs();
  const cli = (root: string, ...args: string[]) => {
    const run = runCli(["--json", "-C", root, ...args]);
    return { ...run, doc: run.json() as Json };
  };

  it("init creates .timewarp/config.json with the defaults, and is idempotent", () => {
    const root = tmp();
    const first = cli(root, "init");
    expect(first.status).toBe(0);
    expect(first.doc).toMatchObject({ workspace_root: root, created: true });
    const config = JSON.parse(readFileSync(join(root, ".timewarp/config.json"), "utf8"));
    expect(config.exclude_globs).toEqual(DEFAULT_EXCLUDES);
    expect(config.max_file_bytes).toBe(1024 * 1024 * 1024);
    writeFileSync(
      join(root, ".timewarp/config.json"),
      JSON.stringify({ ...config, extra_excludes: ["*.tmp"] }),
    );
    expect(cli(root, "init").doc).toMatchObject({ created: false });
    expect(
      JSON.parse(readFileSync(join(root, ".timewarp/config.json"), "utf8")).extra_excludes,
    ).toEqual(["*.tmp"]);
    const notDir = join(root, "file");
    writeFileSync(notDir, "x");
    const bad = cli(notDir, "init");
    expect(bad.status).toBe(2);
    expect(bad.doc).toMatchObject({ error: { code: "NOT_A_DIRECTORY" } });
  });

  it("snapshot create | list | show | diff | export, with one JSON document each", () => {
    const root = tmp();
    mkdirSync(join(root, "src"));
    writeFileSync(join(root, "src/a.ts"), "a\n");
    writeFileSync(join(root, "run.sh"), "#!/bin/sh\n");
    chmodSync(join(root, "run.sh"), 0o755);
    const created = cli(root, "snapshot", "create", "--session-id", "sess_42");
    expect(created.status).toBe(0);
    expect(created.doc).toMatchObject({
      session_id: "sess_42",
      files: 2,
      bytes: 12,
      partial: false,
      skipped: [],
      rehashed: 2,
    });
    expect(typeof created.doc.duration_ms).toBe("number");
    const a = String(created.doc.snapshot_id);
    expect(a).toMatch(/^s_\d{8}_\d{6}_[0-9a-z]{6}$/);

    writeFileSync(join(root, "src/a.ts"), "changed\n");
    writeFileSync(join(root, "new.txt"), "n");
    chmodSync(join(root, "run.sh"), 0o644);
    const diffNow = cli(root, "snapshot", "diff", a);
    expect(diffNow.doc).toMatchObject({
      from: a,
      to: "workspace",
      added: ["new.txt"],
      removed: [],
      modified: ["src/a.ts"],
      mode_changed: [{ path: "run.sh", before: "755", after: "644" }],
    });
    const b = String(cli(root, "snapshot", "create").doc.snapshot_id);
    expect(cli(root, "snapshot", "diff", a, b).doc).toMatchObject({ to: b, added: ["new.txt"] });

    const list = cli(root, "snapshot", "list").doc as { snapshots: Json[] };
    expect(list.snapshots.map((s) => s.snapshot_id)).toEqual([a, b]);
    const shown = cli(root, "snapshot", "show", a, "--files").doc;
    expect(shown).toMatchObject({ snapshot_id: a, session_id: "sess_42", files: 2 });
    expect((shown.entries as Json[]).map((e) => e.path)).toEqual(["run.sh", "src", "src/a.ts"]);

    const out = join(tmp(), "exported");
    const exported = cli(root, "snapshot", "export", a, out);
    expect(exported.doc).toMatchObject({ snapshot_id: a, dir: out, files: 2 });
    expect(readFileSync(join(out, "workspace/src/a.ts"), "utf8")).toBe("a\n");
    expect(readdirSync(out).sort()).toEqual(["snapshot.json", "workspace"]);
    expect(cli(root, "snapshot", "export", a, out).doc).toMatchObject({
      error: { code: "TARGET_NOT_EMPTY" },
    });
  });

  it("an unknown snapshot id is SNAPSHOT_NOT_FOUND listing what exists (exit 1; human text on stderr)", () => {
    const root = tmp();
    writeFileSync(join(root, "f"), "f");
    const id = String(cli(root, "snapshot", "create").doc.snapshot_id);
    const missing = cli(root, "snapshot", "show", "s_20000101_000000_aaaaaa");
    expect(missing.status).toBe(1);
    expect(missing.doc).toMatchObject({
      error: { code: "SNAPSHOT_NOT_FOUND", data: { available: [id] } },
    });
    const human = runCli(["-C", root, "snapshot", "diff", "nope"]);
    expect(human.status).toBe(1);
    expect(human.stderr).toContain("SNAPSHOT_NOT_FOUND");
    expect(human.stderr).toContain(id);
  });

  it("reports a partial snapshot (a FIFO is skipped with its reason)", () => {
    const root = tmp();
    writeFileSync(join(root, "ok"), "ok");
    const { execFileSync } = require("node:child_process") as typeof import("node:child_process");
    execFileSync("mkfifo", [join(root, "pipe")]);
    const doc = cli(root, "snapshot", "create").doc;
    expect(doc).toMatchObject({
      files: 1,
      partial: true,
      skipped: [{ path: "pipe", reason: "special_file", detail: "fifo" }],
    });
  });

  it("gc drops the objects only a deleted snapshot referenced", () => {
    const root = tmp();
    writeFileSync(join(root, "keep"), "kept content");
    cli(root, "snapshot", "create");
    writeFileSync(join(root, "gone"), "twelve bytes");
    const second = String(cli(root, "snapshot", "create").doc.snapshot_id);
    expect(cli(root, "gc").doc).toMatchObject({ removed_objects: 0, kept_objects: 2 });
    deleteSnapshot(root, second);
    expect(cli(root, "gc").doc).toMatchObject({
      removed_objects: 1,
      freed_bytes: 12,
      kept_objects: 1,
    });
  });

  it("fsck: ok on a healthy store; a lost object is named and exits 1", () => {
    const root = tmp();
    writeFileSync(join(root, "a.txt"), "alpha");
    cli(root, "snapshot", "create");
    const ok = cli(root, "fsck");
    expect(ok.status).toBe(0);
    expect(ok.doc).toMatchObject({ ok: true, objects: 1, records: 1, problems: [] });
    const fans = readdirSync(join(root, ".timewarp/objects"));
    const fan = fans[0] ?? "";
    const name = readdirSync(join(root, ".timewarp/objects", fan))[0] ?? "";
    rmSync(join(root, ".timewarp/objects", fan, name));
    const bad = cli(root, "fsck");
    expect(bad.status).toBe(1);
    expect(bad.doc).toMatchObject({
      ok: false,
      problems: [{ kind: "missing_object", subject: fan + name }],
    });
  });
});
