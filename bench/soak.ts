/**
 * `npm run soak`: random kill -9 through the real CLI, then `recover` and `fsck`, checked against
 * a model of what the user and the agent wrote (issue 16, "Tests and measures"). A soak, not a
 * test: not part of `npm test` or CI; it exits non-zero when a target is missed.
 *
 *   npm run soak                                   500 kills, a random seed (printed)
 *   npm run soak -- --kills 50 --seed 7            a quick, repeatable run
 *   npm run soak -- --enospc 0 --files 100 --dir /dev/shm
 *
 * One workspace of a few hundred files lives on through the whole run, as a user's would. Each
 * round picks an operation (travel, return, snapshot create, edit block / whole, edit patch
 * over several files, revert, revert --to, recover), brings the workspace into the mode it needs
 * with ordinary (unkilled) commands, sometimes writes a few files directly first (unsaved work),
 * then starts the operation and SIGKILLs it after a random delay spread over that operation's
 * measured duration. Then: `timewarp recover` (always: it answers NOTHING_TO_RECOVER when no
 * transition or ledger journal is pending), `timewarp fsck`, and the invariants:
 *
 * - bytes lost: a file the model expects (the present, its pre- or post-image for an edit in
 *   flight, the target snapshot when in the past, the exact pre-travel present after a return)
 *   that is neither, or whose pre-image a new ledger record names but the store lacks;
 * - edits unrecorded: a workspace file that differs from the model's expectation without a new
 *   ledger record whose post-image it is;
 * - fsck problems (a killed writer's temp files aside, which gc removes: counted apart).
 *
 * After the check the model adopts what is on disk, so one loss is counted once. ENOSPC rounds
 * (`--enospc N`, default 40) run the same operations, unkilled, in a second workspace on a tiny
 * tmpfs shrunk to just above its use; they need mount rights (root) and are skipped, saying so,
 * without them.
 *
 * The CLI is `node bin/timewarp.cjs`: the bundle when `npm run build` made one (`--build` makes
 * it first), else the same bin runs the sources through tsx in-process; the header says which.
 * Children run with TIMEWARP_WATCH=0 (no watch daemon outlives a kill).
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statfsSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { dirname, join, relative, resolve } from "node:path";
import { workspacePaths } from "../src/core/index.ts";
import { createObjectStore, listSnapshots } from "../src/store/index.ts";
import { readStatus } from "../src/timemachine/index.ts";

// ── options ──────────────────────────────────────────────────────────────────────────────────
function option(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
}
const KILLS = Number(option("kills") ?? 500);
const SEED = Number(option("seed") ?? Math.floor(Math.random() * 2 ** 31));
const FILES = Number(option("files") ?? 300);
const ENOSPC_RUNS = Number(option("enospc") ?? 40);
const BASE = option("dir") ?? tmpdir();
const KEEP = process.argv.includes("--keep");

const REPO = resolve(import.meta.dirname, "..");
const BIN = join(REPO, "bin", "timewarp.cjs");
const BUNDLE = join(REPO, "dist", "bin", "timewarp.cjs");
if (process.argv.includes("--build")) {
  const b = spawnSync("npm", ["run", "build"], { cwd: REPO, stdio: "inherit" });
  if (b.status !== 0) process.exit(2);
}

/** The newest mtime under src/ (a bundle older than it runs stale code). */
function newestSource(dir: string): number {
  let newest = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    newest = Math.max(newest, e.isDirectory() ? newestSource(p) : statSync(p).mtimeMs);
  }
  return newest;
}
const cliHow = existsSync(BUNDLE)
  ? `node bin/timewarp.cjs → the bundle dist/bin/timewarp.cjs${statSync(BUNDLE).mtimeMs < newestSource(join(REPO, "src")) ? " (OLDER than src/: run npm run build, or pass --build)" : ""}`
  : "node bin/timewarp.cjs → no build: the sources through tsx (slower starts; npm run build, or --build, for the bundle)";

// ── seeded randomness ────────────────────────────────────────────────────────────────────────
let rngState = SEED >>> 0;
function rnd(): number {
  rngState = (rngState + 0x6d2b79f5) >>> 0;
  let t = rngState;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
}
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)] as T;
const int = (lo: number, hi: number) => lo + Math.floor(rnd() * (hi - lo + 1));

// ── trees ────────────────────────────────────────────────────────────────────────────────────
type Tree = Map<string, Buffer>;
const blobId = (b: Buffer) =>
  createHash("sha1").update(`blob ${b.length}\0`).update(b).digest("hex");

