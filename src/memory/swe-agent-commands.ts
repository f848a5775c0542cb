/**
 * SWE-agent's own commands that only look at files (its windowed viewer and search tools): one
 * list for the importer, which calls them reads, and for the shell reader, which finds no write in
 * them.
 */
export const SWE_AGENT_READ_COMMANDS: readonly string[] = [
  "open",
  "goto",
  "scroll_up",
  "scroll_down",
  "search_file",
  "search_dir",
  "find_file",
];
