import { execFileSync } from "node:child_process";
import { chmodSync, lstatSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { backdate } from "../../test/helpers/backdate.ts";
import { makeTempDir } from "../../test/helpers/cli.ts";
import { DEFAULT_EXCLUDES, gitBlobId, isTimewarpError } from "../core/index.ts";
import { diffManifests } from "./diff-manifests.ts";
import { createObjectStore } from "./object-store.ts";
import { small } from "./scan-walker.ts";
import { scanWorkspace } from "./scan-workspace.ts";
import type { StatCache } from "./stat-cache.ts";

const EX = [...DEFAULT_EXCLUDES];

describe("scanWorkspace", () => {
  const cleanups: (() => void)[] = [];
  afterEach(() => {
    for (const c of cleanups.splice(0).reverse()) c();
  });
  const tmp = () => {
    const t = makeTempDir();
    cleanups.push(t.cleanup);
    return t.dir;
  };
  const paths = (r: ReturnType<typeof scanWorkspace>) => r.manifest.entries.map((e) => e.path);

  it("applies the default excludes at any depth (nested .git, node_modules), .timewarp always", () => {
    const root = tmp();
    for (const d of [
      "src",
      "pkg/node_modules/x",
      "pkg/.git",
      ".git",
      ".timewarp/objects",
      "sub/.timewarp",
    ])
      mkdirSync(join(root, d), { recursive: true });
    writeFileSync(join(root, "src/a.ts"), "a");
    writeFileSync(join(root, "pkg/node_modules/x/i.js"), "x");
    writeFileSync(join(root, "pkg/.git/HEAD"), "ref");
    writeFileSync(join(root, ".git/HEAD"), "ref");
    writeFileSync(join(root, "app.log"), "log");
    writeFileSync(join(root, "pkg/index.js"), "i");
    const r = scanWorkspace(root, { excludes: EX });
    expect(paths(r)).toEqual(["pkg", "pkg/index.js", "src", "src/a.ts", "sub"]);
    // even with an empty exclude list the data directory stays out
    expect(paths(scanWorkspace(root, { excludes: [] }))).not.toContain(".timewarp");
  });

  it("honours configured globs with gitignore semantics (anchored, **, negation)", () => {
    const root = tmp();
    mkdirSync(join(root, "docs/deep"), { recursive: true });
    writeFileSync(join(root, "docs/deep/a.md"), "a");
    writeFileSync(join(root, "top.txt"), "t");
    writeFileSync(join(root, "docs/top.txt"), "t");
    writeFileSync(join(root, "x.log"), "l");
    writeFileSync(join(root, "keep.log"), "k");
    const r = scanWorkspace(root, { excludes: [...EX, "/top.txt", "docs/**/*.md", "!keep.log"] });
    expect(paths(r)).toEqual(["docs", "docs/deep", "docs/top.txt", "keep.log"]);
  });

  it("stores symlinks as links and never follows them, loops included", () => {
    const root = tmp();
    const outside = tmp();
    writeFileSync(join(outside, "secret"), "s");
    symlinkSync(outside, join(root, "out"));
    symlinkSync("b", join(root, "a"));
    symlinkSync("a", join(root, "b"));
    symlinkSync(".", join(root, "self"));
    symlinkSync("missing", join(root, "dangling"));
    const r = scanWorkspace(root, { excludes: EX });
    expect(r.manifest.entries.map((e) => [e.path, e.type, e.target])).toEqual([
      ["a", "symlink", "b"],
      ["b", "symlink", "a"],
      ["dangling", "symlink", "missing"],
      ["out", "symlink", outside],
      ["self", "symlink", "."],
    ]);
    expect(r.manifest.entries[0]?.oid).toBe(gitBlobId(Buffer.from("b")));
    expect(r.skipped).toEqual([]);
  });

  it("keeps the exec bit and empty directories", () => {
    const root = tmp();
    mkdirSync(join(root, "empty/nested"), { recursive: true });
    writeFileSync(join(root, "run.sh"), "#!/bin/sh\n");
    chmodSync(join(root, "run.sh"), 0o755);
    writeFileSync(join(root, "plain"), "p");
    chmodSync(join(root, "plain"), 0o640);
    const r = scanWorkspace(root, { excludes: EX });
    expect(r.manifest.entries.map((e) => [e.path, e.type, e.mode.toString(8)])).toEqual([
      ["empty", "dir", "755"],
      ["empty/nested", "dir", "755"],
      ["plain", "file", "640"],
      ["run.sh", "file", "755"],
    ]);
  });

  it("skips and reports FIFOs and sockets without blocking on them", async () => {
    const root = tmp();
    writeFileSync(join(root, "ok.txt"), "ok");
    execFileSync("mkfifo", [join(root, "pipe")]);
    const server: Server = createServer();
    await new Promise<void>((resolve) => server.listen(join(root, "sock"), resolve));
    cleanups.push(() => server.close());
    const r = scanWorkspace(root, { excludes: EX });
    expect(paths(r)).toEqual(["ok.txt"]);
    expect(r.skipped.map((s) => [s.path, s.reason, s.detail])).toEqual(
      expect.arrayContaining([
        ["pipe", "special_file", "fifo"],
        ["sock", "special_file", "socket"],
      ]),
    );
  });

  it("skips new files over the size cap (reported), but keeps a large file the cache already knows", () => {
    const root = tmp();
    writeFileSync(join(root, "big.bin"), Buffer.alloc(5000, 1));
    writeFileSync(join(root, "small"), "s");
    backdate(root, ["big.bin", "small"]);
    const capped = scanWorkspace(root, { excludes: EX, maxFileBytes: 1000 });
    expect(paths(capped)).toEqual(["small"]);
    expect(capped.skipped).toEqual([
      { path: "big.bin", reason: "too_large", detail: "5000 bytes > max_file_bytes 1000" },
    ]);
    const known = scanWorkspace(root, { excludes: EX });
    const again = scanWorkspace(root, {
      excludes: EX,
      maxFileBytes: 1000,
      statCache: known.statCache,
    });
    expect(paths(again)).toEqual(["big.bin", "small"]);
    expect(again.rehashed).toBe(0);
  });

  it("re-reads only files whose stat data changed, and writes only absent objects", () => {
    const root = tmp();
    const store = createObjectStore(join(tmp(), "objects"));
    for (let i = 0; i < 50; i++) writeFileSync(join(root, `f${i}`), `content ${i}`);
    writeFileSync(join(root, "dup"), "content 1");
    backdate(root, ["dup", ...Array.from({ length: 50 }, (_, i) => `f${i}`)]);
    const first = scanWorkspace(root, { excludes: EX, store });
    expect(first.rehashed).toBe(51);
    expect(first.objects_written).toBe(50);
    const second = scanWorkspace(root, { excludes: EX, store, statCache: first.statCache });
    expect(second.rehashed).toBe(0);
    writeFileSync(join(root, "f7"), "changed!");
    const third = scanWorkspace(root, { excludes: EX, store, statCache: second.statCache });
    expect(third.rehashed).toBe(1);
    expect(third.objects_written).toBe(1);
    expect(third.manifest.entries.find((e) => e.path === "f7")?.oid).toBe(
      gitBlobId(Buffer.from("changed!")),
    );
  });

  it("applies git's racy rule: a cached file whose mtime is not older than the last scan start is re-read", () => {
    const root = tmp();
    writeFileSync(join(root, "f"), "real");
    const st = lstatSync(join(root, "f"));
    const lie = "0".repeat(40);
    const cacheAt = (scanStartMs: number): StatCache => ({
      scanStartMs,
      entries: new Map([
        [
          "f",
          {
            size: 4,
            mtimeMs: st.mtimeMs,
            ctimeMs: st.ctimeMs,
            ino: st.ino,
            mode: st.mode,
            oid: lie,
          },
        ],
      ]),
    });
    // cache older than the file's mtime: racy, re-read, real id
    const racy = scanWorkspace(root, { excludes: EX, statCache: cacheAt(st.mtimeMs) });
    expect(racy.manifest.entries[0]?.oid).toBe(gitBlobId(Buffer.from("real")));
    // cache taken strictly after: trusted (which is what makes a hit cheap; the test proves it is used)
    const trusted = scanWorkspace(root, { excludes: EX, statCache: cacheAt(st.mtimeMs + 0.001) });
    expect(trusted.manifest.entries[0]?.oid).toBe(lie);
  });

  it("never stores a file torn: a change during the read is re-read, a file that keeps changing is reported", () => {
    const root = tmp();
    const store = createObjectStore(join(tmp(), "objects"));
    writeFileSync(join(root, "hot"), "version 0");
    let calls = 0;
    const once = scanWorkspace(root, {
      excludes: EX,
      store,
      beforeRead: () => {
        if (calls++ === 0) writeFileSync(join(root, "hot"), "version 1 longer");
      },
    });
    expect(once.manifest.entries[0]?.oid).toBe(gitBlobId(Buffer.from("version 1 longer")));
    expect(calls).toBe(2);
    let n = 0;
    const always = scanWorkspace(root, {
      excludes: EX,
      beforeRead: () => writeFileSync(join(root, "hot"), `v${n++}${"x".repeat(n)}`),
    });
    expect(always.manifest.entries).toEqual([]);
    expect(always.skipped[0]).toMatchObject({ path: "hot", reason: "changed_while_reading" });
  });

  it("reports a file it may not read (EACCES injected: the tests run as root, where chmod 000 does not stop a read)", () => {
    const root = tmp();
    writeFileSync(join(root, "ok"), "ok");
    writeFileSync(join(root, "locked"), "secret");
    const r = scanWorkspace(root, {
      excludes: EX,
      beforeRead: (rel) => {
        if (rel === "locked")
          throw Object.assign(new Error("EACCES: permission denied"), { code: "EACCES" });
      },
    });
    expect(paths(r)).toEqual(["ok"]);
    expect(r.skipped).toEqual([{ path: "locked", reason: "unreadable", detail: "EACCES" }]);
  });

  it("fails with NOT_A_DIRECTORY for a file or a missing root", () => {
    const root = tmp();
    writeFileSync(join(root, "file"), "x");
    for (const bad of [join(root, "file"), join(root, "missing")]) {
      let caught: unknown;
      try {
        scanWorkspace(bad, { excludes: EX });
      } catch (error) {
        caught = error;
      }
      expect(isTimewarpError(caught, "NOT_A_DIRECTORY"), bad).toBe(true);
    }
  });

  it("sees a file replaced by a directory between scans as a type change", () => {
    const root = tmp();
    writeFileSync(join(root, "p"), "file");
    const first = scanWorkspace(root, { excludes: EX });
    rmSync(join(root, "p"));
    mkdirSync(join(root, "p"));
    writeFileSync(join(root, "p/child"), "c");
    const second = scanWorkspace(root, { excludes: EX, statCache: first.statCache });
    expect(paths(second)).toEqual(["p", "p/child"]);
    const d = diffManifests(first.manifest, second.manifest);
    expect(d.type_changed.map((c) => [c.path, c.before.type, c.after.type])).toEqual([
      ["p", "file", "dir"],
    ]);
    expect(d.added.map((e) => e.path)).toEqual(["p/child"]);
  });

  it("reads the file-system clock from a marker written in place, never truncated", () => {
    const root = tmp();
    writeFileSync(join(root, "a.txt"), "a");
    const clockDir = join(tmp(), "clock");
    mkdirSync(clockDir);
    const marker = join(clockDir, "scan-clock");
    // Longer than what a scan writes: a write that truncated the marker would shorten it
    // (ext4 writes back a file truncated and written again when it is closed: issue 22).
    writeFileSync(marker, `${"x".repeat(63)}\n`);
    backdate(clockDir, ["scan-clock"]);
    const before = lstatSync(marker);
    const scan = scanWorkspace(root, { excludes: EX, clockDir });
    const after = lstatSync(marker);
    expect(after.ino).toBe(before.ino);
    expect(after.size).toBe(64);
    expect(after.mtimeMs).toBeGreaterThan(before.mtimeMs);
    expect(scan.statCache.scanStartMs).toBe(after.mtimeMs);
  });

  it("keeps the exact bytes of names that are not UTF-8", () => {
    const root = tmp();
    const name = Buffer.from([0x6e, 0xe9, 0x2e, 0x74]); // "né.t" in Latin-1
    writeFileSync(Buffer.concat([Buffer.from(`${root}/`), name]), "latin");
    const r = scanWorkspace(root, { excludes: EX });
    expect(r.manifest.entries).toHaveLength(1);
    expect(r.manifest.entries[0]?.path_b64).toBe(name.toString("base64"));
    expect(r.manifest.entries[0]?.oid).toBe(gitBlobId(Buffer.from("latin")));
  });

  it("handles very long paths (~3.9 KB, 255-byte names)", () => {
    const root = tmp();
    const seg = "d".repeat(200);
    let rel = "";
    while (root.length + rel.length + 2 * seg.length < 3900)
      rel = rel === "" ? seg : `${rel}/${seg}`;
    mkdirSync(join(root, rel), { recursive: true });
    const leaf = `${rel}/${"f".repeat(255)}`;
    writeFileSync(join(root, leaf), "deep");
    const r = scanWorkspace(root, { excludes: EX });
    expect(r.skipped).toEqual([]);
    expect(r.manifest.entries.at(-1)?.path).toBe(leaf);
  });
});

describe("small", () => {
  it("gives the same number, as a small integer only where one holds it", () => {
    for (const n of [0, 1, 420, 0o100644, 0x3fffffff, 0x40000000, 2 ** 40, 1.5, -1]) {
      expect(small(n)).toBe(n);
    }
  });
});

describe("scan entries", () => {
  it("are plain literals of one shape per type, path_b64 only for byte names", () => {
    const t = makeTempDir();
    try {
      mkdirSync(join(t.dir, "d"));
      writeFileSync(join(t.dir, "d/f.txt"), "hello");
      writeFileSync(join(t.dir, Buffer.from([0x66, 0xff]).toString("latin1")), "x");
      const r = scanWorkspace(t.dir, { excludes: [] });
      const file = r.manifest.entries.find((e) => e.path === "d/f.txt");
      expect(Object.keys(file ?? {})).toEqual(["path", "type", "mode", "size", "mtime_ms", "oid"]);
      expect(file?.size).toBe(5);
      const dir = r.manifest.entries.find((e) => e.path === "d");
      expect(Object.keys(dir ?? {})).toEqual(["path", "type", "mode", "size", "mtime_ms"]);
      const cached = r.statCache.entries.get("d/f.txt");
      expect(cached).toMatchObject({ size: 5, ino: lstatSync(join(t.dir, "d/f.txt")).ino });
    } finally {
      t.cleanup();
    }
  });
});
