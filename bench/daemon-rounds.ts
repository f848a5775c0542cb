/**
 * `npm run bench:daemon-rounds [-- --size 10k|100k] [--rounds 8] [--heavy] [--keep]` — the
 * watch daemon's memory (its hook worker included) over rounds of commands it serves back to
 * back, the way an agent session uses it (issue 22, item 5: the daemon ≤ 120 MiB with its
 * worker at 100k files).
 *
 * On a `cp -a` copy of bench:scale's tree (`MEM_BENCH_DIR`, default the temp dir): a first
 * snapshot in its own process, then the daemon (`watch start`, its prime awaited), then per
 * round, through `bin/timewarp` (the sh launcher: served by the worker), 20 files edited
 * (spread over the tree, one line each) and `snapshot create`, `status`, `travel FIRST`,
 * `return`. `--heavy` adds `history`, `snapshot list`, another snapshot, 20 files edited at
 * random (appended to, so that every round's travel restores more of them) and
 * `snapshot diff FIRST` before those. Prints per round the daemon's VmRSS, RssAnon and the
 * peak of each command (VmHWM, reset before each by `/proc/PID/clear_refs`), then the peak of
 * the whole run, VmRSS 5 s after it and the daemon's CPU time for the rounds (`/proc/PID/stat`,
 * its threads included). Memory hardly depends on the load; it is printed anyway. Not a test;
 * `SCALE_BENCH_NO_BUILD=1` skips the build.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import {
  awaitDaemonPid,
  awaitPrime,
  cli,
  cpuMs,
  daemonMemory,
  editableFiles,
  editFiles,
  ensureBuilt,
  LAUNCHER,
  watchDaemon,
} from "./scale-common.ts";
import { pristineTree } from "./scale-trees.ts";
import { createPrng } from "./snapshot-fixtures.ts";

const { values } = parseArgs({
  options: {
    size: { type: "string", default: "100k" },
    rounds: { type: "string", default: "8" },
    heavy: { type: "boolean", default: false },
    keep: { type: "boolean", default: false },
  },
});
if (values.size !== "10k" && values.size !== "100k")
  throw new Error(`--size ${values.size}: 10k or 100k`);
const rounds = Number(values.rounds);
if (!(Number.isInteger(rounds) && rounds > 0)) throw new Error(`--rounds ${values.rounds}`);

const mib = (kib: number) => (kib / 1024).toFixed(1);
const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(" ");

ensureBuilt();
const scratch = mkdtempSync(join(process.env.MEM_BENCH_DIR ?? tmpdir(), "tw-rounds-"));
const ws = join(scratch, "ws");
let pid = 0;
try {
  execFileSync("cp", ["-a", pristineTree(values.size), ws]);
  const made = cli(ws, ["-C", ws, "snapshot", "create", "--json"], { TIMEWARP_WATCH: "0" });
  const first = (JSON.parse(made.stdout) as { snapshot_id: string }).snapshot_id;
  watchDaemon("start", ws);
  pid = awaitDaemonPid(ws);
  awaitPrime(ws);
  execFileSync("sleep", ["3"]);
  const warm = daemonMemory(pid);
  let peak = warm.hwm;
  const cpuAtStart = cpuMs(pid);
  console.log(
    `${values.size} tree, ${rounds} rounds${values.heavy ? " (heavy)" : ""}; load ${load()}`,
  );
  console.log(`daemon started, worker warm: VmRSS ${mib(warm.rss)} MiB, VmHWM ${mib(peak)}`);

  /** One command through the launcher; its peak in the daemon (VmHWM since the last one). */
  const served = (args: string[]): string => {
    writeFileSync(`/proc/${pid}/clear_refs`, "5");
    const r = spawnSync(LAUNCHER, ["-C", ws, ...args], { encoding: "utf8" });
    if (r.status !== 0) throw new Error(`timewarp ${args.join(" ")}: ${r.stderr}`);
    const hwm = daemonMemory(pid).hwm;
    peak = Math.max(peak, hwm);
    line.push(`${args[0] === "travel" ? "travel" : args.slice(0, 2).join(" ")} ${mib(hwm)}`);
    return r.stdout;
  };
  let line: string[] = [];
  const files = editableFiles(ws);
  const rnd = createPrng(22);
  for (let r = 0; r < rounds; r++) {
    line = [];
    if (values.heavy) {
      served(["history"]);
      served(["snapshot", "list"]);
      served(["snapshot", "create", "--json"]);
      for (let k = 0; k < 20; k++)
        appendFileSync(
          join(ws, files[Math.floor(rnd() * files.length)] as string),
          `\n// ${r}.${k}\n`,
        );
      served(["snapshot", "diff", first]);
    }
    editFiles(ws, files, 20, r + 10);
    served(["snapshot", "create", "--json"]);
    served(["status"]);
    served(["travel", first]);
    served(["return"]);
    const now = daemonMemory(pid);
    console.log(
      `round ${r + 1}: VmRSS ${mib(now.rss)}, RssAnon ${mib(now.anon)}; peak per command: ${line.join(", ")}`,
    );
  }
  execFileSync("sleep", ["5"]);
  const after = daemonMemory(pid);
  console.log(
    `whole run: peak (VmHWM) ${mib(peak)} MiB; 5 s after: VmRSS ${mib(after.rss)}, RssAnon ${mib(after.anon)}; the daemon's CPU for the rounds ${((cpuMs(pid) - cpuAtStart) / 1000).toFixed(2)} s; load ${load()}`,
  );
} finally {
  if (pid !== 0) watchDaemon("stop", ws);
  if (values.keep) console.log(`kept ${scratch}`);
  else rmSync(scratch, { recursive: true, force: true });
}
