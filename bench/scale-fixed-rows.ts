/**
 * The rows of `npm run bench:scale` that do not depend on the tree's size: the diff cases
 * (createFilePatch in-process beside `git diff --no-index`) and the ledger commands over 5,000
 * operations (the CLI beside git log / show / apply -R --check on a 5,000-commit repository).
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createFilePatch } from "../src/diff/index.ts";
import { getEditHistory, recordEdit } from "../src/ledger/index.ts";
import { binaryPair } from "./diff-binary.ts";
import { cli, type GitTwin, gitEnv, median, mib, type ScaleRow, timed } from "./scale-common.ts";
import { timeProcess } from "./time-process.ts";

function everyOther(buf: Buffer): Buffer {
  const ls = buf.toString().split("\n");
  return Buffer.from(ls.map((l, i) => (i % 2 ? `${l} //x` : l)).join("\n"));
}

/** The hunks of a patch: from the first `@@`, without git's function name after `@@ … @@`. */
function hunkBytes(patch: string): number {
  const at = patch.indexOf("\n@@");
  if (at === -1) return 0;
  return Buffer.byteLength(patch.slice(at + 1).replace(/^(@@ [^@]* @@).*$/gm, "$1"));
}

/** `git diff --no-index` (exits 1 on a difference) as a process: wall ms, RSS, its output. */
function gitDiff(dir: string, args: string[]): { ms: number; rssKiB: number; out: Buffer } {
  const t0 = performance.now();
  const r = spawnSync(
    "/usr/bin/time",
    ["-f", "%M", "git", "diff", "--no-index", "--no-color", "--full-index", ...args],
    { cwd: dir, maxBuffer: 1 << 30 },
  );
  const ms = performance.now() - t0;
  if (r.status !== 1) throw new Error(`git diff --no-index exited ${r.status}: ${r.stderr}`);
  return { ms, rssKiB: Number(r.stderr.toString().trim().split("\n").pop()), out: r.stdout };
}

/** Whether `git apply --check` takes our patch on the old file (as `a.txt`/`a.bin` in `dir`). */
function gitApplies(dir: string, patch: string): boolean {
  writeFileSync(join(dir, "ours.patch"), patch);
  return spawnSync("git", ["apply", "--check", "ours.patch"], { cwd: dir }).status === 0;
}

function diffCase(
  dir: string,
  reps: number,
  c: { name: string; file: string; a: Buffer; b: Buffer; binary?: boolean },
): ScaleRow {
  const sub = join(dir, c.file.replace(/\W/g, "_"));
  mkdirSync(sub, { recursive: true });
  const old = c.binary ? "a.bin" : "a.txt";
  writeFileSync(join(sub, old), c.a);
  writeFileSync(join(sub, "b"), c.b);
  const args = [...(c.binary ? ["--binary"] : []), old, "b"];
  const g = Array.from({ length: reps }, () => gitDiff(sub, args));
  const make = () => createFilePatch({ oldPath: old, newPath: old, before: c.a, after: c.b });
  let patch = make();
  const ours = Array.from({ length: reps }, () => timed(() => (patch = make())));
  const gitOut = (g[0]?.out ?? Buffer.alloc(0)).toString("latin1");
  const sizes = c.binary
    ? `patch ${patch.length} B vs git's ${gitOut.length} B`
    : `hunks ${hunkBytes(patch)} B vs git's ${hunkBytes(gitOut)} B`;
  writeFileSync(join(sub, old), c.a);
  return {
    row: "diff",
    size: "-",
    what: c.name,
    tw: median(ours),
    git: median(g.map((x) => x.ms)),
    gitCmd: `diff --no-index${c.binary ? " --binary" : ""}`,
    unit: "ms",
    twRssMiB: mib(process.resourceUsage().maxRSS),
    gitRssMiB: mib(Math.max(...g.map((x) => x.rssKiB))),
    note: `in-process; ${sizes}; git apply --check takes ours: ${gitApplies(sub, patch) ? "yes" : "NO"}`,
  };
}

export function diffRows(o: { tree10k: string; scratch: string; reps: number }): ScaleRow[] {
  const lodash = readFileSync(join(o.tree10k, "lodash", "lodash.js"));
  const ts = readFileSync(join(o.tree10k, "typescript", "lib", "typescript.js"));
  const bin = binaryPair();
  const dir = join(o.scratch, "diff");
  return [
    diffCase(dir, o.reps, {
      name: "diff, lodash.js, every other line",
      file: "lodash",
      a: lodash,
      b: everyOther(lodash),
    }),
    diffCase(dir, Math.min(o.reps, 3), {
      name: `diff, typescript.js (${(ts.length / 1e6).toFixed(1)} MB), every other line`,
      file: "typescript",
      a: ts,
      b: everyOther(ts),
    }),
    diffCase(dir, o.reps, {
      name: `binary, ${(bin.a.length / 1e6).toFixed(1)} MB (${bin.from}), 100 bytes changed`,
      file: "binary",
      a: bin.a,
      b: bin.b,
      binary: true,
    }),
  ];
}

