import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { makeTempDir } from "../../test/helpers/cli.ts";
import {
  createFixedClock,
  createSeededRandom,
  DEFAULT_EXCLUDES,
  isTimewarpError,
  workspacePaths,
} from "../core/index.ts";
import {
  collectGarbage,
  collectReferencedOids,
  createObjectStore,
  createSnapshot,
  deleteSnapshot,
  exportSnapshot,
  fsck,
  listSnapshots,
  type Manifest,
  readManifest,
  readSnapshot,
  readStatCache,
  restoreManifest,
  verifyWorkspace,
} from "./index.ts";

const EX = [...DEFAULT_EXCLUDES];

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (error) {
    return isTimewarpError(error) ? error.code : `not a TimewarpError: ${String(error)}`;
  }
  return undefined;
}

function workspace(root: string): void {
  mkdirSync(join(root, "src/lib"), { recursive: true });
  mkdirSync(join(root, "empty"));
  mkdirSync(join(root, "node_modules/dep"), { recursive: true });
  mkdirSync(join(root, ".git"));
  writeFileSync(join(root, "src/a.ts"), "export const a = 1;\n");
  writeFileSync(join(root, "src/lib/b.ts"), "export const b = 2;\n");
  writeFileSync(join(root, "run.sh"), "#!/bin/sh\necho hi\n");
  chmodSync(join(root, "run.sh"), 0o755);
  symlinkSync("src/a.ts", join(root, "link"));
  writeFileSync(join(root, "node_modules/dep/index.js"), "module.exports = 1;\n");
  writeFileSync(join(root, ".git/HEAD"), "ref: refs/heads/main\n");
}

