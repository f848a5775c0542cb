import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  chmodSync,
  closeSync,
  linkSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  readSync,
  rmSync,
  symlinkSync,
  truncateSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createSnapshot } from "../src/store/index.ts";
import { returnToPresent, travel } from "../src/timemachine/index.ts";
import { makeTempDir } from "./helpers/cli.ts";

/**
 * Issue 16's property: on generated trees (nested and empty directories, text, CRLF, no final
 * newline, binary, odd UTF-8 names and a name that is not UTF-8, exec bits, symlinks (dangling
 * too), hard links, and what a snapshot skips: a file over a small max_file_bytes, a FIFO and a
 * socket), snapshot → changes → travel → changes in the past → return gives back the present
 * byte for byte, and every skipped path untouched (same inode, content, mode). Unreadable files
 * and mode-000 directories need a user other than root: test/timemachine-skipped.test.ts runs
 * them through the real CLI as nobody.
 */

const CAP = 2048;
const NAMES = ["a.txt", "é ü.md", "日本語", "-dash", "#x", "sp ace", "b.bin", "CRLF.txt"];
const BYTE_NAME = Buffer.from([0x6e, 0xff, 0xfe, 0x2e, 0x74]); // "n\xff\xfe.t": not UTF-8
const DIRS = ["", "src", "src/deep", "empty", "x y"];

const content = fc.oneof(
  fc.string({ maxLength: 40 }).map((s) => Buffer.from(`${s}\n`)),
  fc.string({ maxLength: 40 }).map((s) => Buffer.from(s)), // no final newline
  fc.array(fc.string({ maxLength: 12 }), { maxLength: 4 }).map((l) => Buffer.from(l.join("\r\n"))),
  fc.uint8Array({ maxLength: 64 }).map((u) => Buffer.from(u)),
);

type Op =
  | { op: "file"; dir: number; name: number; bytes: Buffer; exec: boolean }
  | { op: "byteName"; dir: number; bytes: Buffer }
  | { op: "symlink"; dir: number; name: number; target: number; dangling: boolean }
  | { op: "hardlink"; from: number; dir: number; name: number }
  | { op: "delete"; pick: number }
  | { op: "chmod"; pick: number; exec: boolean }
  | { op: "big"; dir: number; name: number; sparse: boolean }
  | { op: "fifo"; dir: number; name: number }
  | { op: "socket"; dir: number; name: number }
  | { op: "mkdir"; dir: number };

const idx = (n: number) => fc.nat({ max: n - 1 });
const fileOps: fc.Arbitrary<Op>[] = [
  fc.record({
    op: fc.constant("file" as const),
    dir: idx(DIRS.length),
    name: idx(NAMES.length),
    bytes: content,
    exec: fc.boolean(),
  }),
  fc.record({ op: fc.constant("byteName" as const), dir: idx(DIRS.length), bytes: content }),
  fc.record({
    op: fc.constant("symlink" as const),
    dir: idx(DIRS.length),
    name: idx(NAMES.length),
    target: idx(NAMES.length),
    dangling: fc.boolean(),
  }),
  fc.record({
    op: fc.constant("hardlink" as const),
    from: fc.nat(),
    dir: idx(DIRS.length),
    name: idx(NAMES.length),
  }),
  fc.record({ op: fc.constant("delete" as const), pick: fc.nat() }),
  fc.record({ op: fc.constant("chmod" as const), pick: fc.nat(), exec: fc.boolean() }),
  fc.record({ op: fc.constant("mkdir" as const), dir: idx(DIRS.length) }),
];
const skipOps: fc.Arbitrary<Op>[] = [
  fc.record({
    op: fc.constant("big" as const),
    dir: idx(DIRS.length),
    name: idx(NAMES.length),
    sparse: fc.boolean(),
  }),
  fc.record({ op: fc.constant("fifo" as const), dir: idx(DIRS.length), name: idx(NAMES.length) }),
  fc.record({
    op: fc.constant("socket" as const),
    dir: idx(DIRS.length),
    name: idx(NAMES.length),
  }),
];
const anyOp = fc.oneof(...fileOps, ...skipOps);
const capturedOp = fc.oneof(...fileOps);

/** Every path below `root` (not .timewarp) as raw bytes joined by "/", keyed in latin1. */
function walk(root: string): { key: string; fs: Buffer }[] {
  const out: { key: string; fs: Buffer }[] = [];
  const visit = (rel: Buffer | null) => {
    const dir = rel === null ? Buffer.from(root) : Buffer.concat([Buffer.from(`${root}/`), rel]);
    for (const name of readdirSync(dir, { encoding: "buffer" })) {
      if (rel === null && name.toString() === ".timewarp") continue;
      const r = rel === null ? name : Buffer.concat([rel, Buffer.from("/"), name]);
      const fs = Buffer.concat([Buffer.from(`${root}/`), r]);
      out.push({ key: r.toString("latin1"), fs });
      if (lstatSync(fs).isDirectory()) visit(r);
    }
  };
  visit(null);
  return out.sort((a, b) => (a.key < b.key ? -1 : 1));
}

/** Regular files (not over the cap): paths that a change may pick. */
function captured(root: string): { key: string; fs: Buffer }[] {
  return walk(root).filter((p) => {
    const st = lstatSync(p.fs);
    return st.isFile() && st.size <= CAP;
  });
}

/**
 * The tree as a map: type, mode, bytes (hashed) and link target; hard links as the group's
 * first path; the inode too for what a snapshot skips (a big file, a FIFO, a socket).
 */