const OPS = Number(process.env.SCALE_BENCH_OPS ?? 5000);
const FILES = 50;

/** A workspace with `OPS` ledger operations (recordEdit, as the hooks record) and its git twin. */
async function ledgerFixture(dir: string): Promise<{ root: string; ids: string[]; twin: GitTwin }> {
  const root = join(dir, "ledger-ws");
  const twin: GitTwin = { work: join(dir, "ledger-git"), gitDir: join(dir, "ledger-git.git") };
  mkdirSync(join(root, "src"), { recursive: true });
  mkdirSync(join(twin.work, "src"), { recursive: true });
  const texts = Array.from({ length: FILES }, (_, f) =>
    Array.from({ length: 40 }, (_, i) => `export const v${f}_${i} = ${i};\n`).join(""),
  );
  texts.forEach((t, f) => {
    writeFileSync(join(root, "src", `f${f}.ts`), t);
  });
  const ids: string[] = [];
  // git fast-import: one commit per operation with the same file content
  const stream: string[] = [];
  for (let i = 0; i < OPS; i++) {
    const f = i % FILES;
    const before = texts[f] ?? "";
    const lines = before.split("\n");
    lines[(i * 7) % 40] = `export const v${f}_${(i * 7) % 40} = ${i}; // op ${i}`;
    const after = lines.join("\n");
    texts[f] = after;
    writeFileSync(join(root, "src", `f${f}.ts`), after);
    const made = await recordEdit({ root, file: `src/f${f}.ts`, before, after, tool: "Edit" });
    if (made.snapshotId === null) throw new Error(`operation ${i} recorded nothing`);
    ids.push(made.snapshotId);
    const data = Buffer.byteLength(after);
    stream.push(
      `commit refs/heads/main\ncommitter bench <bench@example.com> ${1_700_000_000 + i} +0000\ndata 6\nop ${String(i % 1000).padStart(3, "0")}\n`,
      `M 100644 inline src/f${f}.ts\ndata ${data}\n${after}\n`,
    );
  }
  spawnSync("git", ["init", "-q"], { env: { ...process.env, ...gitEnv(twin) } });
  spawnSync("git", ["fast-import", "--quiet"], {
    input: stream.join(""),
    env: { ...process.env, ...gitEnv(twin) },
  });
  spawnSync("git", ["symbolic-ref", "HEAD", "refs/heads/main"], {
    env: { ...process.env, ...gitEnv(twin) },
  });
  spawnSync("git", ["reset", "-q", "--hard"], { env: { ...process.env, ...gitEnv(twin) } });
  return { root, ids, twin };
}

export async function ledgerRows(o: { scratch: string; reps: number }): Promise<ScaleRow[]> {
  const t0 = performance.now();
  const { root, ids, twin } = await ledgerFixture(o.scratch);
  process.stderr.write(
    `${OPS} ledger operations recorded in ${((performance.now() - t0) / 1000).toFixed(1)} s\n`,
  );
  const runs = Math.max(5, o.reps * 2);
  const mid = ids[ids.length >> 1] ?? "";
  const last = ids[ids.length - 1] ?? "";
  const env = { TIMEWARP_WATCH: "0" };
  const g = (args: string[]) => timeProcess("git", args, { cwd: twin.work, env: gitEnv(twin) });
  const gsh = (script: string) =>
    timeProcess("sh", ["-c", script], { cwd: twin.work, env: gitEnv(twin) });
  const cases: [string, string[], () => ReturnType<typeof g>, string][] = [
    [
      "history --limit 20",
      ["history", "--limit", "20", "--json"],
      () => g(["log", "-20", "--name-status"]),
      "log -20 --name-status",
    ],
    [
      "history show <op>",
      ["history", "show", mid, "--json"],
      () => g(["show", `HEAD~${OPS >> 1}`]),
      "show <commit>",
    ],
    [
      "revert <last op> --dry-run",
      ["revert", last, "--dry-run", "--json"],
      () => gsh("git show HEAD | git apply -R --check"),
      "show HEAD | apply -R --check (sh + 2 processes)",
    ],
  ];
  const inProc = median(
    Array.from({ length: runs }, () => timed(() => getEditHistory({ root }, { limit: 20 }))),
  );
  return cases.map(([what, args, gitRun, gitCmd]) => {
    const tw = Array.from({ length: runs }, () => cli(root, args, env));
    const gs = Array.from({ length: runs }, gitRun);
    return {
      row: "ledger",
      size: "-",
      what: `${what}, ${OPS} ops, CLI`,
      tw: median(tw.map((s) => s.ms)),
      git: median(gs.map((s) => s.ms)),
      gitCmd,
      unit: "ms" as const,
      twRssMiB: mib(Math.max(...tw.map((s) => s.rssKiB ?? 0))),
      gitRssMiB: mib(Math.max(...gs.map((s) => s.rssKiB ?? 0))),
      ...(what.startsWith("history --limit")
        ? { note: `in-process getEditHistory (warm): ${inProc.toFixed(1)} ms` }
        : {}),
    };
  });
}
