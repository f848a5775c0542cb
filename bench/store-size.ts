/**
 * `npm run bench:store [-- FILES [ROUNDS]]` — the size of the store against git's on a real tree
 * (issue 22 item 2): a FILES-file slice (default 10 000) of this repository's node_modules is
 * copied into a temp dir (folders the default excludes drop — `dist/`, `build/`, nested
 * `node_modules/` … — renamed so they stay in), then ROUNDS rounds (default 20) each edit 1% of
 * the files (a few lines changed, inserted or deleted) and take a snapshot, while a git
 * repository beside it commits the same tree (`git add -A && git commit`). Printed: the
 * `.timewarp` size before and after `timewarp gc` (objects apart from records and caches) beside
 * `.git` before and after `git gc`, the ratios, the time of each gc and peak RSS.
 * STORE_BENCH_COPIES=10 makes the tree ten copies of the slice (the 100k case). Not a test.
 */
import { execFileSync, spawnSync } from "node:child_process";
import {
  copyFileSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { homedir, loadavg, tmpdir } from "node:os";
import { join, relative, resolve } from "node:path";
import { DEFAULT_EXCLUDES } from "../src/core/index.ts";
import { collectGarbage, collectReferencedOids, createSnapshot } from "../src/store/index.ts";
import { treeBytes } from "./snapshot-fixtures.ts";

const REPO = resolve(import.meta.dirname, "..");
const EXCLUDES = [...DEFAULT_EXCLUDES];
const GIT_ID = ["-c", "user.name=bench", "-c", "user.email=bench@example.com", "-c", "gc.auto=0"];
/** Folder names the default excludes drop: renamed in the copy so the tree keeps them. */
const DROPPED_DIRS = new Set([
  "node_modules",
  ".venv",
  "dist",
  "build",
  ".next",
  "target",
  ".cache",
  ".git",
]);
const DROPPED_FILE = /\.(log|pid)$|^\.DS_Store$/;
const MiB = 1024 * 1024;

/** The gc, alone in this process (so its peak RSS is its own): `--gc ROOT`. */
function gcChild(root: string): void {
  const t0 = performance.now();
  const names = new Map<string, string>();
  const roots = collectReferencedOids(root, { names });
  const result = collectGarbage(root, { roots, names });
  const ms = performance.now() - t0;
  console.log(JSON.stringify({ ...result, ms }));
}

/** Files over this are left out of the slice: the tree is source, as the (5.4 KB a file). */
const MAX_SLICE_FILE = 1024 * 1024;

/** Copy regular files of `from` (sorted walk) into `to` until `limit` files; returns how many. */
function copySlice(from: string, to: string, limit: number): number {
  let copied = 0;
  const walk = (dir: string, out: string) => {
    for (const name of readdirSync(dir).sort()) {
      if (copied >= limit) return;
      const p = join(dir, name);
      const st = lstatSync(p);
      if (st.isDirectory()) {
        walk(p, join(out, DROPPED_DIRS.has(name) ? `_${name}` : name));
      } else if (st.isFile() && st.size <= MAX_SLICE_FILE && !DROPPED_FILE.test(name)) {
        mkdirSync(out, { recursive: true });
        copyFileSync(p, join(out, name));
        copied++;
      }
    }
  };
  walk(from, to);
  return copied;
}

/**
 * Real package trees, in order: this repository's node_modules, the system's npm, then packed
 * packages from npm's cache (~/.npm/_cacache), unpacked into `scratch` as needed.
 */
function* sources(scratch: string): Generator<string> {
  yield join(REPO, "node_modules");
  yield "/usr/lib/node_modules";
  const cache = join(homedir(), ".npm", "_cacache", "content-v2");
  const tarballs = listFiles(cache).sort();
  for (const [i, tgz] of tarballs.entries()) {
    const head = readFileSync(tgz).subarray(0, 2);
    if (head[0] !== 0x1f || head[1] !== 0x8b) continue;
    const out = join(scratch, "npm-cache", String(i));
    mkdirSync(out, { recursive: true });
    if (spawnSync("tar", ["xzf", tgz, "-C", out]).status === 0) yield out;
  }
}

/** A `limit`-file tree under `to` from `sources`; returns the count. */
function buildTree(scratch: string, to: string, limit: number): number {
  let n = 0;
  let k = 0;
  for (const from of sources(scratch)) {
    if (n >= limit) break;
    try {
      n += copySlice(from, join(to, `s${k++}`), limit - n);
    } catch {
      // a source this machine lacks
    }
  }
  return n;
}

function listFiles(dir: string, out: string[] = []): string[] {
  for (const d of readdirSync(dir, { withFileTypes: true })) {
    if (d.name === ".git" || d.name === ".timewarp") continue;
    const p = join(dir, d.name);
    if (d.isDirectory()) listFiles(p, out);
    else if (d.isFile()) out.push(p);
  }
  return out;
}

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    return s / 0x100000000;
  };
}

