/**
 * The function name git writes after `@@ … @@` with no diff driver set (`git diff --no-index`,
 * or a path without a `diff` attribute): the nearest line above the hunk, in the old file,
 * that starts with an ASCII letter, `_` or `$`; at most its first 80 bytes, less trailing
 * space, tab, CR and LF. A hunk whose search finds nothing keeps the previous hunk's name,
 * since that line is still the nearest one above it; before the first name, there is none.
 */

const MAX_NAME_BYTES = 80;
const NL = 10;

function startsName(c: number): boolean {
  return (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || c === 0x5f || c === 0x24;
}

function isTrailingSpace(c: number): boolean {
  return c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;
}

/** Drop a UTF-8 sequence cut short by the byte limit, so the patch text stays valid UTF-8. */
function wholeChars(buf: Buffer, s: number, e: number): number {
  let i = e - 1;
  let back = 0;
  while (i >= s && back < 3 && (buf[i]! & 0xc0) === 0x80) {
    i--;
    back++;
  }
  if (i < s) return e;
  const lead = buf[i]!;
  const need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
  return e - i < need ? i : e;
}

/** The name a line gives, or null when it starts no name. */
function nameOf(buf: Buffer, s: number, e: number): Buffer | null {
  if (e <= s || !startsName(buf[s]!)) return null;
  let end = Math.min(e, s + MAX_NAME_BYTES);
  while (end > s && isTrailingSpace(buf[end - 1]!)) end--;
  if (e > s + MAX_NAME_BYTES) end = wholeChars(buf, s, end);
  return buf.subarray(s, end);
}

/**
 * A finder for the hunks of one old file, called in order with the byte offset where each
 * hunk's first old line starts; each line is looked at once over all calls.
 */
export function createFuncNameFinder(old: Buffer): (hunkStart: number) => Buffer {
  let searchedFrom = 0;
  let current: Buffer = Buffer.alloc(0);
  return (hunkStart) => {
    let e = hunkStart;
    while (e > searchedFrom) {
      const s = e < 2 ? 0 : old.lastIndexOf(NL, e - 2) + 1;
      const name = nameOf(old, s, e);
      if (name !== null) {
        current = name;
        break;
      }
      e = s;
    }
    searchedFrom = hunkStart;
    return current;
  };
}
