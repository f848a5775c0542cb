/**
 * Shared parts of `npm run bench:scale`: one row of the table, git with a hidden git dir, the
 * built CLI as a whole process, the watch daemon, and the deterministic edits.
 */
import { execFileSync, spawnSync } from "node:child_process";
import {
  type Dirent,
  existsSync,
  readdirSync,
  readFileSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { join, resolve } from "node:path";
import { DEFAULT_EXCLUDES } from "../src/core/index.ts";
import { createPrng } from "./snapshot-fixtures.ts";
import { type ProcessSample, timeProcess } from "./time-process.ts";

export const REPO = resolve(import.meta.dirname, "..");
export const BIN = join(REPO, "bin", "timewarp.cjs");
/**
 * The command as the install wires it (package.json "bin"): the shell launcher, which hands a
 * command to the watch daemon's worker where one runs and starts Node otherwise.
 */
export const LAUNCHER = join(REPO, "bin", "timewarp");
export const EXCLUDES = [...DEFAULT_EXCLUDES];

/** One printed row: timewarp beside git where git has a counterpart. */
export interface ScaleRow {
  /** The `--rows` name that re-runs it. */
  row: string;
  size: string;
  what: string;
  /** Median (ms) or size (bytes, when `unit` is "bytes"). */
  tw: number | null;
  git: number | null;
  /** The git command measured as the counterpart. */
  gitCmd: string;
  unit: "ms" | "bytes";
  twRssMiB?: number | null;
  gitRssMiB?: number | null;
  note?: string;
}

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? (s[m] ?? Number.NaN) : ((s[m - 1] ?? 0) + (s[m] ?? 0)) / 2;
}

export const mib = (kib: number | null) => (kib === null ? null : kib / 1024);

/** Wall ms of `fn` after a `sync` (no one pays for the dirty pages another left behind). */
export function timed(fn: () => void): number {
  execFileSync("sync");
  const t0 = performance.now();
  fn();
  return performance.now() - t0;
}

/** A work tree and its hidden git dir, as a shadow repository keeps them. */
export interface GitTwin {
  work: string;
  gitDir: string;
}

export function gitEnv(twin: GitTwin): NodeJS.ProcessEnv {
  return {
    GIT_DIR: twin.gitDir,
    GIT_WORK_TREE: twin.work,
    GIT_AUTHOR_NAME: "bench",
    GIT_AUTHOR_EMAIL: "bench@example.com",
    GIT_COMMITTER_NAME: "bench",
    GIT_COMMITTER_EMAIL: "bench@example.com",
  };
}

/** One git command as a whole process (wall ms, peak RSS); gc.auto=0 so none packs by itself. */
export function git(twin: GitTwin, ...args: string[]): ProcessSample {
  return timeProcess("git", ["-c", "gc.auto=0", ...args], { cwd: twin.work, env: gitEnv(twin) });
}

export function gitInit(twin: GitTwin): void {
  git(twin, "init", "-q");
  writeFileSync(join(twin.gitDir, "info", "exclude"), `${EXCLUDES.join("\n")}\n`);
}

/** `git add -A && git commit`: two processes, their wall times added, the larger RSS. */
export function gitCommit(twin: GitTwin, message: string): ProcessSample {
  const a = git(twin, "add", "-A");
  const c = git(twin, "commit", "-q", "--allow-empty", "--no-verify", "-m", message);
  return {
    ms: a.ms + c.ms,
    rssKiB: Math.max(a.rssKiB ?? 0, c.rssKiB ?? 0) || null,
    stdout: c.stdout,
  };
}

/**
 * The built CLI as a whole process in `cwd`, through the launcher (served by the daemon when one
 * runs); `TIMEWARP_WATCH=0` keeps it from starting a daemon.
 */
export function cli(cwd: string, args: string[], env: NodeJS.ProcessEnv = {}): ProcessSample {
  return timeProcess(LAUNCHER, args, { cwd, env });
}

/** `npm run build` unless the bundle is there (the CLI rows run the built bin). */
export function ensureBuilt(): void {
  if (process.env.SCALE_BENCH_NO_BUILD !== "1") {
    process.stderr.write("npm run build --silent …\n");
    const r = spawnSync("npm", ["run", "build", "--silent"], { cwd: REPO, stdio: "ignore" });
    if (r.status !== 0 && !existsSync(join(REPO, "dist", "bin", "timewarp.cjs")))
      throw new Error("npm run build failed");
  }
}

/** `timewarp watch start|stop -C root` through the built bin. */
export function watchDaemon(verb: "start" | "stop", root: string): void {
  const r = spawnSync(process.execPath, [BIN, "watch", verb, "-C", root], {
    encoding: "utf8",
    env: { ...process.env, TIMEWARP_WATCH: "" },
  });
  if (r.status !== 0) throw new Error(`watch ${verb} failed: ${r.stdout}${r.stderr}`);
}

