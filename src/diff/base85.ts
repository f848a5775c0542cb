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

/** Decode one base85 line (length char included) and append its bytes to `out`. */
export function decodeBase85Line(line: string, out: number[], lineNo: number): void {
  const fail = (why: string): never => {
    throw new TimewarpError(
      ErrorCode.DIFF_PARSE_ERROR,
      `line ${lineNo}: bad binary patch data: ${why}`,
      {
        data: { line: lineNo },
      },
    );
  };
  const lc = line.charCodeAt(0);
  let n: number;
  if (lc >= 0x41 && lc <= 0x5a) n = lc - 0x41 + 1;
  else if (lc >= 0x61 && lc <= 0x7a) n = lc - 0x61 + 27;
  else n = fail(`length character ${JSON.stringify(line[0] ?? "")} is not A-Z or a-z`);
  const expectedChars = Math.ceil(n / 4) * 5;
  if (line.length - 1 !== expectedChars) {
    fail(`expected ${expectedChars} characters for ${n} bytes, got ${line.length - 1}`);
  }
  for (let i = 0; i < expectedChars; i += 5) {
    let acc = 0;
    for (let k = 0; k < 5; k++) {
      const v = DECODE[line.charCodeAt(1 + i + k) & 0xff] ?? -1;
      if (v < 0 || line.charCodeAt(1 + i + k) > 0xff)
        fail(`invalid character at column ${2 + i + k}`);
      acc = acc * 85 + v;
    }
    if (acc > 0xffffffff) fail("group overflows 32 bits");
    const bytes = [(acc >>> 24) & 0xff, (acc >>> 16) & 0xff, (acc >>> 8) & 0xff, acc & 0xff];
    const take = Math.min(4, n - (i / 5) * 4);
    for (let k = 0; k < take; k++) out.push(bytes[k] ?? 0);
  }
}