function readTree(root: string): Map<string, string> {
  const out = new Map<string, string>();
  const groups = new Map<number, string>();
  for (const p of walk(root)) {
    const st = lstatSync(p.fs);
    const mode = (st.mode & 0o7777).toString(8);
    if (st.isDirectory()) out.set(p.key, `dir ${mode}`);
    else if (st.isSymbolicLink())
      out.set(p.key, `link ${readlinkSync(p.fs, { encoding: "buffer" }).toString("hex")}`);
    else if (st.isFile() && st.size <= CAP) {
      const hash = createHash("sha1").update(readFileSync(p.fs)).digest("hex");
      let group = "";
      if (st.nlink > 1) {
        group = groups.get(st.ino) ?? p.key;
        groups.set(st.ino, group);
      }
      out.set(p.key, `file ${mode} ${hash} ${group}`);
    } else if (st.isFile()) {
      const fd = openSync(p.fs, "r");
      const head = Buffer.alloc(64);
      readSync(fd, head, 0, 64, 0);
      closeSync(fd);
      out.set(p.key, `big ${mode} ino=${st.ino} size=${st.size} ${head.toString("hex")}`);
    } else out.set(p.key, `${st.isFIFO() ? "fifo" : "socket"} ${mode} ino=${st.ino}`);
  }
  return out;
}

/** `inPast`: a path the snapshot skipped (a big file, a FIFO, a socket) is not the past's to replace. */
function apply(root: string, ops: Op[], inPast = false): void {
  const at = (dir: number, name: Buffer | string) =>
    Buffer.concat([
      Buffer.from(`${root}/${DIRS[dir]}${DIRS[dir] === "" ? "" : "/"}`),
      Buffer.from(name),
    ]);
  const clear = (path: Buffer) => {
    try {
      const st = lstatSync(path);
      if (st.isDirectory()) return false; // never replace a directory
      if (inPast && !st.isSymbolicLink() && !(st.isFile() && st.size <= CAP)) return false;
      rmSync(path);
    } catch {
      // absent
    }
    return true;
  };
  const parent = (dir: number) => mkdirSync(`${root}/${DIRS[dir]}`, { recursive: true });
  for (const o of ops) {
    switch (o.op) {
      case "file":
      case "byteName": {
        parent(o.dir);
        const path = at(o.dir, o.op === "file" ? (NAMES[o.name] as string) : BYTE_NAME);
        if (!clear(path)) break;
        writeFileSync(path, o.bytes);
        chmodSync(path, o.op === "file" && o.exec ? 0o755 : 0o644);
        break;
      }
      case "symlink": {
        parent(o.dir);
        const path = at(o.dir, NAMES[o.name] as string);
        if (!clear(path)) break;
        symlinkSync(o.dangling ? `missing/${o.target}` : (NAMES[o.target] as string), path);
        break;
      }
      case "hardlink": {
        const files = captured(root);
        if (files.length === 0) break;
        const from = (files[o.from % files.length] as { fs: Buffer }).fs;
        parent(o.dir);
        const path = at(o.dir, NAMES[o.name] as string);
        if (path.equals(from) || !clear(path)) break;
        linkSync(from, path);
        break;
      }
      case "delete":
      case "chmod": {
        const files = captured(root);
        if (files.length === 0) break;
        const path = (files[o.pick % files.length] as { fs: Buffer }).fs;
        if (o.op === "delete") rmSync(path);
        else chmodSync(path, o.exec ? 0o755 : 0o600);
        break;
      }
      case "mkdir":
        mkdirSync(`${root}/${DIRS[o.dir]}/new dir`, { recursive: true });
        break;
      case "big": {
        parent(o.dir);
        const path = at(o.dir, NAMES[o.name] as string);
        if (!clear(path)) break;
        if (o.sparse) {
          writeFileSync(path, "x");
          truncateSync(path, 64 * 1024 * 1024);
        } else writeFileSync(path, Buffer.alloc(CAP * 2 + o.name, 0x5a));
        break;
      }
      case "fifo":
      case "socket": {
        parent(o.dir);
        const path = at(o.dir, NAMES[o.name] as string);
        if (!clear(path)) break;
        const r =
          o.op === "fifo"
            ? spawnSync("mkfifo", [path.toString()])
            : spawnSync("python3", [
                "-c",
                "import socket,sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])",
                path.toString(),
              ]);
        if (r.status !== 0) throw new Error(`${o.op}: ${r.stderr}`);
        break;
      }
    }
  }
}

describe("snapshot → change → travel → change in the past → return (property)", () => {
  it("gives back the present byte for byte and leaves every skipped path untouched", () => {
    fc.assert(
      fc.property(
        fc.array(anyOp, { minLength: 3, maxLength: 14 }),
        fc.array(anyOp, { minLength: 1, maxLength: 10 }),
        fc.array(capturedOp, { minLength: 1, maxLength: 8 }),
        (initial, present, past) => {
          const t = makeTempDir("tw-prop-");
          try {
            const root = t.dir;
            mkdirSync(join(root, ".timewarp"));
            writeFileSync(
              join(root, ".timewarp", "config.json"),
              JSON.stringify({ schema_version: 1, max_file_bytes: CAP, watch: false }),
            );
            mkdirSync(join(root, "empty"));
            apply(root, initial);
            const snapshot = createSnapshot(root, {});
            apply(root, present);
            const before = readTree(root);
            travel({ root, snapshotId: snapshot.id });
            // Skipped paths are as the present had them, in the past too.
            const inPast = readTree(root);
            for (const [k, v] of before) {
              if (/^(big|fifo|socket) /.test(v)) expect(inPast.get(k), k).toBe(v);
            }
            apply(
              root,
              past.filter((o) => o.op !== "mkdir"),
              true,
            );
            returnToPresent({ root });
            const after = readTree(root);
            expect([...after.entries()]).toEqual([...before.entries()]);
          } finally {
            t.cleanup();
          }
        },
      ),
      { numRuns: 8 },
    );
  }, 300_000);
});