/** Text files under `root` (relative, sorted) below `maxBytes`: what the edits pick from. */
export function editableFiles(root: string, maxBytes = 200_000): string[] {
  const out: string[] = [];
  const walk = (rel: string): void => {
    for (const e of readdirSync(join(root, rel), { withFileTypes: true })) {
      const r = rel === "" ? e.name : `${rel}/${e.name}`;
      if (e.isDirectory()) {
        if (r !== ".timewarp") walk(r);
      } else if (
        e.isFile() &&
        /\.(js|mjs|cjs|ts|mts|json|md)$/.test(e.name) &&
        statSync(join(root, r)).size < maxBytes
      )
        out.push(r);
    }
  };
  walk("");
  return out.sort();
}

/**
 * Edit `count` files chosen by `round`, spread over the tree: one line inserted in the middle
 * (a realistic edit, which git's delta compression and ours can both use).
 */
export function editFiles(root: string, files: string[], count: number, round: number): string[] {
  const rnd = createPrng(1000 + round);
  const step = Math.max(1, Math.floor(files.length / count));
  const chosen: string[] = [];
  for (let k = 0; k < count; k++) {
    const rel = files[(k * step + round * 7) % files.length] ?? "";
    const p = join(root, rel);
    const text = readFileSync(p, "utf8");
    const at = text.indexOf("\n", Math.floor(text.length / 2));
    const cut = at < 0 ? text.length : at + 1;
    const line = `// bench edit ${round} ${Math.floor(rnd() * 1e9)}\n`;
    writeFileSync(p, text.slice(0, cut) + line + text.slice(cut));
    chosen.push(rel);
  }
  return chosen;
}

/** Apparent size (KiB, `du -sk`) of a path. */
export function duKiB(path: string): number {
  return Number(execFileSync("du", ["-sk", path], { encoding: "utf8" }).split("\t")[0]);
}

/** Every file under `dir` with its size and mtime: what a snapshot wrote is the difference. */
export function listing(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (rel: string): void => {
    let entries: Dirent[];
    try {
      entries = readdirSync(join(dir, rel), { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      const r = rel === "" ? e.name : `${rel}/${e.name}`;
      if (e.isDirectory()) walk(r);
      else {
        try {
          const st = statSync(join(dir, r));
          out.set(r, `${st.size}:${st.mtimeMs}:${st.ino}`);
        } catch {
          // removed meanwhile
        }
      }
    }
  };
  walk("");
  return out;
}

/** Bytes of the files new or changed between two listings, by top-level entry. */
export function written(before: Map<string, string>, after: Map<string, string>) {
  const by = new Map<string, number>();
  for (const [p, v] of after) {
    if (before.get(p) === v) continue;
    const top = p.split("/")[0] ?? p;
    by.set(top, (by.get(top) ?? 0) + Number(v.split(":")[0]));
  }
  return by;
}

/** VmHWM, VmRSS and RssAnon of `pid` (KiB), from `/proc/PID/status`; 0 for a field not there. */
export function daemonMemory(pid: number): { hwm: number; rss: number; anon: number } {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const field = (name: string) => Number(new RegExp(`${name}:\\s+(\\d+)`).exec(status)?.[1] ?? 0);
  return { hwm: field("VmHWM"), rss: field("VmRSS"), anon: field("RssAnon") };
}

/** Milliseconds in one clock tick of `/proc/PID/stat` (asked of getconf once). */
let tickMs: number | undefined;

/** CPU time `pid` has used so far, ms (user + system, its threads included; `/proc/PID/stat`). */
export function cpuMs(pid: number): number {
  tickMs ??= 1000 / Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim());
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  // utime and stime: fields 14 and 15 of the line, 11 and 12 past the command's name
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) * tickMs;
}

/** The pid of `root`'s watch daemon, once its record is there (waited for up to 2 min). */
export function awaitDaemonPid(root: string): number {
  const file = join(root, ".timewarp", "watch", "daemon.json");
  for (let i = 0; i < 600 && !existsSync(file); i++) execFileSync("sleep", ["0.2"]);
  return (JSON.parse(readFileSync(file, "utf8")) as { pid: number }).pid;
}

/**
 * The daemon's prime as its log tells it (its JSON answer), once the child ended (waited for up
 * to 10 min); null: none (`TIMEWARP_WATCH_PRIME=0`, or it never ended).
 */
export function awaitPrime(root: string): { outcome?: string; duration_ms?: number } | null {
  const log = join(root, ".timewarp", "watch", "daemon.log");
  for (let i = 0; i < 3000; i++) {
    const m = /prime pid \d+ ended \([^)]*\): (\{.*\})$/m.exec(readFileSync(log, "utf8"));
    if (m !== null) return JSON.parse(m[1] as string) as { outcome?: string; duration_ms?: number };
    if (process.env.TIMEWARP_WATCH_PRIME === "0") return null;
    execFileSync("sleep", ["0.2"]);
  }
  return null;
}
