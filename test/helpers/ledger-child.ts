import { type ChildProcess, spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { buildSync } from "esbuild";
import { REPO_ROOT } from "./cli.ts";

/**
 * A child process that runs one ledger operation (or `recover`, or a loop of random edits) and
 * prints `{"ok":…}` or `{"error":{code,message}}`. Bundled once with esbuild so a child starts
 * fast: the crash tests spawn many, each killed by a fault point or by the test.
 *
 * - `patch ROOT DIFF_FILE` — ApplyUnifiedDiff
 * - `revert ROOT ID [TARGET]` — ReverseOp (of ID, or every operation after TARGET)
 * - `whole ROOT PATH CONTENT` — ApplyWholeFileEdit
 * - `recover ROOT` — `timewarp recover` (the time machine's, which finishes the ledger first)
 * - `loop ROOT SEED` — random multi-file patches, deletions, whole-file edits and reverts
 *   forever; prints `ready` once loaded and one line per operation
 */
export function buildLedgerChild(dir: string): string {
  const src = join(dir, "ledger-child.ts");
  const ledger = JSON.stringify(join(REPO_ROOT, "src/ledger/index.ts"));
  const timemachine = JSON.stringify(join(REPO_ROOT, "src/timemachine/index.ts"));
  const diff = JSON.stringify(join(REPO_ROOT, "src/diff/index.ts"));
  writeFileSync(
    src,
    `import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { applyUnifiedDiff, applyWholeFileEdit, deletePath, reverseOp } from ${ledger};
import { recover } from ${timemachine};
import { createPatch } from ${diff};

const NAMES = ["a.txt", "b.txt", "sub/c.txt", "sub/deep/d.txt", "e.txt"];

async function loop(root: string, seed: number) {
  let s = seed;
  const rand = () => {
    s = (s * 1103515245 + 12345) % 2147483648;
    return s / 2147483648;
  };
  const read = (rel: string) => {
    try { return readFileSync(join(root, rel)); } catch { return null; }
  };
  const ids: string[] = [];
  process.stdout.write("ready\\n");
  for (let i = 0; ; i++) {
    const k = rand();
    try {
      if (k < 0.6) {
        const changes = [];
        for (const name of NAMES) {
          if (rand() < 0.4) continue;
          const before = read(name);
          const after = before !== null && rand() < 0.15 ? null : Buffer.from(("line " + i + " " + name + "\\n").repeat(50 + Math.floor(rand() * 400)));
          if (before === null && after === null) continue;
          changes.push({ oldPath: before === null ? null : name, newPath: after === null ? null : name, before, after });
        }
        if (changes.length === 0) continue;
        const r = await applyUnifiedDiff({ root }, { diff: createPatch(changes) });
        if (r.snapshotId) ids.push(r.snapshotId);
      } else if (k < 0.75 && ids.length > 0) {
        const r = await reverseOp({ root }, { snapshotId: ids[ids.length - 1] });
        if (r.newSnapshotId) ids.push(r.newSnapshotId);
      } else if (k < 0.82 && existsSync(join(root, "sub"))) {
        const r = await deletePath({ root }, { path: "sub" });
        if (r.snapshotId) ids.push(r.snapshotId);
      } else {
        const name = NAMES[Math.floor(rand() * NAMES.length)];
        const r = await applyWholeFileEdit({ root }, { path: name, content: "whole " + i + "\\n" });
        if (r.snapshotId) ids.push(r.snapshotId);
      }
      process.stdout.write("op " + i + "\\n");
    } catch (e) {
      if (typeof e?.code !== "string") throw e;
      process.stdout.write("refused " + e.code + "\\n");
    }
  }
}

const [op, root, a, b] = process.argv.slice(2);
try {
  let r;
  if (op === "patch") r = await applyUnifiedDiff({ root }, { diff: readFileSync(a, "utf8") });
  else if (op === "revert") r = await reverseOp({ root }, { snapshotId: a, ...(b ? { targetSnapshot: b } : {}) });
  else if (op === "whole") r = await applyWholeFileEdit({ root }, { path: a, content: b });
  else if (op === "recover") r = recover({ root });
  else if (op === "loop") r = await loop(root, Number(a));
  else throw new Error("unknown op " + op);
  process.stdout.write(JSON.stringify({ ok: r }) + "\\n");
} catch (e) {
  process.stdout.write(JSON.stringify({ error: { code: e.code, message: e.message } }) + "\\n");
  process.exitCode = 1;
}
`,
  );
  const out = join(dir, "ledger-child.mjs");
  buildSync({
    entryPoints: [src],
    bundle: true,
    platform: "node",
    format: "esm",
    outfile: out,
    logLevel: "error",
    banner: {
      js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);",
    },
  });
  return out;
}

export interface LedgerChildResult {
  ok?: Record<string, unknown>;
  error?: { code: string; message: string };
  /** The signal that ended the child (SIGKILL from a fault point), or null. */
  signal: NodeJS.Signals | null;
}

/** Run one operation in a child; a child killed by a fault point resolves with its signal. */
export function runLedgerChild(
  child: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<LedgerChildResult> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [child, ...args], {
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    p.stdout.on("data", (d: Buffer) => {
      out += d.toString();
    });
    p.stderr.on("data", (d: Buffer) => {
      err += d.toString();
    });
    p.on("error", reject);
    p.on("close", (_code, signal) => {
      if (signal !== null) return resolve({ signal });
      try {
        resolve({ ...(JSON.parse(out) as Omit<LedgerChildResult, "signal">), signal: null });
      } catch {
        reject(new Error(`child printed no JSON: ${out}${err}`));
      }
    });
  });
}

/** Start the `loop` child; `ready` resolves once it has loaded and is about to edit. */
export function startLedgerLoop(
  child: string,
  root: string,
  seed: number,
): {
  process: ChildProcess;
  ready: Promise<void>;
  exited: Promise<void>;
  /** Resolves once the child has finished `n` operations (or has exited). */
  finished: (n: number) => Promise<void>;
  output: () => string;
} {
  const p = spawn(process.execPath, [child, "loop", root, String(seed)], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  let out = "";
  let onReady: () => void = () => {};
  const ready = new Promise<void>((resolve) => {
    onReady = resolve;
  });
  const waiters: { n: number; resolve: () => void }[] = [];
  const done = () => (out.match(/^(op|refused) /gm) ?? []).length;
  const wake = (all: boolean) => {
    for (const w of waiters.splice(0)) {
      if (all || done() >= w.n) w.resolve();
      else waiters.push(w);
    }
  };
  p.stdout?.on("data", (d: Buffer) => {
    out += d.toString();
    if (out.includes("ready\n")) onReady();
    wake(false);
  });
  const exited = new Promise<void>((resolve) => {
    p.on("exit", () => {
      onReady();
      wake(true);
      resolve();
    });
  });
  const finished = (n: number) =>
    new Promise<void>((resolve) => {
      waiters.push({ n, resolve });
      wake(p.exitCode !== null || p.signalCode !== null);
    });
  return { process: p, ready, exited, finished, output: () => out };
}
