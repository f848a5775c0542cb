import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { cliCommand } from "../../test/helpers/cli.ts";
import { tempDirs } from "../../test/helpers/temp-dirs.ts";
import { gitBlobId } from "../core/index.ts";
import { createObjectStore, createSnapshot, fsck, readManifest } from "../store/index.ts";
import { travel } from "./travel.ts";

const tempDir = tempDirs("tw-travel-durable-");

const MIB = 1024 * 1024;

function workspace(): string {
  const root = join(tempDir(), "ws");
  mkdirSync(join(root, ".timewarp"), { recursive: true });
  writeFileSync(
    join(root, ".timewarp", "config.json"),
    JSON.stringify({ schema_version: 1, watch: false }),
  );
  for (const n of ["a", "b", "c", "d"]) writeFileSync(join(root, `${n}.txt`), `${n} v1\n`);
  writeFileSync(join(root, "big5.bin"), Buffer.alloc(5 * MIB, 1)); // over the batch's 4 MiB arena
  writeFileSync(join(root, "big9.bin"), Buffer.alloc(9 * MIB, 2)); // over LARGE_OBJECT_BYTES
  return root;
}

/** The present's edits: three small files and both large ones; their new contents. */
function edit(root: string): { small: Buffer[]; large: Buffer[] } {
  const small = ["a", "b", "c"].map((n) => Buffer.from(`${n} edited since the snapshot\n`));
  for (const [i, n] of ["a", "b", "c"].entries()) {
    writeFileSync(join(root, `${n}.txt`), small[i] as Buffer);
  }
  const large = [Buffer.alloc(5 * MIB, 3), Buffer.alloc(9 * MIB, 4)];
  writeFileSync(join(root, "big5.bin"), large[0] as Buffer);
  writeFileSync(join(root, "big9.bin"), large[1] as Buffer);
  return { small, large };
}

const objectsOf = (root: string) => join(root, ".timewarp", "objects");
const packsOf = (root: string) =>
  readdirSync(join(objectsOf(root), "pack"), { withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith(".twpack"))
    .map((e) => e.name)
    .sort();
const looseOf = (root: string, oid: string) => join(objectsOf(root), oid.slice(0, 2), oid.slice(2));

describe("a travel's backup is durable", () => {
  it("stores the backup's new small objects as one pack, however few, and large ones loose", () => {
    const root = workspace();
    const past = createSnapshot(root, {});
    const { small, large } = edit(root);
    const packsBefore = existsSync(join(objectsOf(root), "pack")) ? packsOf(root) : [];

    const t = travel({ root, snapshotId: past.id });

    // One new pack holds all of the backup's small objects (another may hold copies of the
    // young loose objects the first snapshot wrote: the sweep makes those durable that way).
    const fresh = packsOf(root).filter((p) => !packsBefore.includes(p));
    const holds = (pack: string, bytes: Buffer) =>
      readFileSync(join(objectsOf(root), "pack", pack)).includes(
        Buffer.from(gitBlobId(bytes), "hex"),
      );
    const holding = fresh.filter((p) => small.some((b) => holds(p, b)));
    expect(holding).toHaveLength(1);
    for (const bytes of small) expect(holds(holding[0] as string, bytes)).toBe(true);
    const store = createObjectStore(objectsOf(root));
    const backup = readManifest(root, t.backup_id, { kind: "present_backup" });
    const named = new Set(backup.entries.map((e) => ("oid" in e ? e.oid : undefined)));
    for (const bytes of small) {
      const oid = gitBlobId(bytes);
      expect(named.has(oid)).toBe(true);
      expect(existsSync(looseOf(root, oid))).toBe(false); // not loose …
      expect(store.has(oid)).toBe(true); // … so in the new pack
    }
    for (const bytes of large) {
      const oid = gitBlobId(bytes);
      expect(named.has(oid)).toBe(true);
      expect(existsSync(looseOf(root, oid))).toBe(true); // written (and synced) on their own
    }
    // The workspace is the past's; the backup reads back whole.
    expect(readFileSync(join(root, "a.txt"), "utf8")).toBe("a v1\n");
    for (const bytes of small)
      expect(store.read(gitBlobId(bytes), { verify: true })).toEqual(bytes);
    // fsck reads the small pack; gc (which repacks it with the rest) keeps what the backup names.
    expect(fsck(root).ok).toBe(true);
    const cli = cliCommand();
    const gc = spawnSync(cli.command, [...cli.args, "gc", "--json"], {
      cwd: root,
      encoding: "utf8",
    });
    expect(gc.status, gc.stderr).toBe(0);
    expect(fsck(root).ok).toBe(true);
    const after = createObjectStore(objectsOf(root));
    for (const bytes of small)
      expect(after.read(gitBlobId(bytes), { verify: true })).toEqual(bytes);
  });

  it("leaves a plain snapshot's few new objects loose, as before", () => {
    const root = workspace();
    createSnapshot(root, {});
    const packsBefore = existsSync(join(objectsOf(root), "pack")) ? packsOf(root) : [];
    const { small } = edit(root);

    createSnapshot(root, {});

    const packsAfter = existsSync(join(objectsOf(root), "pack")) ? packsOf(root) : [];
    expect(packsAfter).toEqual(packsBefore);
    for (const bytes of small) expect(existsSync(looseOf(root, gitBlobId(bytes)))).toBe(true);
  });
});

/** Whether strace can trace a child here (it needs ptrace, which a container may refuse). */
function straceWorks(): boolean {
  const r = spawnSync("strace", ["-f", "-e", "trace=fsync", "-o", "/dev/null", "true"]);
  return r.status === 0;
}
const STRACE = straceWorks();

/**
 * The files and directories the CLI fsynced while running `args` (strace -y names the fds),
 * each once: `fsyncAll` syncs each twice (in libuv's pool, then again to be sure).
 */
function fsyncedBy(root: string, args: string[]): string[] {
  const out = join(root, "..", `strace-${args[0]}.txt`);
  const cli = cliCommand();
  const r = spawnSync(
    "strace",
    ["-f", "-y", "-e", "trace=fsync,fdatasync", "-o", out, cli.command, ...cli.args, ...args],
    { cwd: root, encoding: "utf8", env: { ...process.env, NO_COLOR: "1" }, timeout: 60_000 },
  );
  expect(r.status, r.stderr).toBe(0);
  const synced: string[] = [];
  // (a call another thread's line cut in two ends on a line of its own: `<... fsync resumed>`)
  const pending = new Map<string, string>();
  for (const line of readFileSync(out, "utf8").split("\n")) {
    const call = /^(\d+)\s+f(?:data)?sync\(\d+<([^>]*)>(\)\s*=\s*0|\s*<unfinished)/.exec(line);
    const resumed = /^(\d+)\s+<\.\.\. f(?:data)?sync resumed>\)\s*=\s*0/.exec(line);
    let path: string | undefined;
    if (call !== null && (call[3] as string).startsWith(")")) path = call[2];
    else if (call !== null) pending.set(call[1] as string, call[2] as string);
    else if (resumed !== null) path = pending.get(resumed[1] as string);
    // a file written temp-then-rename is synced under its temp name: count it under its own
    if (path !== undefined) synced.push(path.replace(/\/\.([^/]+)\.tw-tmp-[^/]*$/, "/$1"));
  }
  return [...new Set(synced)];
}

