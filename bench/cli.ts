/**
 * `npm run bench:cli [FILES] [RUNS] [OPS]` — the read-only commands as a user or an agent runs
 * them, each sample a whole process: `bin/timewarp` (the shell launcher) with the watch daemon
 * running (its worker answers: no Node starts), the same launcher with TIMEWARP_HOOK_SERVER=0
 * (it runs `node bin/timewarp.cjs`, the in-process path, after its own argument check), `node
 * bin/timewarp.cjs` directly, and git's equivalents on a git repository of the same tree
 * (`git status`, `git log -20`, `git show HEAD`, `git diff --stat HEAD`). A workspace of FILES
 * files (default 10 000) with OPS recorded edits (default 20), two snapshots and a few changes
 * since; RUNS samples per row (default 20). Prints p50/p95 and peak RSS per child (GNU time);
 * say the load (`uptime`) beside the numbers, as the bench does. Then the write commands' rows
 * on the real 10k tree (bench/cli-write.ts); `-- --write [--size 100k] [--runs N] [--daemon-only]`
 * runs those alone (`--daemon-only`: without the in-process samples between the daemon's).
 */
import { execSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { writeRows } from "./cli-write.ts";
import { type ProcessSample, percentile, timeProcess } from "./time-process.ts";

const REPO = resolve(import.meta.dirname, "..");
const NODE_BIN = join(REPO, "bin", "timewarp.cjs");
const LAUNCHER = join(REPO, "bin", "timewarp");
const WRITE_ONLY = process.argv.includes("--write");
const flag = (name: string) => {
  const at = process.argv.indexOf(name);
  return at < 0 ? undefined : process.argv[at + 1];
};
const positional = process.argv.slice(2).filter((a, i, all) => {
  return !a.startsWith("--") && !["--size", "--runs"].includes(all[i - 1] ?? "");
});
const FILES = Number(positional[0] ?? 10_000);
const RUNS = Number(positional[1] ?? 20);
const OPS = Number(positional[2] ?? 20);
const WRITE_SIZE = flag("--size") === "100k" ? "100k" : "10k";
const WRITE_RUNS = Number(flag("--runs") ?? (WRITE_SIZE === "100k" ? 5 : 10));

function ensureBuilt(): void {
  if (existsSync(join(REPO, "dist", "bin", "timewarp.cjs"))) return;
  spawnSync("npm", ["run", "build"], { cwd: REPO, stdio: "inherit" });
}

function makeWorkspace(dir: string): void {
  for (let i = 0; i < FILES; i++) {
    const sub = join(dir, "src", `m${Math.floor(i / 100)}`);
    if (i % 100 === 0) mkdirSync(sub, { recursive: true });
    writeFileSync(join(sub, `f${i}.ts`), `export const v${i} = ${i};\n// ${"x".repeat(120)}\n`);
  }
}

/** The workspace's history and snapshots, made through the CLI; the first snapshot's id. */
function record(dir: string): string {
  const tw = (...args: string[]) =>
    spawnSync("node", [NODE_BIN, ...args], { cwd: dir, encoding: "utf8" });
  const first = JSON.parse(tw("snapshot", "create", "--json").stdout) as { snapshot_id: string };
  for (let i = 0; i < OPS; i++) {
    writeFileSync(join(dir, "draft.txt"), `export const v${i} = "edit ${i}";\n`);
    tw("edit", "whole", `src/m0/f${i % 100}.ts`, "--content-file", "draft.txt");
  }
  tw("snapshot", "create");
  for (let i = 0; i < 20; i++) writeFileSync(join(dir, "src", "m1", `f${100 + i}.ts`), `// ${i}\n`);
  return first.snapshot_id;
}

function gitRepo(dir: string): void {
  const git = (cmd: string) => execSync(`git ${cmd}`, { cwd: dir, stdio: "ignore" });
  git("init -q");
  git("add -A");
  git("-c user.name=b -c user.email=b@b commit -qm base");
  for (let i = 0; i < OPS; i++) {
    writeFileSync(join(dir, "src", "m0", `f${i % 100}.ts`), `export const v${i} = "edit ${i}";\n`);
    git(`-c user.name=b -c user.email=b@b commit -qam edit${i}`);
  }
  for (let i = 0; i < 20; i++) writeFileSync(join(dir, "src", "m1", `f${100 + i}.ts`), `// ${i}\n`);
}

function sample(cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = {}) {
  const xs: ProcessSample[] = [];
  timeProcess(cmd, args, { cwd, env }); // warm the page cache and the code cache
  for (let i = 0; i < RUNS; i++) xs.push(timeProcess(cmd, args, { cwd, env }));
  return xs;
}

function row(name: string, xs: ProcessSample[]): void {
  const ms = xs.map((x) => x.ms);
  const rss = Math.max(...xs.map((x) => x.rssKiB ?? 0)) / 1024;
  console.log(
    `${name.padEnd(46)} p50 ${percentile(ms, 50).toFixed(1).padStart(7)} ms  p95 ${percentile(ms, 95).toFixed(1).padStart(7)} ms  peak RSS ${rss.toFixed(1).padStart(6)} MiB`,
  );
}

/** The watch daemon's peak RSS so far (VmHWM: the process, its worker thread included). */
function daemonPeakMiB(dir: string): string {
  try {
    const record = JSON.parse(
      readFileSync(join(dir, ".timewarp", "watch", "hooks", "server.json"), "utf8"),
    ) as { pid: number };
    const hwm = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${record.pid}/status`, "utf8"));
    return hwm === null ? "?" : `${(Number(hwm[1]) / 1024).toFixed(1)} MiB`;
  } catch {
    return "? (no daemon record or no /proc)";
  }
}

async function main(): Promise<void> {
  ensureBuilt();
  const dir = mkdtempSync(join(tmpdir(), "tw-bench-cli-"));
  const gitDir = mkdtempSync(join(tmpdir(), "tw-bench-cli-git-"));
  try {
    makeWorkspace(dir);
    makeWorkspace(gitDir);
    gitRepo(gitDir);
    spawnSync("node", [NODE_BIN, "init"], { cwd: dir });
    spawnSync("node", [NODE_BIN, "watch", "start"], { cwd: dir });
    const snapshot = record(dir);
    const history = JSON.parse(
      spawnSync("node", [NODE_BIN, "history", "--json", "--limit", "1"], {
        cwd: dir,
        encoding: "utf8",
      }).stdout,
    ) as { history: { id: string }[] };
    const op = history.history[0]?.id ?? "";
    console.log(
      `workspace: ${FILES} files, ${OPS} edits, ${RUNS} samples per row, node ${process.version}; load: ${execSync("uptime").toString().trim()}`,
    );
    const commands: [string, string[]][] = [
      ["status", ["status"]],
      ["status --json", ["status", "--json"]],
      ["history (20)", ["history"]],
      ["history show", ["history", "show", op]],
      ["snapshot list", ["snapshot", "list"]],
      ["snapshot diff (snapshot → workspace)", ["snapshot", "diff", snapshot]],
    ];
    for (const [name, args] of commands) {
      row(`${name}: daemon (sh bin/timewarp)`, sample("sh", [LAUNCHER, ...args], dir));
      row(
        `${name}: in-process (sh, no daemon)`,
        sample("sh", [LAUNCHER, ...args], dir, { TIMEWARP_HOOK_SERVER: "0" }),
      );
      row(`${name}: in-process (node bin/timewarp.cjs)`, sample("node", [NODE_BIN, ...args], dir));
    }
    row("git status", sample("git", ["status"], gitDir));
    row("git log -20", sample("git", ["log", "-20"], gitDir));
    row("git show HEAD", sample("git", ["show", "HEAD"], gitDir));
    row("git diff --stat HEAD", sample("git", ["diff", "--stat", "HEAD"], gitDir));
    row("floor: sh -c true", sample("sh", ["-c", "true"], dir));
    row("floor: node -e 0", sample("node", ["-e", "0"], dir));
    console.log(`the daemon (with its worker): peak RSS ${daemonPeakMiB(dir)}`);
    console.log(`load after: ${execSync("uptime").toString().trim()}`);
  } finally {
    spawnSync("node", [NODE_BIN, "watch", "stop"], { cwd: dir });
    rmSync(dir, { recursive: true, force: true });
    rmSync(gitDir, { recursive: true, force: true });
  }
}

if (!WRITE_ONLY) await main();
writeRows({
  size: WRITE_SIZE,
  runs: WRITE_RUNS,
  daemonOnly: process.argv.includes("--daemon-only"),
});
