import { readFileSync } from "node:fs";

/** Shells an agent may run a hook's command line through (`sh -c "timewarp-hook …"`). */
const SHELLS = new Set(["sh", "dash", "bash", "zsh", "ksh", "mksh", "ash", "busybox"]);

/**
 * The agent's process, from the hook's caller's pid (the parent of the process running the
 * hook, which the hook clients pass along): the session's life is bound to it. Agents run a
 * hook's command line through a shell, and some shells (Debian's dash) do not exec a lone
 * command: the hook's parent is then a `sh -c …` that exits with the hook, and the agent is its
 * parent. So shells running `-c` are stepped over (a few at most); anything else (the agent, a
 * terminal's interactive shell) is the answer. Linux only (`/proc`); elsewhere the pid as given.
 * Null for no pid or pid 1 (a daemon's parent: never an agent).
 */
export function agentProcessOf(callerPid: number | null): number | null {
  let pid = callerPid;
  for (let hop = 0; hop < 4 && pid !== null && pid > 1; hop++) {
    if (process.platform !== "linux" || !isShellCommand(pid)) return pid;
    pid = parentOf(pid);
  }
  return pid !== null && pid > 1 ? pid : null;
}

function isShellCommand(pid: number): boolean {
  let argv: string[];
  try {
    argv = readFileSync(`/proc/${pid}/cmdline`, "latin1").split("\0");
  } catch {
    return false;
  }
  const name = (argv[0] ?? "").split("/").pop()?.replace(/^-/, "") ?? "";
  if (!SHELLS.has(name)) return false;
  // busybox runs as `busybox sh -c …` or as `sh -c …` through its link
  const args = name === "busybox" ? argv.slice(2) : argv.slice(1);
  // options up to the first operand (`sh script -c` runs a script, not a command line)
  for (const a of args) {
    if (!a.startsWith("-") || a === "--") return false;
    if (/^-[A-Za-z]*c[A-Za-z]*$/.test(a)) return true;
  }
  return false;
}

function parentOf(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "latin1");
    // "pid (comm) S ppid …": the fields after the last ')' (comm may hold anything)
    const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
    return Number.isInteger(ppid) ? ppid : null;
  } catch {
    return null;
  }
}