describe.skipIf(!STRACE)("a travel's backup is durable (fsyncs counted by strace)", () => {
  it("fsyncs the backup's pack, its large objects and a copy of a young object an earlier snapshot wrote; a snapshot fsyncs no object", () => {
    const root = workspace();
    const past = createSnapshot(root, {});
    // An earlier command (here a snapshot, as a turn checkpoint) stores d.txt's new content,
    // loose and not synced, seconds before the travel; the backup finds it stored already.
    writeFileSync(join(root, "d.txt"), "d written before the travel\n");
    const dOid = gitBlobId(Buffer.from("d written before the travel\n"));
    const snapshotSynced = fsyncedBy(root, ["snapshot", "create", "--json"]);
    expect(existsSync(looseOf(root, dOid))).toBe(true);
    expect(snapshotSynced.filter((p) => p.startsWith(objectsOf(root)))).toEqual([]);
    const { large } = edit(root);

    const synced = fsyncedBy(root, ["travel", past.id, "--json"]);

    const inObjects = synced.filter((p) => p.startsWith(`${objectsOf(root)}/`));
    const packs = inObjects.filter((p) => /\/pack\/[^/]*\.twpack/.test(p));
    // The backup's three small objects: one pack, one fsync, not three. The young loose object
    // an earlier command wrote is not synced where it lies but copied into one more synced
    // pack (its raw id is in that pack's index), as any number of them would be.
    expect(packs.length).toBe(2);
    expect(inObjects).not.toContain(looseOf(root, dOid));
    const holding = packs.filter((p) => readFileSync(p).includes(Buffer.from(dOid, "hex")));
    expect(holding).toHaveLength(1);
    for (const bytes of large) expect(inObjects).toContain(looseOf(root, gitBlobId(bytes)));
    // The manifest nodes the backup names, written by the snapshots seconds ago.
    const nodes = synced.filter((p) => p.startsWith(join(root, ".timewarp", "manifests", "pack-")));
    expect(nodes.length).toBeGreaterThan(0);
    // and the directories that gained them
    expect(synced).toContain(join(objectsOf(root), "pack"));
    expect(synced).toContain(join(root, ".timewarp", "manifests"));

    // Back, and out again at once: the second backup writes nothing new, and its sweep starts
    // where the first one began (the marker in .timewarp/tmp/), so it syncs none of those again.
    expect(fsyncedBy(root, ["return", "--json"]).length).toBeGreaterThan(0);
    const again = fsyncedBy(root, ["travel", past.id, "--json"]);
    const loose = again.filter((p) => /\/objects\/[0-9a-f]{2}\/[0-9a-f]{38}$/.test(p));
    expect(loose).toEqual([]);
  });
});

if (!STRACE) {
  describe("a travel's backup is durable (fsyncs counted by strace)", () => {
    it.skip("skipped: strace is missing or cannot trace here (ptrace refused)", () => {});
  });
}
