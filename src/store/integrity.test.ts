import { randomBytes } from "node:crypto";
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  truncateSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { backdate } from "../../test/helpers/backdate.ts";
import { makeTempDir } from "../../test/helpers/cli.ts";
import { canMountTmpfs, mountSmallTmpfs } from "../../test/helpers/small-fs.ts";
import { DEFAULT_EXCLUDES, isTimewarpError, readEvents, workspacePaths } from "../core/index.ts";
import {
  createObjectStore,
  createSnapshot,
  exportSnapshot,
  fsck,
  listSnapshots,
  listSnapshotsChecked,
  peekStatCache,
  readManifest,
  readManifestText,
  readStatCache,
} from "./index.ts";
import { writeStatCache } from "./stat-cache.ts";
import { decodeOverlay, encodeOverlay } from "./stat-cache-overlay.ts";

const OPTS = { excludes: [...DEFAULT_EXCLUDES], maxFileBytes: 1e9 };

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (error) {
    return isTimewarpError(error) ? error.code : `not a TimewarpError: ${String(error)}`;
  }
  return undefined;
}

/** Swap the raw 20-byte ids of two entries in place (a tampered or bit-rotted cache). */
function swapIds(file: string, a: string, b: string): void {
  const buf = readFileSync(file);
  const ra = Buffer.from(a, "hex");
  const rb = Buffer.from(b, "hex");
  const at = buf.indexOf(ra);
  const bt = buf.indexOf(rb);
  expect(at).toBeGreaterThan(0);
  expect(bt).toBeGreaterThan(0);
  rb.copy(buf, at);
  ra.copy(buf, bt);
  writeFileSync(file, buf);
}

/** What the store holds for `path` in the manifest of `id`. */
function storedBytes(root: string, id: string, path: string): string {
  const e = readManifest(root, id).entries.find((x) => x.path === path);
  return createObjectStore(workspacePaths(root).objects)
    .read(e?.oid ?? "")
    .toString();
}