/** A few lines changed, inserted or deleted, as a person edits code. */
function editFile(file: string, rnd: () => number): void {
  const lines = readFileSync(file, "utf8").split("\n");
  const edits = 1 + Math.floor(rnd() * 4);
  for (let k = 0; k < edits; k++) {
    const at = Math.floor(rnd() * lines.length);
    const r = rnd();
    if (r < 0.4) lines[at] = `${lines[at] ?? ""} // edited ${Math.floor(rnd() * 1e6)}`;
    else if (r < 0.8) lines.splice(at, 0, `const added${Math.floor(rnd() * 1e6)} = ${k};`);
    else lines.splice(at, 1 + Math.floor(rnd() * 3));
  }
  writeFileSync(file, lines.join("\n"));
}

const git = (work: string, ...args: string[]) =>
  execFileSync("git", [...GIT_ID, "-C", work, ...args], { stdio: ["ignore", "pipe", "pipe"] });

/** Run `args` under /usr/bin/time: stdout, wall ms and peak RSS (KiB). */
function timed(args: string[], cwd: string): { out: string; ms: number; rssKiB: number } {
  const t0 = performance.now();
  const r = spawnSync("/usr/bin/time", ["-f", "%M", ...args], { cwd, encoding: "utf8" });
  const ms = performance.now() - t0;
  if (r.status !== 0) throw new Error(`${args.join(" ")} failed: ${r.stderr}`);
  const lines = r.stderr.trim().split("\n");
  return { out: r.stdout, ms, rssKiB: Number(lines[lines.length - 1]) };
}

function sizes(root: string): { objects: number; rest: number } {
  const data = join(root, ".timewarp");
  const objects = treeBytes(join(data, "objects"));
  return { objects, rest: treeBytes(data) - objects };
}

