/**
 * The CLI commands the hook server runs for `bin/timewarp` (the shell launcher of the
 * `timewarp` command):
 *
 * - **read-only** ones (`status`, `history`, `history show ID`, `snapshot list`,
 *   `snapshot diff A [B]`), whose answer is the same in the daemon's worker as in a process of
 *   their own, and which may run again in-process when the daemon fails them;
 * - **write** ones (`snapshot create`, `travel ID`, `return`, `revert ID`, `rewind [TURN]`,
 *   whose listing only reads but whose `N` and `--undo` write: one kind for all), which must run at
 *   most once: once the worker started one, it is never declined (its client would run it
 *   again) but answered, or reported `interrupted` when the worker or the daemon stops under it;
 *   their stderr (progress) goes to the client as it is written (`live` in the request).
 *
 * The grammar is the shell launcher's own (bin/timewarp keeps the same lists): the global
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
  "--session-id",
  "--save-patch",
  "--to",
  "--session",
]);
const FLAGS = new Set(["--json", "--include-diffs", "--dry-run", "--force", "--undo"]);

/** What a served command does: only reads, or writes (then it runs at most once). */
export type ServedCommandKind = "read" | "write";

/** The kind of a served command's words (its name, its subcommand, its positional arguments). */
function kindOfWords(words: readonly string[]): ServedCommandKind | null {
  const [first, second] = words;
  const n = words.length;
  if (first === "status") return n === 1 ? "read" : null;
  if (first === "history") return n === 1 || (second === "show" && n === 3) ? "read" : null;
  if (first === "snapshot") {
    if (second === "list") return n === 2 ? "read" : null;
    if (second === "diff") return n === 3 || n === 4 ? "read" : null;
    if (second === "create") return n === 2 ? "write" : null;
  }
  if (first === "travel" || first === "revert") return n === 2 ? "write" : null;
  if (first === "return") return n === 1 ? "write" : null;
  if (first === "rewind") return n <= 2 ? "write" : null;
  return null;
}

/** The kind of `timewarp <args>` when the hook server runs it for a client, else null. */
export function servedCommandKind(args: readonly unknown[]): ServedCommandKind | null {
  if (!args.every((a) => typeof a === "string")) return null;
  const words: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string;
    if (FLAGS.has(arg)) continue;
    if (VALUE_OPTIONS.has(arg)) {
      const value = args[i + 1] as string | undefined;
      if (value === undefined || value === "" || value.startsWith("-")) return null;
      i++;
      continue;
    }
    if (arg === "" || arg.startsWith("-")) return null;
    words.push(arg);
  }
  return kindOfWords(words);
}

/** Whether the hook server runs `timewarp <args>` for a client (see the module comment). */
export function isServedCommand(args: readonly unknown[]): boolean {
  return servedCommandKind(args) !== null;
}