/** The workspace's files (the store aside), by relative path. */
function readTree(root: string): Tree {
  const tree: Tree = new Map();
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (dir === root && e.name === ".timewarp") continue;
      if (e.isDirectory()) walk(p);
      else if (e.isFile()) tree.set(relative(root, p), readFileSync(p));
    }
  };
  walk(root);
  return tree;
}
function writeTree(root: string, files: Map<string, Buffer>): void {
  for (const [p, b] of files) {
    mkdirSync(dirname(join(root, p)), { recursive: true });
    writeFileSync(join(root, p), b);
  }
}
const same = (a: Buffer | undefined, b: Buffer | undefined) =>
  a === undefined || b === undefined ? a === b : a.equals(b);

function textFile(path: string, lines: number, version: number): Buffer {
  const out: string[] = [];
  for (let j = 1; j <= lines; j++) out.push(`${path} line ${j} v${version}\n`);
  return Buffer.from(out.join(""));
}
function randomBytes(n: number): Buffer {
  const b = Buffer.alloc(n);
  for (let i = 0; i < n; i++) b[i] = Math.floor(rnd() * 256);
  return b;
}
/** A text file the patch generator can address line by line. */
function patchable(b: Buffer): boolean {
  return b.length > 0 && b.length < 200_000 && b.at(-1) === 10 && !b.includes(0) && !b.includes(13);
}

// ── the CLI ──────────────────────────────────────────────────────────────────────────────────
const CHILD_ENV: NodeJS.ProcessEnv = { ...process.env, TIMEWARP_WATCH: "0", NO_COLOR: "1" };
delete CHILD_ENV.TIMEWARP_CRASH_AT;
delete CHILD_ENV.TIMEWARP_ENOSPC_AT;
delete CHILD_ENV.TIMEWARP_PAUSE_AT;

interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  ms: number;
  json: Record<string, unknown> | null;
  stderr: string;
}
let childPeakKiB = 0;
function vmHwmKiB(pid: number): number {
  try {
    const m = /VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "latin1"));
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}

