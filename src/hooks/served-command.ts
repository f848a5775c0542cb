/**
 * The CLI commands the hook server runs for `bin/timewarp` (the shell launcher of the
 * `timewarp` command): read-only ones, whose answer is the same in the daemon's worker as in a
 * process of their own, and which may run again in-process when the daemon fails them.
 *
 * The grammar is the shell launcher's own (bin/timewarp keeps the same list): the global
 * `--json`, `-C DIR` / `--cwd DIR`, and per command the options below, each value a separate
 * argument that does not start with `-`; anything else (`--limit=5`, `--help`, `--`, another
 * command) is left to the CLI in its own process. Where an option stands is not judged here:
 * the worker runs the CLI's own parser on the arguments as typed, so a misplaced one fails as it
 * would in-process.
 */

/** Options that take a value, and flags, as the served commands define them. */
const VALUE_OPTIONS = new Set([
  "-C",
  "--cwd",
  "--limit",
  "--since",
  "--until",
  "--tool",
  "--file",
  "--cursor",
  "--format",
]);
const FLAGS = new Set(["--json", "--include-diffs"]);

/** The words of a served command: its name, its subcommand, then its positional arguments. */
function servedWords(words: readonly string[]): boolean {
  const [first, second] = words;
  if (first === "status") return words.length === 1;
  if (first === "history") return words.length === 1 || (second === "show" && words.length === 3);
  if (first === "snapshot") {
    if (second === "list") return words.length === 2;
    if (second === "diff") return words.length === 3 || words.length === 4;
  }
  return false;
}

/** Whether the hook server runs `timewarp <args>` for a client (see the module comment). */
export function isServedCommand(args: readonly unknown[]): boolean {
  if (!args.every((a) => typeof a === "string")) return false;
  const words: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string;
    if (FLAGS.has(arg)) continue;
    if (VALUE_OPTIONS.has(arg)) {
      const value = args[i + 1] as string | undefined;
      if (value === undefined || value === "" || value.startsWith("-")) return false;
      i++;
      continue;
    }
    if (arg === "" || arg.startsWith("-")) return false;
    words.push(arg);
  }
  return servedWords(words);
}
