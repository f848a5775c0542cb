/** One use of a command: what it does, and the command line (without the leading `$`). */
export type HelpExample = readonly [what: string, command: string];

/**
 * The "Examples:" block a command's `--help` shows after its options, the way git and gh show
 * theirs: each example a comment saying what it does over the command line that does it.
 * Commands take it with `.addHelpText("after", helpExamples(...))`.
 */
export function helpExamples(...examples: readonly HelpExample[]): string {
  const lines = ["", "Examples:"];
  for (const [what, command] of examples) lines.push(`  # ${what}`, `  $ ${command}`);
  return lines.join("\n");
}
