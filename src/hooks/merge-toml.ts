import { isDeepStrictEqual } from "node:util";
import { parse, patch } from "@decimalturn/toml-patch";
import { ErrorCode, TimewarpError } from "../core/index.ts";

/**
 * Codex's `.codex/config.toml`: timewarp's MCP server as `mcp_servers.<name>`, merged through a
 * real TOML parser and editor (`@decimalturn/toml-patch`, which keeps the user's comments and
 * formatting). Pure both ways.
 *
 * Where it can, the install appends a table between two marker comments at the end, leaving
 * every byte above it as it was (an uninstall cuts the block out). That is only right when the
 * document still means what it meant plus our entry: the result is parsed and compared. When
 * the user's `mcp_servers` cannot take another table (an inline table, `mcp_servers = { … }`,
 * is closed to later tables; a TOML reader such as Codex's then refuses the whole file), the
 * entry is patched into their own `mcp_servers` where it stands, and the uninstall patches it
 * out again.
 */

const BEGIN =
  "# >>> timewarp (added by `timewarp install codex`; undo: `timewarp install --uninstall codex`) >>>";
const END = "# <<< timewarp <<<";

type TomlTable = Record<string, unknown>;

export interface TomlEntry {
  /** The table holding the entry (`mcp_servers`) and the entry's key (`timewarp`). */
  table: string;
  key: string;
  /** Plain values only (strings, arrays of strings). */
  value: TomlTable;
}

function parseToml(path: string, text: string): TomlTable {
  try {
    return parse(text) as TomlTable;
  } catch (error) {
    throw new TimewarpError(
      ErrorCode.INVALID_INPUT,
      `${path} is not valid TOML (${error instanceof Error ? error.message.split("\n")[0] : String(error)}); fix or move it, then run the install again — nothing was changed`,
      { data: { file: path } },
    );
  }
}

/**
 * A parsed document as plain data: the parser's tables have no prototype, and its dates are
 * objects of its own; their JSON form compares them by value.
 */
function plain(value: unknown): unknown {
  return JSON.parse(
    JSON.stringify(value, (_k, v: unknown) => (typeof v === "bigint" ? `${v}n` : v)),
  );
}

/** Whether text parses to exactly `expected` (no error, nothing else changed). */
function meansExactly(text: string, expected: TomlTable): boolean {
  try {
    return isDeepStrictEqual(plain(parse(text)), plain(expected));
  } catch {
    return false;
  }
}

const asTable = (v: unknown): TomlTable | undefined =>
  typeof v === "object" && v !== null && !Array.isArray(v) ? (v as TomlTable) : undefined;

function withEntry(doc: TomlTable, entry: TomlEntry, value: TomlTable | undefined): TomlTable {
  const inner = { ...asTable(doc[entry.table]) };
  if (value === undefined) delete inner[entry.key];
  else inner[entry.key] = value;
  const out = { ...doc };
  if (Object.keys(inner).length === 0) delete out[entry.table];
  else out[entry.table] = inner;
  return out;
}

/** The text without our marked block (and the blank line that set it apart). */
function stripBlock(text: string): string {
  const start = text.indexOf(BEGIN);
  if (start < 0) return text;
  const end = text.indexOf(END, start);
  const after = end < 0 ? text.length : end + END.length + 1;
  const before = text.slice(0, start).replace(/\n\n$/, "\n");
  return before + text.slice(Math.min(after, text.length));
}

function tomlString(value: unknown): string {
  if (typeof value === "string") return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(tomlString).join(", ")}]`;
  throw new TimewarpError(ErrorCode.INTERNAL, `a TOML entry value of type ${typeof value}`);
}

function blockOf(entry: TomlEntry): string {
  const lines = Object.entries(entry.value).map(([k, v]) => `${k} = ${tomlString(v)}`);
  return `${BEGIN}\n[${entry.table}.${entry.key}]\n${lines.join("\n")}\n${END}\n`;
}

/** Install `entry` into `current` (null: no file). `changes` is empty when it is there already. */
export function installTomlEntry(
  path: string,
  current: string | null,
  entry: TomlEntry,
): { text: string; changes: string[] } {
  const base = current ?? "";
  const rest = stripBlock(base);
  const doc = parseToml(path, rest);
  const existing = asTable(doc[entry.table])?.[entry.key];
  // the parser's own values (dates stay dates), for the patch
  const wanted = withEntry(doc, entry, entry.value);
  if (existing !== undefined && !isDeepStrictEqual(plain(existing), entry.value))
    throw new TimewarpError(
      ErrorCode.INVALID_INPUT,
      `${path} already defines ${entry.table}.${entry.key} outside timewarp's block; remove it or leave it as it is (then skip this install) — nothing was changed`,
      { data: { file: path } },
    );
  if (existing !== undefined) {
    // the user's own (or an earlier patched-in) entry says the same: nothing to add
    return rest === base
      ? { text: base, changes: [] }
      : { text: rest, changes: ["-block (already defined)"] };
  }
  const sep = rest === "" || rest.endsWith("\n\n") ? "" : rest.endsWith("\n") ? "\n" : "\n\n";
  const appended = `${rest}${sep}${blockOf(entry)}`;
  if (appended === base) return { text: base, changes: [] };
  if (meansExactly(appended, wanted)) {
    return {
      text: appended,
      changes: [current === null ? "created" : rest === base ? "+block" : "~block"],
    };
  }
  // The user's table cannot be extended from below (an inline table): edit it where it stands.
  const patched = patch(rest, wanted);
  if (!meansExactly(patched, wanted))
    throw new TimewarpError(
      ErrorCode.INVALID_INPUT,
      `${path}: cannot add ${entry.table}.${entry.key} without changing what the file means; add it by hand — nothing was changed`,
      { data: { file: path } },
    );
  return { text: patched, changes: [`+${entry.table}.${entry.key}`] };
}

/** `current` without timewarp's entry: the block cut out, or the patched-in entry patched out. */
export function uninstallTomlEntry(
  path: string,
  current: string,
  entry: TomlEntry,
): { text: string | null; changes: string[] } {
  let text = current;
  const changes: string[] = [];
  if (current.includes(BEGIN)) {
    text = stripBlock(current);
    changes.push("-block");
  } else {
    const doc = parseToml(path, current);
    const existing = asTable(doc[entry.table])?.[entry.key];
    // only an entry that is ours, value for value (the user's own stays)
    if (!isDeepStrictEqual(plain(existing), entry.value)) return { text: current, changes: [] };
    text = patch(current, withEntry(doc, entry, undefined));
    changes.push(`-${entry.table}.${entry.key}`);
  }
  return text.trim() === ""
    ? { text: null, changes: [...changes, "deleted (empty)"] }
    : { text, changes };
}
