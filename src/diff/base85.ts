import { ErrorCode, TimewarpError } from "../core/index.ts";

const ALPHABET =
  "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~";
const DECODE = new Int16Array(256).fill(-1);
for (let i = 0; i < ALPHABET.length; i++) DECODE[ALPHABET.charCodeAt(i)] = i;

const ALPHABET_CODES = Buffer.from(ALPHABET, "latin1");

/**
 * git's base85 lines for a `GIT binary patch` block: a length char, then 5 chars per 4 bytes.
 * Written as bytes and decoded once: a literal of megabytes is millions of chars.
 */
export function encodeBase85Lines(data: Uint8Array): string {
  const lines = Math.ceil(data.length / 52);
  const out = Buffer.allocUnsafe(lines * 2 + Math.ceil(data.length / 4) * 5 + lines * 5);
  let o = 0;
  for (let pos = 0; pos < data.length; pos += 52) {
    const n = Math.min(52, data.length - pos);
    out[o++] = n <= 26 ? 0x41 + n - 1 : 0x61 + n - 27;
    for (let i = 0; i < n; i += 4) {
      let acc = 0;
      for (let k = 0; k < 4; k++) acc = acc * 256 + (i + k < n ? (data[pos + i + k] as number) : 0);
      for (let k = 4; k >= 0; k--) {
        out[o + k] = ALPHABET_CODES[acc % 85] as number;
        acc = Math.floor(acc / 85);
      }
      o += 5;
    }
    out[o++] = 0x0a;
  }
  return out.toString("latin1", 0, o);
}

function badData(lineNo: number, why: string): TimewarpError {
  return new TimewarpError(
    ErrorCode.DIFF_PARSE_ERROR,
    `line ${lineNo}: bad binary patch data: ${why}`,
    { data: { line: lineNo } },
  );
}

/** The byte count a line's length char says (A-Z 1-26, a-z 27-52), or 0 for another char. */
function lineBytes(code: number): number {
  if (code >= 0x41 && code <= 0x5a) return code - 0x41 + 1;
  if (code >= 0x61 && code <= 0x7a) return code - 0x61 + 27;
  return 0;
}

/**
 * The bytes of the base85 lines `lines[from..to)` of a `GIT binary patch` block, decoded into
 * one buffer sized up front (a literal of megabytes has a hundred thousand lines). `lineNo` is
 * the 1-based number of `lines[from]`, for DIFF_PARSE_ERROR messages.
 */
export function decodeBase85Lines(
  lines: readonly string[],
  range: { from: number; to: number; lineNo: number },
): Uint8Array {
  let total = 0;
  for (let j = range.from; j < range.to; j++) total += lineBytes((lines[j] ?? "").charCodeAt(0));
  const out = new Uint8Array(total);
  let o = 0;
  for (let j = range.from; j < range.to; j++) {
    o = decodeBase85Line(lines[j] ?? "", out, o, range.lineNo + j - range.from);
  }
  return out;
}

/** Decode one base85 line (length char included) into `out` at `at`; returns the end. */
function decodeBase85Line(line: string, out: Uint8Array, at: number, lineNo: number): number {
  const n = lineBytes(line.charCodeAt(0));
  if (n === 0) {
    throw badData(lineNo, `length character ${JSON.stringify(line[0] ?? "")} is not A-Z or a-z`);
  }
  const expectedChars = Math.ceil(n / 4) * 5;
  if (line.length - 1 !== expectedChars) {
    throw badData(
      lineNo,
      `expected ${expectedChars} characters for ${n} bytes, got ${line.length - 1}`,
    );
  }
  let o = at;
  for (let i = 0; i < expectedChars; i += 5) {
    let acc = 0;
    for (let k = 0; k < 5; k++) {
      const c = line.charCodeAt(1 + i + k);
      const v = c > 0xff ? -1 : (DECODE[c] as number);
      if (v < 0) throw badData(lineNo, `invalid character at column ${2 + i + k}`);
      acc = acc * 85 + v;
    }
    if (acc > 0xffffffff) throw badData(lineNo, "group overflows 32 bits");
    const take = Math.min(4, n - (i / 5) * 4);
    for (let k = 0; k < take; k++) out[o++] = (acc >>> (24 - 8 * k)) & 0xff;
  }
  return o;
}
