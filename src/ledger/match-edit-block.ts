import { ErrorCode, TimewarpError } from "../core/index.ts";

/** 1-based line number of character offset `at` in `text`. */
function lineOf(text: string, at: number): number {
  let line = 1;
  for (let i = text.indexOf("\n"); i >= 0 && i < at; i = text.indexOf("\n", i + 1)) line++;
  return line;
}

/** Start offsets of every occurrence of `needle`, overlapping ones included. */
function occurrences(text: string, needle: string): number[] {
  const out: number[] = [];
  for (let i = text.indexOf(needle); i >= 0; i = text.indexOf(needle, i + 1)) out.push(i);
  return out;
}

/**
 * Replace the one occurrence of `search` in `text` by `replace` (pure). The block must match
 * exactly once: none is EDIT_BLOCK_NOT_FOUND, several (overlapping included) is
 * EDIT_BLOCK_AMBIGUOUS with `data.candidates` (1-based start lines). In a CRLF file a block
 * written with bare LFs is matched with CRLFs (and its replacement written with CRLFs), since
 * agents rarely reproduce `\r`; the match is still exact and unique.
 */
export function applyEditBlockToText(options: {
  text: string;
  search: string;
  replace: string;
  path: string;
}): string {
  const { text, search, replace, path } = options;
  if (search.length === 0) {
    throw new TimewarpError(
      ErrorCode.INVALID_INPUT,
      `searchBlock for ${path} is empty: it would match everywhere`,
    );
  }
  let needle = search;
  let replacement = replace;
  let hits = occurrences(text, needle);
  if (
    hits.length === 0 &&
    text.includes("\r\n") &&
    search.includes("\n") &&
    !search.includes("\r")
  ) {
    needle = search.replace(/\n/g, "\r\n");
    replacement = replace.replace(/\r?\n/g, "\r\n");
    hits = occurrences(text, needle);
  }
  if (hits.length === 0) {
    throw new TimewarpError(
      ErrorCode.EDIT_BLOCK_NOT_FOUND,
      `searchBlock not found in ${path}: expected exactly one exact match (whitespace and indentation included), got none`,
      { data: { path } },
    );
  }
  if (hits.length > 1) {
    const candidates = hits.map((at) => lineOf(text, at));
    throw new TimewarpError(
      ErrorCode.EDIT_BLOCK_AMBIGUOUS,
      `searchBlock matches ${hits.length} times in ${path} (at lines ${candidates.join(", ")}): add surrounding lines so it matches once`,
      { data: { path, candidates } },
    );
  }
  const at = hits[0] ?? 0;
  return text.slice(0, at) + replacement + text.slice(at + needle.length);
}
