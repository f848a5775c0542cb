import { spawnSync } from "node:child_process";
import {
  chownSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  rmSync,
  truncateSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { readSnapshot } from "../src/store/index.ts";
import {
  readStatus,
  recover,
  returnToPresent,
  startSession,
  travel,
} from "../src/timemachine/index.ts";
import { cliCommand, makeTempDir, runCli } from "./helpers/cli.ts";

/**
 * Issue 16, class 1: what a snapshot did not capture (too large, special, unreadable, an
 * unreadable directory) is never touched, deleted, chmodded or verified by travel, return,
 * the rollback of a failed travel, or recover.
 */

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.splice(0).reverse()) c();
});

const CAP = 4096;

function workspace(): string {
  const t = makeTempDir("tw-skipped-");
  cleanups.push(t.cleanup);
  mkdirSync(join(t.dir, ".timewarp"));
  writeFileSync(
    join(t.dir, ".timewarp", "config.json"),
    JSON.stringify({ schema_version: 1, max_file_bytes: CAP, watch: false }),
  );
  return t.dir;
}

/** A path's identity and bytes, read without blocking on a FIFO or following a link. */
function identity(path: string): string {
  const st = lstatSync(path);
  const kind = st.isFile() ? "file" : st.isDirectory() ? "dir" : st.isFIFO() ? "fifo" : "other";
  const mode = (st.mode & 0o7777).toString(8);
  let content = "";
  if (st.isFile() && (st.mode & 0o444) !== 0 && st.size < 1 << 20) {
    content = readFileSync(path).toString("hex").slice(0, 64);
  }
  return `${kind} ${mode} ino=${st.ino} size=${st.size} ${content}`;
}

function mkfifo(path: string): void {
  const r = spawnSync("mkfifo", [path]);
  if (r.status !== 0) throw new Error(`mkfifo failed: ${r.stderr}`);
}

function mksocket(path: string): void {
  const r = spawnSync("python3", [
    "-c",
    "import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])",
    path,
  ]);
  if (r.status !== 0) throw new Error(`socket failed: ${r.stderr}`);
}

/** The present: a.txt changed, plus every kind of path a snapshot skips, with their identities. */
function addSkippedKinds(root: string): Map<string, string> {
  writeFileSync(join(root, "a.txt"), "present\n");
  writeFileSync(join(root, "big.bin"), Buffer.alloc(CAP * 3, 7));
  writeFileSync(join(root, "big.sparse"), "");
  truncateSync(join(root, "big.sparse"), 120 * 1024 * 1024);
  mkdirSync(join(root, "deep", "er"), { recursive: true });
  mkfifo(join(root, "deep", "er", "fifo"));
  mksocket(join(root, "deep", "sock"));
  writeFileSync(join(root, "deep", "ok.txt"), "ok\n");
  const ids = new Map<string, string>();
  for (const p of ["big.bin", "big.sparse", "deep/er/fifo", "deep/sock"]) {
    ids.set(p, identity(join(root, p)));
  }
  return ids;
}

function expectUntouched(root: string, ids: Map<string, string>): void {
  for (const [p, id] of ids) expect(identity(join(root, p)), p).toBe(id);
}

async function prepared(): Promise<{ root: string; snapshotId: string }> {
  const root = workspace();
  writeFileSync(join(root, "a.txt"), "past\n");
  mkdirSync(join(root, "deep"));
  writeFileSync(join(root, "deep", "old.txt"), "old\n");
  const { snapshot_id } = await startSession({ root, sessionId: "skipped" });
  return { root, snapshotId: snapshot_id };
}

