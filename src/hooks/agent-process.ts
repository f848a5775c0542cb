import { readFileSync } from "node:fs";
import { parentPidOf } from "../core/index.ts";

/** Shells an agent may run a hook's command line through (`sh -c "timewarp-hook …"`). */
const SHELLS = new Set(["sh", "dash", "bash", "zsh", "ksh", "mksh", "ash", "busybox"]);
/**
 * Launchers that start timewarp and end with it (`npx timewarp`, `npm exec`, tsx from a source
 * checkout): taken for the agent, they would make a live session look dead at once.
 */
const LAUNCHERS = /^(?:npx|npm|pnpm|yarn|bunx|tsx|npx-cli\.js|npm-cli\.js)$/;
const NODES = /^(?:node|nodejs)$/;

/**
 * The agent's process, from the hook's caller's pid (the parent of the process running the
 * hook, which the hook clients pass along): the session's life is bound to it. Agents run a
 * hook's command line through a shell, and some shells (Debian's dash) do not exec a lone
 * command: the hook's parent is then a `sh -c …` that exits with the hook, and the agent is its
 * parent. So shells running `-c` are stepped over (a few at most); anything else (the agent, a
 * terminal's interactive shell) is the answer. Launchers that end with the hook (`npx`, `npm
 * exec`, tsx) are stepped over the same way. Linux only (`/proc`); elsewhere the pid as given.
 * Null for no pid or pid 1 (a daemon's parent: never an agent).
 */
export function agentProcessOf(callerPid: number | null): number | null {
  let pid = callerPid;
  for (let hop = 0; hop < 6 && pid !== null && pid > 1; hop++) {
    if (process.platform !== "linux" || !isWrapper(pid)) return pid;
    pid = parentPidOf(pid);
  }
  return pid !== null && pid > 1 ? pid : null;
}

/** A `sh -c …` or a launcher between the agent and the hook, to be stepped over. */
function isWrapper(pid: number): boolean {
  let argv: string[];
  try {
    argv = readFileSync(`/proc/${pid}/cmdline`, "latin1").split("\0");
  } catch {
    return false;
  }
  const base = (arg: string | undefined) => (arg ?? "").split("/").pop()?.replace(/^-/, "") ?? "";
  const name = base(argv[0]);
  if (LAUNCHERS.test(name)) return true;
  if (NODES.test(name)) {
    // `node [options] SCRIPT …`: a launcher's script (tsx's own `dist/cli.mjs` too)
    const script = argv.slice(1).find((a) => !a.startsWith("-"));
    return (
      script !== undefined &&
      (LAUNCHERS.test(base(script)) || /\/tsx\/dist\/cli\.[cm]?js$/.test(script))
    );
  }
  return isShellCommand(name, argv);
}

function isShellCommand(name: string, argv: string[]): boolean {
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