describe("snapshots", () => {
  const cleanups: (() => void)[] = [];
  // Removing the 20k-file case takes a while on a busy machine.
  afterEach(() => {
    for (const c of cleanups.splice(0).reverse()) c();
  }, 120_000);
  const tmp = () => {
    const t = makeTempDir();
    cleanups.push(t.cleanup);
    return t.dir;
  };
  const opts = () => ({
    clock: createFixedClock(new Date("2026-02-28T15:30:12Z"), 1000),
    random: createSeededRandom(7),
  });

  it("writes snapshot.json with the seed's fields beside a hash-checked manifest, and lists it", () => {
    const root = tmp();
    workspace(root);
    const made = createSnapshot(root, {
      ...opts(),
      sessionId: "sess_1",
      envFingerprint: { platform: "linux", node: process.version },
      initialTaskHint: "fix the slug bug",
    });
    expect(made.id).toMatch(/^s_20260228_153012_[0-9a-z]{6}$/);
    const record = JSON.parse(readFileSync(join(made.dir, "snapshot.json"), "utf8"));
    expect(record).toMatchObject({
      schema_version: 2,
      kind: "snapshot",
      snapshot_id: made.id,
      created_at: "2026-02-28T15:30:12Z",
      session_id: "sess_1",
      workspace_root: root,
      exclude_globs: EX,
      env_fingerprint: { platform: "linux" },
      initial_task_hint: "fix the slug bug",
      files: 3,
      dirs: 3,
      symlinks: 1,
      partial: false,
      skipped: [],
      manifest: { file: "manifest.json.br", entries: 7 },
    });
    expect(readdirSync(made.dir).sort()).toEqual(["manifest.json.br", "snapshot.json"]);
    expect(listSnapshots(root).map((r) => r.snapshot_id)).toEqual([made.id]);
    expect(readManifest(root, made.id)).toEqual(made.manifest);
    expect(readdirSync(workspacePaths(root).tmp).filter((n) => n.startsWith("rec-"))).toEqual([]);
  });

  it("answers an unknown id with SNAPSHOT_NOT_FOUND listing what exists; a tampered manifest is CORRUPT_FILE", () => {
    const root = tmp();
    workspace(root);
    const made = createSnapshot(root, opts());
    let caught: unknown;
    try {
      readSnapshot(root, "s_20990101_000000_zzzzzz");
    } catch (error) {
      caught = error;
    }
    expect(isTimewarpError(caught, "SNAPSHOT_NOT_FOUND")).toBe(true);
    expect((caught as { data: { available: string[] } }).data.available).toEqual([made.id]);
    expect(codeOf(() => readSnapshot(root, "../../etc"))).toBe("SNAPSHOT_NOT_FOUND");
    const { gzipSync } = require("node:zlib") as typeof import("node:zlib");
    writeFileSync(
      join(made.dir, "manifest.json.br"),
      gzipSync('{"schema_version":1,"entries":[]}'),
    );
    expect(codeOf(() => readManifest(root, made.id))).toBe("CORRUPT_FILE");
  });

  it("writes present_backup records with the same function (kind option) and deletes records", () => {
    const root = tmp();
    workspace(root);
    const backup = createSnapshot(root, { ...opts(), kind: "present_backup" });
    expect(backup.id).toMatch(/^b_/);
    expect(backup.dir).toBe(join(workspacePaths(root).backups, backup.id));
    expect(readSnapshot(root, backup.id, { kind: "present_backup" }).backup_id).toBe(backup.id);
    expect(listSnapshots(root)).toEqual([]);
    const snap = createSnapshot(root, opts());
    deleteSnapshot(root, snap.id);
    expect(existsSync(snap.dir)).toBe(false);
    expect(codeOf(() => deleteSnapshot(root, snap.id))).toBe("SNAPSHOT_NOT_FOUND");
  });

  it("reuse: an unchanged tree writes no record and names the one given; any change makes a new one", () => {
    const root = tmp();
    workspace(root);
    const first = createSnapshot(root, opts());
    const again = createSnapshot(root, { ...opts(), reuse: first.record });
    expect(again).toMatchObject({ id: first.id, reused: true });
    expect(listSnapshots(root).map((r) => r.snapshot_id)).toEqual([first.id]);
    // Another excludes list holds the same files here, but is not the same snapshot.
    const otherScope = createSnapshot(root, {
      ...opts(),
      reuse: first.record,
      excludes: [...EX, "*.tmp"],
    });
    expect(otherScope.reused).toBeUndefined();
    writeFileSync(join(root, "src/a.ts"), "export const a = 2;\n");
    const changed = createSnapshot(root, { ...opts(), reuse: first.record });
    expect(changed.reused).toBeUndefined();
    expect(changed.id).not.toBe(first.id);
    expect(readManifest(root, changed.id)).toEqual(changed.manifest);
    // A record that is gone stands for nothing: a new one is written.
    deleteSnapshot(root, changed.id);
    const after = createSnapshot(root, { ...opts(), reuse: changed.record });
    expect(after.reused).toBeUndefined();
    expect(existsSync(after.dir)).toBe(true);
  });

  it("deferRecord: the scan stores the contents now, the record appears at publish()", () => {
    const root = tmp();
    workspace(root);
    createSnapshot(root, opts());
    writeFileSync(join(root, "src/a.ts"), "export const a = 3;\n");
    const made = createSnapshot(root, { ...opts(), deferRecord: true });
    expect(existsSync(made.dir)).toBe(false);
    // What the snapshot holds is fixed by the scan: a later edit does not leak into it.
    writeFileSync(join(root, "src/a.ts"), "export const a = 4;\n");
    made.publish?.();
    made.publish?.();
    expect(listSnapshots(root).map((r) => r.snapshot_id)).toContain(made.id);
    const a = readManifest(root, made.id).entries.find((e) => e.path === "src/a.ts");
    expect(
      createObjectStore(workspacePaths(root).objects)
        .read(a?.oid ?? "")
        .toString(),
    ).toBe("export const a = 3;\n");
  });

  it("marks a snapshot partial and says what it skipped", () => {
    const root = tmp();
    workspace(root);
    writeFileSync(join(root, "huge.bin"), Buffer.alloc(2048));
    const made = createSnapshot(root, { ...opts(), maxFileBytes: 1024 });
    expect(made.record.partial).toBe(true);
    expect(made.record.skipped).toEqual([
      { path: "huge.bin", reason: "too_large", detail: "2048 bytes > max_file_bytes 1024" },
    ]);
  });

  it("restores by difference: writes only what differs, deletes extras, keeps modes, never touches excluded paths", () => {
    const root = tmp();
    workspace(root);
    const snap = createSnapshot(root, opts());
    const paths = workspacePaths(root);
    const untouched = statSync(join(root, "src/lib/b.ts")).ino;
    writeFileSync(join(root, "src/a.ts"), "broken");
    chmodSync(join(root, "run.sh"), 0o644);
    writeFileSync(join(root, "extra.txt"), "new");
    mkdirSync(join(root, "newdir/deeper"), { recursive: true });
    writeFileSync(join(root, "node_modules/dep/index.js"), "changed dependency");
    writeFileSync(join(root, ".git/HEAD"), "ref: refs/heads/other\n");
    const progress: number[] = [];
    const result = restoreManifest(root, readManifest(root, snap.id), {
      store: createObjectStore(paths.objects),
      excludes: EX,
      statCache: readStatCache(paths.statCache),
      onProgress: (p) => progress.push(p.done),
    });
    expect(result).toMatchObject({ written: 1, deleted: 3, mode_changed: 1, blocked: [] });
    expect(result.unchanged).toBe(5);
    expect(progress.at(-1)).toBe(4);
    expect(readFileSync(join(root, "src/a.ts"), "utf8")).toBe("export const a = 1;\n");
    expect(statSync(join(root, "run.sh")).mode & 0o777).toBe(0o755);
    expect(existsSync(join(root, "extra.txt"))).toBe(false);
    expect(existsSync(join(root, "newdir"))).toBe(false);
    expect(statSync(join(root, "src/lib/b.ts")).ino).toBe(untouched);
    expect(readFileSync(join(root, "node_modules/dep/index.js"), "utf8")).toBe(
      "changed dependency",
    );
    expect(readFileSync(join(root, ".git/HEAD"), "utf8")).toBe("ref: refs/heads/other\n");
    expect(existsSync(join(paths.snapshots, snap.id, "snapshot.json"))).toBe(true);
    expect(verifyWorkspace(root, readManifest(root, snap.id), { excludes: EX })).toMatchObject({
      ok: true,
      differences: [],
    });
  });

  it("restores from a known current state (the backup just taken) without scanning again", () => {
    const root = tmp();
    workspace(root);
    const past = createSnapshot(root, opts());
    writeFileSync(join(root, "src/a.ts"), "edited in the present\n");
    writeFileSync(join(root, "present-only.txt"), "p");
    const backup = createSnapshot(root, { ...opts(), kind: "present_backup" });
    const store = createObjectStore(workspacePaths(root).objects);
    const travel = restoreManifest(root, past.manifest, {
      store,
      excludes: EX,
      current: { manifest: backup.manifest, skipped: backup.record.skipped },
    });
    expect(travel).toMatchObject({ written: 1, deleted: 1, blocked: [] });
    expect(verifyWorkspace(root, past.manifest, { excludes: EX }).ok).toBe(true);
    const back = restoreManifest(root, backup.manifest, { store, excludes: EX });
    expect(back).toMatchObject({ written: 2, deleted: 0 });
    expect(verifyWorkspace(root, backup.manifest, { excludes: EX }).ok).toBe(true);
  });

  it("verifyWorkspace names every kind of difference, exactly", () => {
    const root = tmp();
    workspace(root);
    const m = createSnapshot(root, opts()).manifest;
    writeFileSync(join(root, "src/a.ts"), "export const a = 2;\n"); // same size, other content
    utimesSync(join(root, "src/a.ts"), new Date(0), new Date(0));
    chmodSync(join(root, "run.sh"), 0o700);
    writeFileSync(join(root, "stray"), "x");
    const { rmSync } = require("node:fs") as typeof import("node:fs");
    rmSync(join(root, "empty"), { recursive: true });
    rmSync(join(root, "link"));
    mkdirSync(join(root, "link"));
    expect(verifyWorkspace(root, m, { excludes: EX }).differences).toEqual([
      { path: "empty", kind: "missing" },
      { path: "link", kind: "type" },
      { path: "run.sh", kind: "mode" },
      { path: "src/a.ts", kind: "content" },
      { path: "stray", kind: "extra" },
    ]);
  });

  it("refuses unsafe manifests before writing anything (UNSAFE_PATH)", () => {
    const root = tmp();
    const outside = tmp();
    const store = createObjectStore(join(tmp(), "objects"));
    const oid = store.write(Buffer.from("pwned"));
    const file = (path: string) => ({
      path,
      type: "file" as const,
      mode: 0o644,
      size: 5,
      mtime_ms: 0,
      oid,
    });
    const bad: Manifest[] = [
      { schema_version: 1, entries: [file("ok"), file(`${outside}/x`)] },
      { schema_version: 1, entries: [file("ok"), file("../escape")] },
      { schema_version: 1, entries: [file("ok"), file(".timewarp/config.json")] },
      {
        schema_version: 1,
        entries: [
          {
            path: "a",
            type: "symlink",
            mode: 0o777,
            size: outside.length,
            mtime_ms: 0,
            target: outside,
          },
          file("a/x"),
          file("ok"),
        ],
      },
    ];
    for (const m of bad) {
      expect(codeOf(() => restoreManifest(root, m, { store, excludes: EX }))).toBe("UNSAFE_PATH");
    }
    expect(readdirSync(root)).toEqual([]);
    expect(readdirSync(outside)).toEqual([]);
  });

  it("never writes through excluded symlinks, and re-checks parents on disk right before each write", () => {
    const root = tmp();
    const outside = tmp();
    const real = createObjectStore(join(tmp(), "objects"));
    const oid = real.write(Buffer.from("pwned"));
    const file = (path: string) => ({
      path,
      type: "file" as const,
      mode: 0o644,
      size: 5,
      mtime_ms: 0,
      oid,
    });
    // `vendor` is an excluded symlink to outside: not in the scan, not deleted, never written through.
    symlinkSync(outside, join(root, "vendor"));
    const m: Manifest = { schema_version: 1, entries: [file("vendor/x")] };
    expect(restoreManifest(root, m, { store: real, excludes: [...EX, "vendor"] }).excluded).toBe(1);
    expect(readdirSync(outside)).toEqual([]);
    // A concurrent process swaps directory `d` for a symlink while the restore runs (simulated
    // by a store whose read does it): the write below `d` is refused.
    mkdirSync(join(root, "d"));
    const swapping = {
      ...real,
      read: (o: string, opt?: { verify?: boolean }) => {
        const { renameSync } = require("node:fs") as typeof import("node:fs");
        if (lstatSync(join(root, "d")).isDirectory()) {
          renameSync(join(root, "d"), join(root, "d-moved"));
          symlinkSync(outside, join(root, "d"));
        }
        return real.read(o, opt);
      },
    };
    const m2: Manifest = {
      schema_version: 1,
      entries: [{ path: "d", type: "dir", mode: 0o755, size: 0, mtime_ms: 0 }, file("d/x")],
    };
    expect(
      codeOf(() => restoreManifest(root, m2, { store: swapping, excludes: ["vendor", "d-moved"] })),
    ).toBe("UNSAFE_PATH");
    expect(readdirSync(outside)).toEqual([]);
  });

  it("round-trips non-UTF-8 names, symlinks, empty dirs and modes through export (seed copy layout)", () => {
    const root = tmp();
    workspace(root);
    const raw = Buffer.from([0x66, 0xff, 0xfe]);
    writeFileSync(Buffer.concat([Buffer.from(`${root}/src/`), raw]), "bytes");
    const snap = createSnapshot(root, opts());
    const out = join(tmp(), "export");
    const result = exportSnapshot(root, snap.id, out);
    expect(result.files).toBe(4);
    expect(JSON.parse(readFileSync(join(out, "snapshot.json"), "utf8")).snapshot_id).toBe(snap.id);
    const w = join(out, "workspace");
    expect(readFileSync(Buffer.concat([Buffer.from(`${w}/src/`), raw]), "utf8")).toBe("bytes");
    expect(readlinkSync(join(w, "link"))).toBe("src/a.ts");
    expect(lstatSync(join(w, "empty")).isDirectory()).toBe(true);
    expect(statSync(join(w, "run.sh")).mode & 0o777).toBe(0o755);
    expect(existsSync(join(w, "node_modules"))).toBe(false);
    expect(verifyWorkspace(w, snap.manifest, { excludes: EX }).ok).toBe(true);
    expect(codeOf(() => exportSnapshot(root, snap.id, out))).toBe("TARGET_NOT_EMPTY");
  });

  it("gc drops only unreferenced objects and keeps the stat cache honest; fsck finds corruption and loss", () => {
    const root = tmp();
    workspace(root);
    const paths = workspacePaths(root);
    const first = createSnapshot(root, opts());
    writeFileSync(join(root, "src/a.ts"), "only in the second snapshot\n");
    const second = createSnapshot(root, opts());
    expect(fsck(root)).toMatchObject({ ok: true, objects: 4, records: 2 });
    // nothing unreferenced yet
    expect(collectGarbage(root, { roots: collectReferencedOids(root) }).removed_objects).toBe(0);
    deleteSnapshot(root, second.id);
    const gc = collectGarbage(root, { roots: collectReferencedOids(root) });
    expect(gc).toMatchObject({ removed_objects: 1, freed_bytes: 28, kept_objects: 3 });
    // the cache no longer vouches for the removed object, so the next snapshot stores it again
    const third = createSnapshot(root, opts());
    expect(third.objects_written).toBe(1);
    expect(fsck(root).ok).toBe(true);
    // corrupt one object and lose another
    const store = createObjectStore(paths.objects);
    const a = first.manifest.entries.find((e) => e.path === "run.sh")?.oid ?? "";
    const b = first.manifest.entries.find((e) => e.path === "src/lib/b.ts")?.oid ?? "";
    chmodSync(store.pathOf(a), 0o644);
    writeFileSync(store.pathOf(a), "bit rot");
    store.remove(b);
    const report = fsck(root);
    expect(report.ok).toBe(false);
    expect(
      report.problems.filter((p) => p.kind === "corrupt_object").map((p) => p.subject),
    ).toEqual([a]);
    expect(
      report.problems.filter((p) => p.kind === "missing_object").map((p) => p.subject),
    ).toEqual([b, b]);
    // a restore refuses the corrupt object rather than writing bit rot into the workspace
    writeFileSync(join(root, "run.sh"), "edited");
    expect(codeOf(() => restoreManifest(root, first.manifest, { store, excludes: EX }))).toBe(
      "OBJECT_CORRUPT",
    );
  });

  it("a first snapshot of many files packs its objects; restore, export, gc and fsck go through the packs", () => {
    const root = tmp();
    for (let f = 0; f < 300; f++) writeFileSync(join(root, `f${f}.txt`), `file ${f}\n`);
    const paths = workspacePaths(root);
    const first = createSnapshot(root, opts());
    expect(first.objects_written).toBe(300);
    expect(
      readdirSync(join(paths.objects, "pack")).filter((n) => n.endsWith(".twpack")),
    ).toHaveLength(1);
    expect(readdirSync(paths.objects)).toEqual(["pack"]); // no loose object
    expect(fsck(root)).toMatchObject({ ok: true, objects: 300 });
    // a restore reads from the pack
    for (let f = 0; f < 300; f += 3) writeFileSync(join(root, `f${f}.txt`), "changed\n");
    const store = createObjectStore(paths.objects);
    expect(restoreManifest(root, first.manifest, { store, excludes: EX }).written).toBe(100);
    expect(readFileSync(join(root, "f3.txt"), "utf8")).toBe("file 3\n");
    const out = join(tmp(), "export");
    exportSnapshot(root, first.id, out);
    expect(readFileSync(join(out, "workspace", "f299.txt"), "utf8")).toBe("file 299\n");
    // the files change, the first snapshot goes: gc replaces the pack by its live objects
    for (let f = 0; f < 200; f++) writeFileSync(join(root, `f${f}.txt`), `new ${f}\n`);
    createSnapshot(root, opts());
    deleteSnapshot(root, first.id);
    const gc = collectGarbage(root, { roots: collectReferencedOids(root) });
    expect(gc).toMatchObject({ removed_objects: 200, kept_objects: 300 });
    expect(fsck(root)).toMatchObject({ ok: true, objects: 300 });
    expect(
      verifyWorkspace(root, readManifest(root, listSnapshots(root)[0]!.snapshot_id!), {
        excludes: EX,
      }).ok,
    ).toBe(true);
  });

  it("snapshots 20k files, and a later snapshot reads none of them", () => {
    const root = tmp();
    for (let d = 0; d < 100; d++) {
      mkdirSync(join(root, `d${d}`));
      for (let f = 0; f < 200; f++) writeFileSync(join(root, `d${d}`, `f${f}.txt`), `${d}/${f}\n`);
    }
    const first = createSnapshot(root, opts());
    expect(first.record.files).toBe(20_000);
    expect(first.rehashed).toBe(20_000);
    // The second may re-read files written in the same clock tick as the first scan began (racy);
    // by the third every file is older than the previous scan's start.
    createSnapshot(root, opts());
    const third = createSnapshot(root, opts());
    expect(third.rehashed).toBe(0);
    expect(third.objects_written).toBe(0);
    expect(third.record.manifest.hash).toBe(first.record.manifest.hash);
  }, 120_000);
});