describe("what a snapshot skipped, nothing restores", () => {
  it("a large file (real and 120 MiB sparse), a FIFO and a socket survive travel and return untouched", async () => {
    const { root, snapshotId } = await prepared();
    const ids = addSkippedKinds(root);
    travel({ root, snapshotId });
    expect(readFileSync(join(root, "a.txt"), "utf8")).toBe("past\n");
    expect(readFileSync(join(root, "deep", "old.txt"), "utf8")).toBe("old\n");
    expectUntouched(root, ids);
    writeFileSync(join(root, "a.txt"), "changed in the past\n");
    const back = returnToPresent({ root });
    expect(back.mode).toBe("present");
    expect(readFileSync(join(root, "a.txt"), "utf8")).toBe("present\n");
    expect(readFileSync(join(root, "deep", "ok.txt"), "utf8")).toBe("ok\n");
    expectUntouched(root, ids);
    // and again: a second round trip from the same state
    travel({ root, snapshotId });
    returnToPresent({ root });
    expectUntouched(root, ids);
  });

  it("a path the snapshot itself skipped is not deleted by travel (the snapshot never held it)", async () => {
    const root = workspace();
    writeFileSync(join(root, "a.txt"), "past\n");
    writeFileSync(join(root, "huge.dat"), Buffer.alloc(CAP * 2, 1));
    const { snapshot_id } = await startSession({ root, sessionId: "s" });
    expect(readSnapshot(root, snapshot_id).skipped.map((s) => s.path)).toEqual(["huge.dat"]);
    writeFileSync(join(root, "huge.dat"), Buffer.alloc(CAP, 2)); // now small: captured by the backup
    const before = identity(join(root, "huge.dat"));
    travel({ root, snapshotId: snapshot_id });
    expect(identity(join(root, "huge.dat"))).toBe(before);
    returnToPresent({ root });
    expect(identity(join(root, "huge.dat"))).toBe(before);
  });

  it("the rollback of a failed travel leaves skipped paths alone", async () => {
    const { root, snapshotId } = await prepared();
    const ids = addSkippedKinds(root);
    expect(() =>
      travel({
        root,
        snapshotId,
        onStep: (s) => {
          if (s === "travel:restored")
            throw Object.assign(new Error("ENOSPC: no space left"), { code: "ENOSPC" });
        },
      }),
    ).toThrow(/put back to the present/);
    expect(readStatus(root)).toMatchObject({ mode: "present", transition: null });
    expect(readFileSync(join(root, "a.txt"), "utf8")).toBe("present\n");
    expectUntouched(root, ids);
  });

  it("recover finishes an interrupted return although special files are in the tree", async () => {
    const { root, snapshotId } = await prepared();
    const ids = addSkippedKinds(root);
    travel({ root, snapshotId });
    expect(() =>
      returnToPresent({
        root,
        onStep: (s) => {
          if (s === "return:verify") throw Object.assign(new Error("EIO: boom"), { code: "EIO" });
        },
      }),
    ).toThrow();
    expect(readStatus(root).transition).not.toBeNull();
    expect(recover({ root })).toMatchObject({ outcome: "return_finished", mode: "present" });
    expect(readFileSync(join(root, "a.txt"), "utf8")).toBe("present\n");
    expectUntouched(root, ids);
  });

  it("a FIFO made in the past is kept by return and does not fail its verification", async () => {
    const { root, snapshotId } = await prepared();
    writeFileSync(join(root, "a.txt"), "present\n");
    travel({ root, snapshotId });
    mkfifo(join(root, "made-in-past.fifo"));
    const id = identity(join(root, "made-in-past.fifo"));
    expect(returnToPresent({ root }).mode).toBe("present");
    expect(identity(join(root, "made-in-past.fifo"))).toBe(id);
  });
});