function main(): void {
  const files = Number(process.argv[2] ?? 10_000);
  const rounds = Number(process.argv[3] ?? 20);
  const copies = Number(process.env.STORE_BENCH_COPIES ?? 1);
  const scratch = mkdtempSync(join(process.env.BENCH_DIR ?? tmpdir(), "tw-bench-store-"));
  const tw = join(scratch, "tw");
  const gw = join(scratch, "git");
  try {
    const n = buildTree(scratch, join(tw, "c0"), files);
    for (let c = 1; c < copies; c++) execFileSync("cp", ["-a", join(tw, "c0"), join(tw, `c${c}`)]);
    execFileSync("cp", ["-a", tw, gw]);
    const all = listFiles(tw)
      .map((f) => relative(tw, f))
      .sort();
    console.log(
      `tree: ${all.length} files (${n} from node_modules, npm and npm's cache × ${copies}), ${(treeBytes(tw) / MiB).toFixed(1)} MiB; ${rounds} rounds of 1% edits; load ${loadavg()
        .map((l) => l.toFixed(2))
        .join(" ")}`,
    );
    git(gw, "init", "-q");
    writeFileSync(join(gw, ".git", "info", "exclude"), `${EXCLUDES.join("\n")}\n`);
    const rnd = rng(22);
    let twMs = 0;
    let gitMs = 0;
    for (let round = 0; round <= rounds; round++) {
      if (round > 0) {
        for (let k = 0; k < Math.ceil(all.length / 100); k++) {
          const rel = all[Math.floor(rnd() * all.length)] as string;
          const seed = Math.floor(rnd() * 2 ** 31);
          editFile(join(tw, rel), rng(seed));
          editFile(join(gw, rel), rng(seed));
        }
      }
      let t0 = performance.now();
      createSnapshot(tw, { excludes: EXCLUDES });
      twMs += performance.now() - t0;
      t0 = performance.now();
      git(gw, "add", "-A");
      git(gw, "commit", "-q", "--no-verify", "-m", `round ${round}`);
      gitMs += performance.now() - t0;
    }
    const snapRss = process.resourceUsage().maxRSS;
    const before = sizes(tw);
    const gitBefore = treeBytes(join(gw, ".git"));
    // STORE_BENCH_KEEP=1: a copy of the store before gc, to run gc on again (`--gc DIR`).
    if (process.env.STORE_BENCH_KEEP === "1") {
      mkdirSync(join(scratch, "before-gc"));
      execFileSync("cp", ["-a", join(tw, ".timewarp"), join(scratch, "before-gc", ".timewarp")]);
    }
    const gc = timed(
      [process.execPath, "--import", "tsx", join(REPO, "bench", "store-size.ts"), "--gc", tw],
      REPO,
    );
    const gcResult = JSON.parse(gc.out) as { ms: number; kept_objects: number };
    const after = sizes(tw);
    const gitGc = timed(["git", ...GIT_ID, "-C", gw, "gc", "-q"], gw);
    const gitAfter = treeBytes(join(gw, ".git"));
    const mib = (b: number) => `${(b / MiB).toFixed(1)} MiB`;
    console.log(
      `snapshots: ${rounds + 1} in ${(twMs / 1000).toFixed(1)} s (git add+commit ${(gitMs / 1000).toFixed(1)} s), peak RSS of the snapshotting process ${(snapRss / 1024).toFixed(0)} MiB`,
    );
    console.log(
      `before gc: .timewarp ${mib(before.objects + before.rest)} (objects ${mib(before.objects)}, records and caches ${mib(before.rest)}) · .git ${mib(gitBefore)} · ratio ${((before.objects + before.rest) / gitBefore).toFixed(2)}x`,
    );
    console.log(
      `after gc:  .timewarp ${mib(after.objects + after.rest)} (objects ${mib(after.objects)}, records and caches ${mib(after.rest)}) · .git ${mib(gitAfter)} · ratio ${((after.objects + after.rest) / gitAfter).toFixed(2)}x (objects alone ${(after.objects / gitAfter).toFixed(2)}x)`,
    );
    console.log(
      `gc: timewarp ${(gcResult.ms / 1000).toFixed(1)} s in process (${(gc.ms / 1000).toFixed(1)} s whole), peak RSS ${(gc.rssKiB / 1024).toFixed(0)} MiB, ${gcResult.kept_objects} objects · git gc ${(gitGc.ms / 1000).toFixed(1)} s, peak RSS ${(gitGc.rssKiB / 1024).toFixed(0)} MiB; load ${loadavg()
        .map((l) => l.toFixed(2))
        .join(" ")}`,
    );
  } finally {
    if (process.env.STORE_BENCH_KEEP !== "1") rmSync(scratch, { recursive: true, force: true });
    else console.log(`kept ${scratch}`);
  }
}

if (process.argv[2] === "--gc") gcChild(process.argv[3] as string);
else main();