function cli(
  root: string,
  args: string[],
  options: { killAfterMs?: number; env?: NodeJS.ProcessEnv } = {},
): Promise<Run> {
  return new Promise((resolveRun, reject) => {
    const t0 = performance.now();
    const child: ChildProcess = spawn(process.execPath, [BIN, "--json", "-C", root, ...args], {
      env: { ...CHILD_ENV, ...options.env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout?.on("data", (d: Buffer) => {
      stdout += d.toString();
    });
    child.stderr?.on("data", (d: Buffer) => {
      stderr += d.toString();
    });
    let timer: NodeJS.Timeout | undefined;
    if (options.killAfterMs !== undefined) {
      timer = setTimeout(() => {
        if (child.pid) childPeakKiB = Math.max(childPeakKiB, vmHwmKiB(child.pid));
        child.kill("SIGKILL");
      }, options.killAfterMs);
    }
    // a command that hangs (a lock never given back, say) is a finding, not the soak's end
    const hang = setTimeout(() => {
      note(`timewarp ${args.join(" ")} hung for 10 minutes: killed`);
      child.kill("SIGKILL");
    }, 600_000);
    child.on("error", reject);
    child.on("close", (code, signal) => {
      if (timer) clearTimeout(timer);
      clearTimeout(hang);
      let json: Record<string, unknown> | null = null;
      try {
        json = JSON.parse(stdout) as Record<string, unknown>;
      } catch {
        json = null;
      }
      resolveRun({ code, signal, ms: performance.now() - t0, json, stderr });
    });
  });
}
const errorCode = (r: Run): string | undefined =>
  (r.json?.error as { code?: string } | undefined)?.code;

/** An ordinary command the soak needs to succeed (setup, not a measured kill). */
async function must(root: string, args: string[]): Promise<Record<string, unknown>> {
  const r = await cli(root, args);
  if (r.code !== 0 || !r.json) {
    throw new Error(
      `timewarp ${args.join(" ")} failed (${r.code}): ${JSON.stringify(r.json)} ${r.stderr}`,
    );
  }
  return r.json;
}

// ── the ledger, read from disk ───────────────────────────────────────────────────────────────
interface LedgerFile {
  oldPath: string | null;
  newPath: string | null;
  before: { oid: string } | null;
  after: { oid: string } | null;
}
interface LedgerRecord {
  id: string;
  files: LedgerFile[];
}
function readRecords(root: string): Map<string, LedgerRecord> {
  const out = new Map<string, LedgerRecord>();
  const dir = join(workspacePaths(root).data, "history", "snapshots");
  if (!existsSync(dir)) return out;
  for (const f of readdirSync(dir, { recursive: true }).map(String)) {
    if (!f.endsWith(".json") || f.includes(".tw-tmp-")) continue;
    try {
      const r = JSON.parse(readFileSync(join(dir, f), "utf8")) as LedgerRecord;
      if (typeof r.id === "string" && Array.isArray(r.files)) out.set(r.id, r);
    } catch {
      // a torn record is fsck's to report
    }
  }
  return out;
}
/** Operation ids in the ledger's index order (oldest first). */
function indexOrder(root: string): string[] {
  const p = join(workspacePaths(root).data, "history", "index.tsv");
  if (!existsSync(p)) return [];
  const text = readFileSync(p, "utf8");
  return text
    .slice(0, text.lastIndexOf("\n") + 1)
    .split("\n")
    .map((l) => l.split("\t")[0] ?? "")
    .filter((id) => /^[0-9a-z]{10}$/.test(id));
}

// ── the tally ────────────────────────────────────────────────────────────────────────────────
const OPS = [
  "travel",
  "return",
  "snapshot",
  "edit-block",
  "edit-whole",
  "edit-patch",
  "revert",
  "revert-to",
  "recover",
] as const;
type Op = (typeof OPS)[number];
interface Row {
  kills: number;
  landed: number;
  recovered: number;
  bytesLost: number;
  unrecorded: number;
  fsck: number;
  torn: number;
  recoverFailed: number;
  temps: number;
  errors: Map<string, number>;
}
const rows = new Map<string, Row>();
function row(key: string): Row {
  let r = rows.get(key);
  if (!r) {
    r = {
      kills: 0,
      landed: 0,
      recovered: 0,
      bytesLost: 0,
      unrecorded: 0,
      fsck: 0,
      torn: 0,
      recoverFailed: 0,
      temps: 0,
      errors: new Map(),
    };
    rows.set(key, r);
  }
  return r;
}
const notes: string[] = [];
function note(text: string): void {
  if (notes.length < 60) notes.push(text);
}

// ── one workspace and its model ──────────────────────────────────────────────────────────────
interface Past {
  snapshotId: string;
  present: Tree;
}
/** What an operation may leave behind, for the check after it. */
type Expect =
  | { kind: "edit"; pre: Tree; intended: Map<string, Buffer | undefined> }
  | { kind: "snapshot"; pre: Tree; known: Set<string> }
  | { kind: "transition"; present: Tree; snapshotId: string };

class Workspace {
  readonly root: string;
  tree: Tree = new Map();
  past: Past | null = null;
  snapshots = new Map<string, Tree>();
  seenRecords = new Set<string>();
  durations = new Map<Op, number>();
  /** How long a CLI run that does next to nothing (`status`) takes. */
  startupMs = 0;

  constructor(root: string) {
    this.root = root;
  }

  async create(files: number): Promise<void> {
    const initial: Tree = new Map();
    for (let i = 0; i < files; i++) {
      const path = `src/d${i % 15}/f${i}.${i % 20 === 0 ? "bin" : "txt"}`;
      initial.set(
        path,
        i % 20 === 0 ? randomBytes(int(512, 16_384)) : textFile(path, int(5, 60), 0),
      );
    }
    mkdirSync(this.root, { recursive: true });
    writeTree(this.root, initial);
    this.tree = initial;
    await must(this.root, ["init"]);
    await this.snapshot();
  }

  async snapshot(): Promise<void> {
    const r = await must(this.root, ["snapshot", "create"]);
    this.snapshots.set(String(r.snapshot_id), new Map(this.tree));
  }

  /** The snapshot ids on disk (a list that cannot be read is a finding, and no new ids). */
  snapshotIds(): string[] {
    try {
      return listSnapshots(this.root).map((s) => s.snapshot_id ?? "");
    } catch (error) {
      note(`snapshot list failed: ${String(error).slice(0, 200)}`);
      return [];
    }
  }

  /** Unsaved work: files written directly, as an editor would. */
  userWrites(): void {
    const n = int(1, 3);
    const paths = [...this.tree.keys()];
    for (let i = 0; i < n; i++) {
      const path = rnd() < 0.3 ? `user/u${int(0, 40)}.txt` : pick(paths);
      const b = Buffer.from(`unsaved ${int(0, 1e9)}\n`.repeat(int(1, 40)));
      mkdirSync(dirname(join(this.root, path)), { recursive: true });
      writeFileSync(join(this.root, path), b);
      this.tree.set(path, b);
    }
  }

  async toPresent(): Promise<void> {
    if (this.past) {
      await must(this.root, ["return"]);
      this.tree = this.past.present;
      this.past = null;
    }
  }
  async toPast(): Promise<void> {
    if (this.past) return;
    if (rnd() < 0.5) this.userWrites();
    const id = pick([...this.snapshots.keys()]);
    await must(this.root, ["travel", id]);
    this.past = { snapshotId: id, present: this.tree };
    this.tree = new Map(this.snapshots.get(id));
  }
  /** An operation in the ledger the soak made, for revert. */
  async ensureOps(n: number): Promise<string[]> {
    for (let order = indexOrder(this.root); ; order = indexOrder(this.root)) {
      if (order.length >= n) return order;
      const { args, intended } = this.planEdit("edit-whole");
      await must(this.root, args);
      for (const [p, b] of intended) if (b) this.tree.set(p, b);
      this.absorbRecords();
    }
  }
  /** Every image (blob id) the ledger knows of each path, from all its records. */
  knownImages = new Map<string, Set<string>>();

  absorbRecords(): Map<string, LedgerRecord> {
    const fresh = new Map<string, LedgerRecord>();
    for (const [id, r] of readRecords(this.root)) {
      if (this.seenRecords.has(id)) continue;
      for (const f of r.files) {
        for (const [path, image] of [
          [f.oldPath, f.before],
          [f.newPath, f.after],
        ] as const) {
          if (path === null || image === null) continue;
          const set = this.knownImages.get(path) ?? new Set<string>();
          set.add(image.oid);
          this.knownImages.set(path, set);
        }
      }
      this.seenRecords.add(id);
      fresh.set(id, r);
    }
    return fresh;
  }

  /** The command line of an edit, and the files it means to leave. */
  planEdit(op: "edit-block" | "edit-whole" | "edit-patch"): {
    args: string[];
    intended: Map<string, Buffer | undefined>;
  } {
    const intended = new Map<string, Buffer | undefined>();
    const texts = [...this.tree].filter(([, b]) => patchable(b)).map(([p]) => p);
    const inputs = join(dirname(this.root), "inputs");
    mkdirSync(inputs, { recursive: true });
    if (op === "edit-whole" || texts.length === 0) {
      const path = rnd() < 0.2 ? `agent/new${int(0, 1e6)}.txt` : pick([...this.tree.keys()]);
      const content =
        rnd() < 0.2
          ? randomBytes(int(0, 65_536))
          : Buffer.from(`whole ${int(0, 1e9)}\n`.repeat(int(1, 3000)));
      const file = join(inputs, "content");
      writeFileSync(file, content);
      intended.set(path, content);
      return { args: ["edit", "whole", path, "--content-file", file], intended };
    }
    // a unique line (the generated files name their path and line number on every line; files
    // the user or an edit-whole rewrote repeat theirs), tried in a few files
    for (let attempt = 0; op === "edit-block" && attempt < 20; attempt++) {
      const path = pick(texts);
      const text = (this.tree.get(path) as Buffer).toString();
      const lines = text.split("\n").slice(0, -1);
      const j = int(0, lines.length - 1);
      const search = lines[j] as string;
      if (text.indexOf(search) !== text.lastIndexOf(search)) continue;
      const replace = `${search} e${int(0, 1e9)}`;
      lines[j] = replace;
      intended.set(path, Buffer.from(`${lines.join("\n")}\n`));
      return { args: ["edit", "block", path, "--search", search, "--replace", replace], intended };
    }
    if (op === "edit-block") return this.planEdit("edit-whole");
    // a git diff over 2..6 files: one line changed in each, sometimes a new file too
    const chosen = new Set<string>();
    const want = Math.min(texts.length, int(2, 6));
    while (chosen.size < want) chosen.add(pick(texts));
    const parts: string[] = [];
    for (const path of chosen) {
      const lines = (this.tree.get(path) as Buffer).toString().split("\n").slice(0, -1);
      const j = int(0, lines.length - 1);
      const old = lines[j] as string;
      lines[j] = `${old} p${int(0, 1e9)}`;
      parts.push(
        `diff --git a/${path} b/${path}\n--- a/${path}\n+++ b/${path}\n@@ -${j + 1},1 +${j + 1},1 @@\n-${old}\n+${lines[j]}\n`,
      );
      intended.set(path, Buffer.from(`${lines.join("\n")}\n`));
    }
    if (rnd() < 0.3) {
      const path = `agent/p${int(0, 1e6)}.txt`;
      if (!this.tree.has(path)) {
        parts.push(
          `diff --git a/${path} b/${path}\nnew file mode 100644\n--- /dev/null\n+++ b/${path}\n@@ -0,0 +1,2 @@\n+created\n+by a patch\n`,
        );
        intended.set(path, Buffer.from("created\nby a patch\n"));
      }
    }
    const file = join(inputs, "change.diff");
    writeFileSync(file, parts.join(""));
    return { args: ["edit", "patch", file], intended };
  }

  /**
   * Bring the workspace into the mode `op` needs and return its command line and what it may
   * leave; `recover` gets an interrupted travel or return to finish (TIMEWARP_CRASH_AT).
   */
  async prepare(op: Op): Promise<{ args: string[]; expect: Expect }> {
    if (op === "return") {
      await this.toPast();
      const past = this.past as Past;
      return {
        args: ["return"],
        expect: { kind: "transition", present: past.present, snapshotId: past.snapshotId },
      };
    }
    if (op === "recover") {
      const interruptReturn = rnd() < 0.5;
      if (interruptReturn) await this.toPast();
      else await this.toPresent();
      if (!this.past && rnd() < 0.5) this.userWrites();
      const present = this.past ? this.past.present : this.tree;
      const id = this.past ? this.past.snapshotId : pick([...this.snapshots.keys()]);
      const r = await cli(this.root, interruptReturn ? ["return"] : ["travel", id], {
        env: { TIMEWARP_CRASH_AT: `*:${int(1, 7)}` },
      });
      if (r.signal === null && r.code !== 0)
        throw new Error(`setup for recover failed: ${JSON.stringify(r.json)} ${r.stderr}`);
      return {
        args: ["recover"],
        expect: { kind: "transition", present: new Map(present), snapshotId: id },
      };
    }
    await this.toPresent();
    if (rnd() < 0.3) this.userWrites();
    if (op === "travel") {
      const id = pick([...this.snapshots.keys()]);
      return {
        args: ["travel", id],
        expect: { kind: "transition", present: new Map(this.tree), snapshotId: id },
      };
    }
    if (op === "snapshot") {
      return {
        args: ["snapshot", "create"],
        expect: { kind: "snapshot", pre: new Map(this.tree), known: new Set(this.snapshotIds()) },
      };
    }
    if (op === "revert" || op === "revert-to") {
      const order = await this.ensureOps(op === "revert" ? 1 : 2);
      const recent = order.slice(-5);
      const pre = new Map(this.tree);
      const edit = { kind: "edit" as const, pre, intended: new Map<string, Buffer | undefined>() };
      if (op === "revert") return { args: ["revert", pick(recent)], expect: edit };
      const newest = order.at(-1) as string;
      const target = pick(recent.slice(0, -1));
      return { args: ["revert", newest, "--to", target], expect: edit };
    }
    const { args, intended } = this.planEdit(op);
    return { args, expect: { kind: "edit", pre: new Map(this.tree), intended } };
  }

  /** After the kill, recover and fsck: count what the model cannot explain, then adopt the disk. */
  async check(key: string, expect: Expect): Promise<void> {
    const r = row(key);
    const status = readStatus(this.root);
    if (status.transition) {
      r.recoverFailed++;
      note(`${key}: a transition is still pending after recover`);
    }
    const actual = readTree(this.root);
    const fresh = this.absorbRecords();
    const objects = createObjectStore(workspacePaths(this.root).objects);

    if (expect.kind === "transition") {
      const expected =
        status.mode === "past"
          ? (this.snapshots.get(expect.snapshotId) ?? new Map())
          : expect.present;
      let lost = 0;
      for (const [p, b] of expected) {
        if (!same(actual.get(p), b)) {
          lost += b.length;
          note(
            `${key}: ${p} is not as expected in mode ${status.mode} (${actual.has(p) ? "changed" : "missing"})`,
          );
        }
      }
      for (const p of actual.keys()) {
        if (!expected.has(p)) {
          r.unrecorded++;
          note(`${key}: ${p} should not be there in mode ${status.mode}`);
        }
      }
      r.bytesLost += lost;
      if (status.mode === "past") {
        // the saved present must come back exactly on return: keep the model's, not the disk's
        this.past = { snapshotId: expect.snapshotId, present: expect.present };
      } else {
        this.past = null;
      }
      this.tree = actual;
      return;
    }

    // an edit, a revert, a snapshot: the present stays, but for what a new record explains
    if (status.mode !== "present") {
      r.bytesLost += [...expect.pre.values()].reduce((n, b) => n + b.length, 0);
      note(`${key}: mode ${status.mode} after an edit`);
    }
    const explained = new Map<string, string | null>(); // path → post-image oid (null: deleted)
    for (const rec of fresh.values()) {
      for (const f of rec.files) {
        if (f.newPath !== null) explained.set(f.newPath, f.after?.oid ?? null);
        if (f.oldPath !== null && f.oldPath !== f.newPath) explained.set(f.oldPath, null);
        // the pre-image a record names must be kept: else the old bytes are gone
        if (f.before && !objects.has(f.before.oid)) {
          r.bytesLost += expect.pre.get(f.oldPath ?? "")?.length ?? 0;
          note(`${key}: record ${rec.id} names a pre-image of ${f.oldPath} the store lacks`);
        }
      }
    }
    const intended =
      expect.kind === "edit" ? expect.intended : new Map<string, Buffer | undefined>();
    let atPost = 0;
    let atPre = 0;
    for (const p of intended.keys()) {
      if (same(actual.get(p), intended.get(p))) atPost++;
      else if (same(actual.get(p), expect.pre.get(p))) atPre++;
    }
    if (atPost > 0 && atPre > 0) {
      r.torn++;
      note(`${key}: ${atPost} file(s) written, ${atPre} not`);
    }
    const paths = new Set([...expect.pre.keys(), ...actual.keys()]);
    for (const p of paths) {
      const a = actual.get(p);
      const before = expect.pre.get(p);
      if (same(a, before)) continue;
      if (explained.has(p) && explained.get(p) === (a === undefined ? null : blobId(a))) continue;
      // the operation's own result with no record: what it meant to write, or for a revert
      // (whose result the model does not compute) an image the ledger holds of that path
      const ownResult =
        (intended.has(p) && same(a, intended.get(p))) ||
        (expect.kind === "edit" &&
          intended.size === 0 &&
          this.knownImages.get(p)?.has(blobId(a ?? before ?? Buffer.alloc(0))) === true);
      if (ownResult) {
        r.unrecorded++;
        note(`${key}: ${p} changed with no record`);
      } else if (before !== undefined) {
        r.bytesLost += before.length;
        note(`${key}: ${p} is neither its pre- nor its post-image`);
      } else {
        r.unrecorded++;
        note(`${key}: ${p} appeared with no record`);
      }
    }
    if (expect.kind === "snapshot") {
      for (const id of this.snapshotIds()) {
        if (!expect.known.has(id)) this.snapshots.set(id, expect.pre);
      }
    }
    if (status.mode === "present") this.tree = actual;
  }

  /**
   * `recover` after every kill that landed (it finishes or undoes a transition, and completes a
   * pending ledger journal where there is one; NOTHING_TO_RECOVER is fine) and whenever a
   * transition is pending; then `fsck`. Counts into the row.
   */
  async recoverAndFsck(key: string, landed: boolean): Promise<void> {
    const r = row(key);
    if (landed || readStatus(this.root).transition) {
      const rec = await cli(this.root, ["recover"]);
      if (rec.code === 0) {
        r.recovered++;
      } else if (errorCode(rec) !== "NOTHING_TO_RECOVER") {
        r.recoverFailed++;
        note(
          `${key}: recover failed: ${JSON.stringify(rec.json?.error ?? rec.stderr.slice(0, 200))}`,
        );
      }
    }
    const f = await cli(this.root, ["fsck"]);
    const problems = (f.json?.problems as { kind: string }[] | undefined) ?? [];
    const real = problems.filter((p) => p.kind !== "temp_file");
    r.temps += problems.length - real.length;
    r.fsck += real.length;
    if (f.code !== 0 && real.length === 0) {
      r.fsck++;
      note(`${key}: fsck failed: ${JSON.stringify(f.json?.error ?? f.stderr.slice(0, 200))}`);
    }
    for (const p of real.slice(0, 3)) note(`${key}: fsck: ${JSON.stringify(p)}`);
  }

  /** The typical duration of `op` (measured on its unkilled runs). */
  duration(op: Op): number {
    return this.durations.get(op) ?? 1000;
  }
  measured(op: Op, ms: number): void {
    const old = this.durations.get(op);
    this.durations.set(op, old === undefined ? ms : old * 0.7 + ms * 0.3);
  }
}

// ── rounds ───────────────────────────────────────────────────────────────────────────────────
async function killRound(ws: Workspace, op: Op): Promise<void> {
  const { args, expect } = await ws.prepare(op);
  const r = row(op);
  r.kills++;
  // Spread over the operation's measured duration; three kills in four skip most of the start-up
  // (a `status` takes as long), where nothing is written yet.
  const span = ws.duration(op) * 1.1;
  const from = rnd() < 0.75 ? Math.min(ws.startupMs * 0.8, span * 0.8) : 0;
  const delay = Math.floor(from + rnd() * (span - from));
  const run = await cli(ws.root, args, { killAfterMs: delay });
  if (run.signal === "SIGKILL") r.landed++;
  else {
    if (run.code === 0) ws.measured(op, run.ms);
    else {
      const code = errorCode(run) ?? `exit ${run.code}`;
      r.errors.set(code, (r.errors.get(code) ?? 0) + 1);
    }
  }
  await ws.recoverAndFsck(op, run.signal === "SIGKILL");
  await ws.check(op, expect);
}

/** Unkilled, each operation once: the durations the kills spread over. */
async function calibrate(ws: Workspace): Promise<void> {
  const starts: number[] = [];
  for (let i = 0; i < 3; i++) starts.push((await cli(ws.root, ["status"])).ms);
  ws.startupMs = Math.min(...starts);
  for (const op of OPS) {
    if (op === "recover") continue;
    const { args, expect } = await ws.prepare(op);
    const run = await cli(ws.root, args);
    if (run.code === 0) ws.measured(op, run.ms);
    await ws.recoverAndFsck("calibration", false);
    await ws.check("calibration", expect);
  }
  // recover's own work is a restore: about a travel's
  ws.durations.set("recover", ws.duration("travel"));
}

// ── ENOSPC on a tiny tmpfs ───────────────────────────────────────────────────────────────────
function mount(dir: string, kib: number, remount: boolean): boolean {
  const r = spawnSync(
    "mount",
    remount
      ? ["-o", `remount,size=${kib}k`, dir]
      : ["-t", "tmpfs", "-o", `size=${kib}k`, "tmpfs", dir],
    { encoding: "utf8" },
  );
  return r.status === 0;
}
function usedKiB(dir: string): number {
  const s = statfsSync(dir);
  return Math.ceil(((s.blocks - s.bfree) * s.bsize) / 1024);
}

async function enospcRounds(base: string): Promise<string> {
  if (ENOSPC_RUNS <= 0) return "ENOSPC rounds: none asked (--enospc 0)";
  const mnt = join(base, "smallfs");
  mkdirSync(mnt);
  if (!mount(mnt, 65_536, false)) {
    return "ENOSPC rounds: SKIPPED — cannot mount a tmpfs here (needs root / CAP_SYS_ADMIN)";
  }
  try {
    const ws = new Workspace(join(mnt, "w"));
    await ws.create(Math.min(FILES, 120));
    await calibrate(ws);
    for (let i = 0; i < ENOSPC_RUNS; i++) {
      const op = pick(OPS.filter((o) => o !== "recover"));
      const key = `enospc:${op}`;
      const { args, expect } = await ws.prepare(op);
      // just above what is in use: the operation runs out of room somewhere in its writes
      mount(mnt, usedKiB(mnt) + int(4, 256), true);
      const r = row(key);
      r.kills++;
      const run = await cli(ws.root, args);
      if (run.code !== 0) {
        const code = errorCode(run) ?? `exit ${run.code}`;
        r.errors.set(code, (r.errors.get(code) ?? 0) + 1);
      }
      mount(mnt, 65_536, true);
      await ws.recoverAndFsck(key, run.code !== 0);
      await ws.check(key, expect);
    }
    return `ENOSPC rounds: ${ENOSPC_RUNS} on a tmpfs shrunk to 4..256 KiB above its use`;
  } finally {
    spawnSync("umount", ["-l", mnt]);
  }
}

// ── main ─────────────────────────────────────────────────────────────────────────────────────
const started = performance.now();
const base = mkdtempSync(join(BASE, "tw-soak-"));
console.log(`timewarp soak: ${KILLS} kills, seed ${SEED}, ${FILES} files, in ${base}`);
console.log(`CLI: ${cliHow}`);
let enospcNote = "";
let killPhaseS = 0;
let aborted = "";
try {
  const ws = new Workspace(join(base, "w"));
  await ws.create(FILES);
  await calibrate(ws);
  console.log(
    `measured (ms): start-up (status) ${Math.round(ws.startupMs)}, ${[...ws.durations].map(([op, ms]) => `${op} ${Math.round(ms)}`).join(", ")}`,
  );
  // every operation equally often: passes over all of them, the ones run in the present first
  // (shuffled), then travel, return, recover, so few extra travels and returns are needed
  let order: Op[] = [];
  const killsStarted = performance.now();
  for (let k = 0; k < KILLS; k++) {
    if (order.length === 0) {
      const inPresent = OPS.filter((o) => !["travel", "return", "recover"].includes(o));
      order = ["recover", "return", "travel", ...inPresent.sort(() => rnd() - 0.5)];
    }
    try {
      await killRound(ws, order.pop() as Op);
    } catch (error) {
      // a setup command failed (the workspace is stuck): report what was found so far
      aborted = `ABORTED after ${k} kills: ${String(error).slice(0, 400)}`;
      break;
    }
    if ((k + 1) % 50 === 0) {
      const s = ((performance.now() - started) / 1000).toFixed(0);
      console.log(`  … ${k + 1}/${KILLS} kills, ${s} s`);
    }
  }
  killPhaseS = (performance.now() - killsStarted) / 1000;
  if (!aborted) {
    try {
      enospcNote = await enospcRounds(base);
    } catch (error) {
      aborted = `ABORTED in the ENOSPC rounds: ${String(error).slice(0, 400)}`;
    }
  }
} finally {
  if (!KEEP) rmSync(base, { recursive: true, force: true });
}

// ── report ───────────────────────────────────────────────────────────────────────────────────
const header = [
  "operation",
  "kills",
  "landed",
  "recovered",
  "bytes lost",
  "edits unrecorded",
  "fsck problems",
  "torn",
  "recover failed",
  "temp files",
  "errors (unkilled runs)",
];
const FIELDS = [
  "kills",
  "landed",
  "recovered",
  "bytesLost",
  "unrecorded",
  "fsck",
  "torn",
  "recoverFailed",
  "temps",
] as const;
const cells = (key: string, r: Row, errors: string) => [
  key,
  ...FIELDS.map((f) => String(r[f])),
  errors,
];
// kill rounds and ENOSPC rounds (unkilled: "kills" counts runs there) are totalled apart
const total = row("TOTAL (kills)");
const totalEnospc = row("TOTAL (ENOSPC runs)");
const calib = rows.get("calibration");
const table: string[][] = [];
for (const [key, r] of rows) {
  if (key.startsWith("TOTAL") || key === "calibration") continue;
  const into = key.startsWith("enospc:") ? totalEnospc : total;
  for (const f of FIELDS) into[f] += r[f];
  table.push(cells(key, r, [...r.errors].map(([c, n]) => `${c}×${n}`).join(" ")));
}
table.sort((a, b) => (a[0] ?? "").localeCompare(b[0] ?? ""));
table.push(cells("TOTAL (kills)", total, ""));
if (totalEnospc.kills > 0) table.push(cells("TOTAL (ENOSPC runs)", totalEnospc, ""));
const all = {
  bytesLost: total.bytesLost + totalEnospc.bytesLost,
  unrecorded: total.unrecorded + totalEnospc.unrecorded,
  fsck: total.fsck + totalEnospc.fsck,
};
const widths = header.map((h, i) => Math.max(h.length, ...table.map((r) => (r[i] ?? "").length)));
const fmt = (r: string[]) =>
  r
    .map((c, i) =>
      i === 0 || i === r.length - 1 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0),
    )
    .join("  ");
console.log("");
console.log(fmt(header));
for (const r of table) console.log(fmt(r));
console.log(enospcNote);
if (aborted) console.log(aborted);
if (calib && (calib.bytesLost || calib.unrecorded || calib.fsck))
  console.log(
    `calibration (unkilled) runs: ${calib.bytesLost} bytes lost, ${calib.unrecorded} unrecorded, ${calib.fsck} fsck problems`,
  );
if (notes.length) {
  console.log(`\nfirst ${notes.length} findings:`);
  for (const n of notes) console.log(`  ${n}`);
}
const elapsed = (performance.now() - started) / 1000;
console.log(
  `\ntargets: bytes lost 0 (got ${all.bytesLost}), edits unrecorded 0 (got ${all.unrecorded}), fsck problems 0 (got ${all.fsck})`,
);
console.log(
  `elapsed ${elapsed.toFixed(0)} s (kill rounds ${killPhaseS.toFixed(0)} s, ${((killPhaseS * 1000) / Math.max(1, total.kills)).toFixed(0)} ms per kill; ${cpus().length} CPUs, load average ${loadavg()[0]?.toFixed(1)} at the end); peak RSS: soak ${Math.round(process.resourceUsage().maxRSS / 1024)} MiB, CLI child (sampled at its kill) ${Math.round(childPeakKiB / 1024)} MiB`,
);
console.log(
  `repeat: npm run soak -- --kills ${KILLS} --seed ${SEED} --files ${FILES} --enospc ${ENOSPC_RUNS}`,
);
process.exitCode =
  !aborted && all.bytesLost === 0 && all.unrecorded === 0 && all.fsck === 0 ? 0 : 1;
