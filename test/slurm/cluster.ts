import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmodSync, mkdirSync, mkdtempSync, openSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";

/**
 * A one-host Slurm for the tests: munged with its own key and socket, slurmctld and slurmd on
 * localhost, all from a generated slurm.conf in a temp dir (no cgroups, no accounting, the node
 * with one CPU so a second job waits). Daemons run in the foreground as our children and are
 * stopped by pid.
 */
export interface SlurmCluster {
  dir: string;
  conf: string;
  node: string;
  /** The environment the runtime and the Slurm clients need (SLURM_CONF). */
  env: NodeJS.ProcessEnv;
  stop(): Promise<void>;
}

/** Why a cluster cannot start here, or undefined when it can try. */
export function slurmUnavailable(): string | undefined {
  if (process.platform !== "linux") return `Slurm tests need Linux (this is ${process.platform})`;
  if (process.getuid?.() !== 0) return "Slurm tests need root (slurmd runs jobs as their user)";
  for (const bin of ["munged", "slurmctld", "slurmd", "srun", "squeue", "scontrol", "scancel"]) {
    const found = spawnSync("sh", ["-c", `command -v ${bin}`], { encoding: "utf8" });
    if (found.status !== 0) return `${bin} is not installed (apt-get install slurm-wlm munge)`;
  }
  return undefined;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

function slurmConf(o: { dir: string; node: string; ctldPort: number; dPort: number }): string {
  const { dir } = o;
  return [
    "ClusterName=skillpilot-test",
    `SlurmctldHost=${o.node}(127.0.0.1)`,
    `SlurmctldPort=${o.ctldPort}`,
    `SlurmdPort=${o.dPort}`,
    "SlurmUser=root",
    "SlurmdUser=root",
    "AuthType=auth/munge",
    `AuthInfo=socket=${join(dir, "munge-run", "munge.socket")}`,
    "CredType=cred/munge",
    `StateSaveLocation=${join(dir, "state")}`,
    `SlurmdSpoolDir=${join(dir, "spool")}`,
    `SlurmctldPidFile=${join(dir, "slurmctld.pid")}`,
    `SlurmdPidFile=${join(dir, "slurmd.pid")}`,
    `SlurmctldLogFile=${join(dir, "log", "slurmctld.log")}`,
    `SlurmdLogFile=${join(dir, "log", "slurmd.log")}`,
    "ProctrackType=proctrack/linuxproc",
    "TaskPlugin=task/none",
    "JobAcctGatherType=jobacct_gather/none",
    "AccountingStorageType=accounting_storage/none",
    "JobCompType=jobcomp/none",
    "SchedulerType=sched/backfill",
    "SelectType=select/cons_tres",
    "SelectTypeParameters=CR_CPU",
    // ended jobs stay readable by squeue/scontrol for 10 minutes
    "MinJobAge=600",
    "ReturnToService=2",
    "MpiDefault=none",
    "SwitchType=switch/none",
    "InactiveLimit=0",
    "KillWait=2",
    "Waittime=0",
    `NodeName=${o.node} NodeAddr=127.0.0.1 CPUs=1 RealMemory=1000 State=UNKNOWN`,
    // a job in "urgent" preempts (cancels) one in "debug": the PREEMPTED test
    "PreemptType=preempt/partition_prio",
    "PreemptMode=CANCEL",
    `PartitionName=debug Nodes=${o.node} Default=YES MaxTime=INFINITE State=UP PriorityTier=1`,
    `PartitionName=urgent Nodes=${o.node} MaxTime=INFINITE State=UP PriorityTier=2`,
    "",
  ].join("\n");
}

function daemon(argv: string[], log: string, env: NodeJS.ProcessEnv): ChildProcess {
  const fd = openSync(log, "a");
  const child = spawn(argv[0] ?? "", argv.slice(1), { stdio: ["ignore", fd, fd], env });
  child.on("error", () => {});
  return child;
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
  const gone = new Promise<void>((r) => child.once("exit", () => r()));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
  await gone;
  clearTimeout(timer);
}

/** Wait until `check` holds; false when `timeoutMs` passed first. */
async function until(check: () => boolean, timeoutMs: number): Promise<boolean> {
  const end = performance.now() + timeoutMs;
  while (performance.now() < end) {
    if (check()) return true;
    await sleep(200);
  }
  return false;
}

/** Run a Slurm client against the cluster; its stdout (empty on failure). */
export function slurmCmd(env: NodeJS.ProcessEnv, argv: string[]): string {
  const r = spawnSync(argv[0] ?? "", argv.slice(1), { env, encoding: "utf8", timeout: 20_000 });
  return r.status === 0 ? r.stdout : "";
}

/** Start munged, slurmctld and slurmd; throws with the logs' tail when the node never comes up. */
export async function startSlurmCluster(): Promise<SlurmCluster> {
  const dir = mkdtempSync(join(tmpdir(), "tw-slurm-"));
  chmodSync(dir, 0o755);
  for (const sub of ["munge-key", "munge-run", "state", "spool", "log"]) mkdirSync(join(dir, sub));
  chmodSync(join(dir, "munge-key"), 0o700);
  const key = join(dir, "munge-key", "munge.key");
  writeFileSync(key, randomBytes(1024), { mode: 0o400 });
  const node = hostname().split(".")[0] ?? "localhost";
  const conf = join(dir, "slurm.conf");
  writeFileSync(
    conf,
    slurmConf({ dir, node, ctldPort: await freePort(), dPort: await freePort() }),
  );
  const env = { ...process.env, SLURM_CONF: conf };
  const children: ChildProcess[] = [];
  const stop = async () => {
    for (const child of children.reverse()) await stopChild(child);
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    children.push(
      daemon(
        [
          "munged",
          "-F",
          "--force",
          `--key-file=${key}`,
          `--socket=${join(dir, "munge-run", "munge.socket")}`,
          `--pid-file=${join(dir, "munge-run", "munged.pid")}`,
          `--seed-file=${join(dir, "munge-key", "munged.seed")}`,
          `--log-file=${join(dir, "log", "munged.log")}`,
        ],
        join(dir, "log", "munged.out"),
        env,
      ),
    );
    await sleep(300);
    children.push(daemon(["slurmctld", "-D", "-i", "-f", conf], join(dir, "log", "ctld.out"), env));
    await until(() => slurmCmd(env, ["scontrol", "ping"]).includes("UP"), 20_000);
    children.push(daemon(["slurmd", "-D", "-f", conf, "-N", node], join(dir, "log", "d.out"), env));
    const idle = await until(
      () => /^idle/.test(slurmCmd(env, ["sinfo", "-h", "-n", node, "-o", "%T"]).trim()),
      30_000,
    );
    if (!idle) {
      const logs = spawnSync("sh", ["-c", `tail -n 5 ${dir}/log/*`], { encoding: "utf8" }).stdout;
      throw new Error(`the Slurm node ${node} did not become idle within 30 s:\n${logs}`);
    }
  } catch (error) {
    await stop();
    throw error;
  }
  return { dir, conf, node, env, stop };
}
