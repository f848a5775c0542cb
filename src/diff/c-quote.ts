import { ErrorCode, TimewarpError } from "../core/index.ts";

const ESCAPE_CHARS: Record<number, string> = {
  7: "a",
  8: "b",
  9: "t",
  10: "n",
  11: "v",
  12: "f",
  13: "r",
  34: '"',
  92: "\\",
};
const UNESCAPE: Record<string, number> = {
  a: 0x07,
  b: 0x08,
  t: 0x09,
  n: 0x0a,
  v: 0x0b,
  f: 0x0c,
  r: 0x0d,
  '"': 0x22,
  "\\": 0x5c,
};

/** Whether git (with core.quotepath=true) would quote this name. */
export function needsQuoting(bytes: Uint8Array): boolean {
  for (const b of bytes) if (b < 0x20 || b === 0x22 || b === 0x5c || b >= 0x7f) return true;
  return false;
}

/**
 * Quote a name the way git does (`"a/\303\251"`): control bytes, `"` and `\` escaped, bytes
 * >= 0x7f as octal. Names that need none come back unchanged.
 */
export function quotePath(bytes: Uint8Array): string {
  if (!needsQuoting(bytes)) return Buffer.from(bytes).toString("latin1");
  let out = '"';
  for (const b of bytes) {
    const esc = ESCAPE_CHARS[b];
    if (esc !== undefined) out += `\\${esc}`;
    else if (b < 0x20 || b >= 0x7f) out += `\\${b.toString(8).padStart(3, "0")}`;
    else out += String.fromCharCode(b);
  }
  return `${out}"`;
}

/**
 * Decode a C-quoted name starting at `text[start] === '"'`. Returns the exact bytes and the index
 * after the closing quote. `text` is a latin1/ASCII view, so each char is one byte.
 */
export function unquotePath(
  text: string,
  start: number,
  lineNo: number,
): { bytes: Buffer; end: number } {
  const out: number[] = [];
  let i = start + 1;
  while (i < text.length) {
    const c = text.charCodeAt(i);
    if (c === 0x22) return { bytes: Buffer.from(out), end: i + 1 };
    if (c !== 0x5c) {
      out.push(c & 0xff);
      i++;
      continue;
    }
    const n = text[i + 1];
    if (n === undefined) break;
    const simple = UNESCAPE[n];
    if (simple !== undefined) {
      out.push(simple);
      i += 2;
      continue;
    }
    const oct = text.slice(i + 1, i + 4);
    if (/^[0-3][0-7]{2}$/.test(oct)) {
      out.push(Number.parseInt(oct, 8));
      i += 4;
      continue;
    }
    throw new TimewarpError(
      ErrorCode.DIFF_PARSE_ERROR,
      `line ${lineNo}: bad escape "\\${n}" in quoted name, expected \\ooo or one of abtnvfr"\\`,
      { data: { line: lineNo } },
    );
  }
  throw new TimewarpError(
    ErrorCode.DIFF_PARSE_ERROR,
    `line ${lineNo}: quoted name has no closing quote`,
    { data: { line: lineNo } },
  );
}