describe("trusted caches are checked, never trusted blindly (issue 16, class 6)", () => {
  const cleanups: (() => void)[] = [];
  afterEach(() => {
    for (const c of cleanups.splice(0).reverse()) c();
  });
  const tmp = () => {
    const t = makeTempDir();
    cleanups.push(t.cleanup);
    return t.dir;
  };
  const twoFiles = (root: string) => {
    writeFileSync(join(root, "a.txt"), "AAAA\n");
    writeFileSync(join(root, "b.txt"), "BBBB\n");
    writeFileSync(join(root, "c.txt"), "CCCC\n");
    backdate(root, ["a.txt", "b.txt", "c.txt"]);
  };

  it("ids swapped in stat-cache.bin: the next snapshot (walk) records the true bytes, fsck reports the cache", () => {
    const root = tmp();
    twoFiles(root);
    const first = createSnapshot(root, OPTS);
    const oid = (p: string) => first.manifest.entries.find((e) => e.path === p)?.oid ?? "";
    const paths = workspacePaths(root);
    swapIds(paths.statCache, oid("a.txt"), oid("b.txt"));
    const report = fsck(root);
    expect(report.ok).toBe(false);
    expect(report.problems).toContainEqual(
      expect.objectContaining({ kind: "corrupt_cache", subject: paths.statCache }),
    );
    const second = createSnapshot(root, OPTS);
    expect(storedBytes(root, second.id, "a.txt")).toBe("AAAA\n");
    expect(storedBytes(root, second.id, "b.txt")).toBe("BBBB\n");
    expect(second.rehashed).toBe(3); // discarded: one full re-hash
    const discarded = readEvents(paths.events).events.filter((e) => e.type === "cache.discarded");
    expect(discarded).toHaveLength(1);
    expect(discarded[0]?.data).toMatchObject({ file: paths.statCache });
    expect(fsck(root).ok).toBe(true);
  });

  it("ids swapped in a spliced (delta) stat cache: the delta snapshot still records the true bytes", () => {
    const root = tmp();
    twoFiles(root);
    createSnapshot(root, OPTS);
    createSnapshot(root, { ...OPTS, changed: [] }); // records the manifest file: deltas from now on
    writeFileSync(join(root, "c.txt"), "cccc\n");
    const third = createSnapshot(root, { ...OPTS, changed: ["c.txt"] });
    expect(third.scan).toBe("delta");
    const oid = (p: string) => third.manifest.entries.find((e) => e.path === p)?.oid ?? "";
    const paths = workspacePaths(root);
    swapIds(paths.statCache, oid("a.txt"), oid("b.txt"));
    expect(fsck(root).problems).toContainEqual(
      expect.objectContaining({ kind: "corrupt_cache", subject: paths.statCache }),
    );
    const fourth = createSnapshot(root, { ...OPTS, changed: ["a.txt", "b.txt"] });
    expect(fourth.scan).not.toBe("delta");
    expect(storedBytes(root, fourth.id, "a.txt")).toBe("AAAA\n");
    expect(storedBytes(root, fourth.id, "b.txt")).toBe("BBBB\n");
  });

  it("a cache that fails its check is discarded by every reader", () => {
    const root = tmp();
    twoFiles(root);
    createSnapshot(root, OPTS);
    const paths = workspacePaths(root);
    const buf = readFileSync(paths.statCache);
    buf[buf.length - 30] = (buf[buf.length - 30] ?? 0) ^ 1; // one bit in the trailer
    writeFileSync(paths.statCache, buf);
    expect(readStatCache(paths.statCache).entries.size).toBe(0);
  });

  it("fsck finds a cache entry that lies with a valid checksum; a damaged header is not peeked", () => {
    const root = tmp();
    twoFiles(root);
    const first = createSnapshot(root, OPTS);
    createSnapshot(root, OPTS); // past the racy window
    const paths = workspacePaths(root);
    const cache = readStatCache(paths.statCache);
    const a = cache.entries.get("a.txt");
    const bOid = first.manifest.entries.find((e) => e.path === "b.txt")?.oid ?? "";
    if (a === undefined) throw new Error("a.txt not cached");
    cache.entries.set("a.txt", { ...a, oid: bOid }); // what a bug could write, sum and all
    writeStatCache(paths.statCache, cache);
    expect(fsck(root).problems).toEqual([
      expect.objectContaining({
        kind: "corrupt_cache",
        path: paths.statCache,
        code: "CORRUPT_FILE",
        detail: expect.stringContaining("a.txt: the file hashes to"),
      }),
    ]);
    expect(peekStatCache(paths.statCache)).not.toBeNull();
    const buf = readFileSync(paths.statCache);
    buf[9] = (buf[9] ?? 0) ^ 1; // the scan start
    writeFileSync(paths.statCache, buf);
    expect(peekStatCache(paths.statCache)).toBeNull();
  });

  it("fsck reads the stat cache with its overlay: a lying overlay entry and a damaged overlay", () => {
    const root = tmp();
    twoFiles(root);
    createSnapshot(root, OPTS);
    createSnapshot(root, { ...OPTS, changed: [] }); // deltas from now on: an overlay
    writeFileSync(join(root, "c.txt"), "cccc\n");
    backdate(root, ["c.txt"]);
    const third = createSnapshot(root, { ...OPTS, changed: ["c.txt"] });
    expect(third.scan).toBe("delta");
    const paths = workspacePaths(root);
    const overlay = `${paths.statCache}.overlay`;
    expect(existsSync(overlay)).toBe(true);
    expect(fsck(root).problems).toEqual([]);
    // c.txt's entry lives only in the overlay: given a.txt's id, sum and all (what a bug could
    // write), it is found only by a check of the base with the overlay applied
    const aOid = third.manifest.entries.find((e) => e.path === "a.txt")?.oid ?? "";
    const sound = readFileSync(overlay);
    const decoded = decodeOverlay(sound);
    if (typeof decoded === "string") throw new Error(decoded);
    const c = decoded.files.get("c.txt");
    if (!c) throw new Error("c.txt is not in the overlay");
    const files = new Map(decoded.files).set("c.txt", { ...c, oid: aOid });
    writeFileSync(overlay, encodeOverlay({ ...decoded, files }));
    expect(fsck(root).problems).toEqual([
      expect.objectContaining({
        kind: "corrupt_cache",
        subject: paths.statCache,
        detail: expect.stringContaining("c.txt: the file hashes to"),
      }),
    ]);
    // one bit off: the overlay's checksum fails; fsck only looks, the next reader discards it
    const damaged = Buffer.from(sound);
    damaged[damaged.length >> 1] = (damaged[damaged.length >> 1] ?? 0) ^ 1;
    writeFileSync(overlay, damaged);
    expect(fsck(root).problems).toEqual([
      expect.objectContaining({
        kind: "corrupt_cache",
        subject: paths.statCache,
        detail: expect.stringContaining("overlay: its checksum does not match"),
      }),
    ]);
    expect(readFileSync(overlay).equals(damaged)).toBe(true);
  });

  it("a corrupt last-manifest.json.br is never linked into a new record", () => {
    const root = tmp();
    twoFiles(root);
    createSnapshot(root, OPTS);
    createSnapshot(root, { ...OPTS, changed: [] });
    const paths = workspacePaths(root);
    // the same length, other bytes: only a check of the bytes finds it (a copy: the link's
    // other name, the record's manifest, stays whole)
    const bytes = readFileSync(paths.lastManifest);
    bytes[bytes.length >> 1] = (bytes[bytes.length >> 1] ?? 0) ^ 0x40;
    rmSync(paths.lastManifest);
    writeFileSync(paths.lastManifest, bytes);
    expect(fsck(root).problems).toContainEqual(
      expect.objectContaining({ kind: "corrupt_cache", subject: paths.lastManifest }),
    );
    const next = createSnapshot(root, { ...OPTS, changed: [] });
    expect(() => readManifest(root, next.id)).not.toThrow();
    expect(readManifest(root, next.id).entries.map((e) => e.path)).toEqual([
      "a.txt",
      "b.txt",
      "c.txt",
    ]);
    expect(fsck(root).ok).toBe(true);
  });

  it("a truncated manifest is CORRUPT_FILE naming the file, by every reader", () => {
    const root = tmp();
    twoFiles(root);
    const snap = createSnapshot(root, OPTS);
    const file = join(snap.dir, "manifest.json.br");
    truncateSync(file, 10);
    for (const read of [() => readManifest(root, snap.id), () => readManifestText(root, snap.id)]) {
      expect(codeOf(read)).toBe("CORRUPT_FILE");
      try {
        read();
      } catch (error) {
        expect(isTimewarpError(error) && error.data?.file).toBe(file);
      }
    }
    expect(fsck(root).problems).toContainEqual(
      expect.objectContaining({ kind: "bad_record", code: "CORRUPT_FILE", subject: snap.id }),
    );
  });

  it("one truncated snapshot.json: the others are listed, the bad one flagged", () => {
    const root = tmp();
    twoFiles(root);
    const a = createSnapshot(root, OPTS);
    const b = createSnapshot(root, OPTS);
    const c = createSnapshot(root, OPTS);
    truncateSync(join(b.dir, "snapshot.json"), 20);
    expect(codeOf(() => listSnapshots(root))).toBe("CORRUPT_FILE"); // gc's view: all or nothing
    const listed = listSnapshotsChecked(root);
    expect(listed.records.map((r) => r.snapshot_id)).toEqual([a.id, c.id]);
    expect(listed.corrupt).toEqual([
      expect.objectContaining({
        id: b.id,
        code: "CORRUPT_FILE",
        file: join(b.dir, "snapshot.json"),
      }),
    ]);
  });

  it.skipIf(!canMountTmpfs)(
    "an export onto a full disk is DISK_FULL and leaves no target folder, whole or half",
    () => {
      const root = tmp();
      writeFileSync(join(root, "a.txt"), "small\n");
      mkdirSync(join(root, "big"));
      for (let i = 0; i < 4; i++) writeFileSync(join(root, `big/${i}.bin`), randomBytes(300_000));
      const snap = createSnapshot(root, OPTS);
      const fs = mountSmallTmpfs(512);
      if (fs === null) throw new Error("tmpfs");
      cleanups.push(fs.unmount);
      const out = join(fs.dir, "out");
      expect(codeOf(() => exportSnapshot(root, snap.id, out))).toBe("DISK_FULL");
      expect(existsSync(out)).toBe(false);
      expect(readdirSync(fs.dir)).toEqual([]);
      // an empty target directory stays as it was
      mkdirSync(out);
      expect(codeOf(() => exportSnapshot(root, snap.id, out))).toBe("DISK_FULL");
      expect(readdirSync(fs.dir)).toEqual(["out"]);
      expect(readdirSync(out)).toEqual([]);
    },
  );

  it("an export appears whole at the end; a killed export's folder is removed by the next", () => {
    const root = tmp();
    twoFiles(root);
    const snap = createSnapshot(root, OPTS);
    const parent = tmp();
    const out = join(parent, "out");
    // what an export killed mid-copy leaves (pid 2^22 + 1 is above Linux's pid_max: not alive)
    const stale = join(parent, ".out.tw-export-4194305-0badc0de");
    mkdirSync(join(stale, "workspace"), { recursive: true });
    exportSnapshot(root, snap.id, out);
    expect(readdirSync(parent)).toEqual(["out"]);
    expect(readdirSync(out).sort()).toEqual(["snapshot.json", "workspace"]);
    expect(readFileSync(join(out, "workspace/b.txt"), "utf8")).toBe("BBBB\n");
    expect(codeOf(() => exportSnapshot(root, snap.id, out))).toBe("TARGET_NOT_EMPTY");
  });
});