describe("snapshot diff and export", () => {
  it("a path one side skipped is listed apart, never as removed; export lists what it lacks", () => {
    const root = workspace();
    writeFileSync(join(root, "grows.dat"), "small\n");
    writeFileSync(join(root, "a.txt"), "a\n");
    const first = runCli(["--json", "snapshot", "create"], {
      cwd: root,
      env: { TIMEWARP_WATCH: "0" },
    });
    const a = (first.json() as { snapshot_id: string }).snapshot_id;
    writeFileSync(join(root, "grows.dat"), Buffer.alloc(CAP * 2, 1)); // now over the cap
    mkfifo(join(root, "pipe"));
    const now = runCli(["--json", "snapshot", "diff", a], {
      cwd: root,
      env: { TIMEWARP_WATCH: "0" },
    });
    expect(now.status, now.stderr).toBe(0);
    expect(now.json()).toMatchObject({ removed: [], added: [], skipped: ["grows.dat", "pipe"] });
    const second = runCli(["--json", "snapshot", "create"], {
      cwd: root,
      env: { TIMEWARP_WATCH: "0" },
    });
    const b = (second.json() as { snapshot_id: string }).snapshot_id;
    const d = runCli(["--json", "snapshot", "diff", a, b], {
      cwd: root,
      env: { TIMEWARP_WATCH: "0" },
    });
    expect(d.json()).toMatchObject({ removed: [], skipped: ["grows.dat", "pipe"] });
    const out = join(root, "..", `${root.split("/").pop()}-export`);
    cleanups.push(() => rmSync(out, { recursive: true, force: true }));
    const ex = runCli(["--json", "snapshot", "export", b, out], {
      cwd: root,
      env: { TIMEWARP_WATCH: "0" },
    });
    expect(ex.status, ex.stderr).toBe(0);
    expect((ex.json() as { skipped: { path: string }[] }).skipped.map((s) => s.path)).toEqual([
      "grows.dat",
      "pipe",
    ]);
  }, 120_000);
});

const isRoot = process.getuid?.() === 0;
const hasSetpriv = spawnSync("setpriv", ["--version"]).status === 0;

/** The real CLI as user nobody (root reads everything, so unreadable paths need another user). */
function asNobody(cwd: string, args: string[], env: NodeJS.ProcessEnv = {}) {
  const cli = cliCommand();
  const r = spawnSync(
    "setpriv",
    [
      "--reuid=nobody",
      "--regid=nogroup",
      "--clear-groups",
      cli.command,
      ...cli.args,
      "--json",
      ...args,
    ],
    {
      cwd,
      encoding: "utf8",
      env: { ...process.env, NO_COLOR: "1", TIMEWARP_WATCH: "0", HOME: cwd, ...env },
      timeout: 120_000,
    },
  );
  return { status: r.status, json: () => JSON.parse(r.stdout), out: r.stdout + r.stderr };
}

function sh(cwd: string, script: string): string {
  const r = spawnSync(
    "setpriv",
    ["--reuid=nobody", "--regid=nogroup", "--clear-groups", "sh", "-c", script],
    {
      cwd,
      encoding: "utf8",
    },
  );
  if (r.status !== 0) throw new Error(`${script}: ${r.stderr}`);
  return r.stdout;
}

describe.skipIf(!isRoot || !hasSetpriv)("as a user who cannot read everything (nobody)", () => {
  function nobodyWorkspace(): string {
    const root = workspace();
    spawnSync("chown", ["-R", "nobody:nogroup", root]);
    chownSync(root, 65534, 65534);
    return root;
  }

  it("a mode-000 directory with unsaved work and an unreadable file survive travel, return and a rolled-back travel", () => {
    const root = nobodyWorkspace();
    sh(root, "mkdir keep && echo old > keep/old.txt && echo past > a.txt");
    const snap = asNobody(root, ["snapshot", "create"]);
    expect(snap.status, snap.out).toBe(0);
    const snapshotId = (snap.json() as { snapshot_id: string }).snapshot_id;
    sh(
      root,
      "echo unsaved > keep/new.txt && chmod 000 keep && echo present > a.txt && echo s > secret.txt && chmod 000 secret.txt",
    );
    const ls = () => sh(root, "stat -c '%n %a %i %s' keep secret.txt");
    const before = ls();

    const t = asNobody(root, ["travel", snapshotId]);
    expect(t.status, t.out).toBe(0);
    expect(ls()).toBe(before);
    const r = asNobody(root, ["return"]);
    expect(r.status, r.out).toBe(0);
    expect(ls()).toBe(before);

    const failed = asNobody(root, ["travel", snapshotId], {
      TIMEWARP_ENOSPC_AT: "travel:restored:1",
    });
    expect(failed.status).not.toBe(0);
    expect(failed.out).toMatch(/put back to the present/);
    expect(ls()).toBe(before);
    expect(sh(root, "chmod 755 keep && ls keep && cat a.txt")).toBe("new.txt\nold.txt\npresent\n");
  }, 300_000);
});
