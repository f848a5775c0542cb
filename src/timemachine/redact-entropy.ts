/**
 * The redactor's net for keys no rule names (pure): long runs of key characters that look
 * random — high Shannon entropy for their length, several character classes, and few
 * pronounceable words (identifiers like `walkTSTypeParameterInstantiation` are long and varied
 * too, but made of words). An allowlist keeps what transcripts are full of and is not secret:
 * git object ids, uuids, timewarp ids, integrity hashes, data URIs, URL paths, base64 of text.
 */
import type { Range } from "./redact-view.ts";

/** Shortest run the entropy detector judges; shorter keys need a name or a prefix. */
const MIN_RANDOM_LENGTH = 20;
/** Longer runs are data (inline images, wasm), not credentials (PEM has its own rule). */
const MAX_RANDOM_LENGTH = 512;

function shannonEntropy(s: string): number {
  const counts = new Map<string, number>();
  for (const c of s) counts.set(c, (counts.get(c) ?? 0) + 1);
  let h = 0;
  for (const n of counts.values()) {
    const p = n / s.length;
    h -= p * Math.log2(p);
  }
  return h;
}

const HEX = /^(?:[0-9a-f]+|[0-9A-F]+)$/;

/** Letters that sit in pronounceable words (vowels in a natural share), e.g. `Schema`, `WALK`. */
function wordyShare(t: string, minWord = 4): number {
  let wordy = 0;
  for (const m of t.matchAll(/[A-Z]?[a-z]{2,}|[A-Z]{3,}(?![a-z])/g)) {
    const w = m[0];
    if (w.length < minWord) continue;
    const vowels = (w.match(/[aeiouyAEIOUY]/g) ?? []).length / w.length;
    const pronounceable = !/[^aeiouyAEIOUY]{5}/.test(w);
    if (vowels >= 0.2 && vowels <= 0.75) wordy += w.length;
    else if (w.length >= 5 && vowels >= 0.12 && pronounceable) wordy += w.length; // Script, Stretch
  }
  return wordy / t.length;
}

/** Key material rather than a word or code: 8+ characters, two classes, few words. */
export function looksKeyLike(run: string): boolean {
  if (run.length < 8) return false;
  const classes =
    (/[A-Z]/.test(run) ? 1 : 0) +
    (/[a-z]/.test(run) ? 1 : 0) +
    (/\d/.test(run) ? 1 : 0) +
    (/[^A-Za-z0-9]/.test(run) ? 1 : 0);
  if (classes < 2 || /[a-z]\.[a-z]/i.test(run)) return false;
  return classes >= 3 || wordyShare(run) < 0.5;
}

/**
 * True when `token` looks like a random key rather than a word, an identifier, a number or a
 * path. Hex must be 32+ characters with digits and letters mixed as random hex has them.
 */
export function looksRandom(token: string, minLength = MIN_RANDOM_LENGTH, maxWordy = 0.5): boolean {
  const t = token.replace(/=+$/, "");
  const length = t.length;
  if (length < minLength) return false;
  let upper = 0;
  let lower = 0;
  let digits = 0;
  for (const c of t) {
    if (c >= "A" && c <= "Z") upper++;
    else if (c >= "a" && c <= "z") lower++;
    else if (c >= "0" && c <= "9") digits++;
  }
  const h = shannonEntropy(t);
  if (HEX.test(t)) {
    return length >= 32 && h >= 3.3 && digits >= length * 0.15 && digits <= length * 0.9;
  }
  if (digits === length) return false;
  const classes = (upper > 0 ? 1 : 0) + (lower > 0 ? 1 : 0) + (digits > 0 ? 1 : 0);
  if (classes < 2) return false;
  if (h < Math.min(Math.log2(length), 6) * 0.8) return false;
  // Identifiers rarely hold digits and are made of words, short ones too (`mustBeArrayOf…`);
  // random keys of 20+ characters nearly always hold digits and are full of `Zev`, `Hqx`.
  if (digits === 0) return wordyShare(t, 3) < maxWordy - 0.1;
  return wordyShare(t, 4) < maxWordy;
}

/** Base64 that decodes to readable text (docs show `TWFueSBoYW5kcw==`): not a key. */
function isBase64OfText(t: string): boolean {
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(t) || t.length % 4 === 1) return false;
  const bytes = Buffer.from(t, "base64");
  if (bytes.length < 12) return false;
  let printable = 0;
  let spaces = 0;
  for (const b of bytes) {
    if (b === 0x20 || b === 0x0a) spaces++;
    if ((b >= 0x20 && b < 0x7f) || b === 0x0a || b === 0x09) printable++;
  }
  return printable / bytes.length >= 0.97 && spaces > 0;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** Snapshot, issue, backup and job ids (`s_20260228_153012_ab12cd`, `20260228_153012_42_ab12`). */
const TIMEWARP_ID = /^(?:[a-z]_)?\d{8}_\d{6}_(?:\d+_)?[0-9a-z]{4,6}$/;
/** Words on a line that make a 40- or 64-hex run a git object id or a digest. */
const HASH_CONTEXT =
  /\b(?:index|commit|tree|parent|blob|oid|sha(?:1|256)?|hash|digest|checksum|integrity|revision|rev|HEAD|merge|object|snapshot|manifest)\b/i;

function lineAround(text: string, from: number, to: number): string {
  const start = text.lastIndexOf("\n", from - 1) + 1;
  const end = text.indexOf("\n", to);
  return text.slice(start, end === -1 ? text.length : end);
}

/** True when the run at [from, to) is a host or path segment of a URL (not its query). */
function inUrlPath(text: string, from: number): boolean {
  let i = from - 1;
  while (i >= 0 && !/[\s"'`<>()[\]{}]/.test(text[i] ?? " ")) {
    const c = text[i];
    if (c === "?" || c === "=" || c === "&" || c === "#") return false;
    if (c === "/" && text[i - 1] === "/" && text[i - 2] === ":") return true;
    i--;
  }
  // a path without a scheme: `github.com/org/repo`, `/usr/lib/x`, `./src/a`
  const word = text.slice(i + 1, from);
  return /(?:^|[^A-Za-z0-9])[a-z0-9-]+\.[a-z]{2,}\/|^\.{0,2}\//.test(word);
}

function isAllowed(text: string, from: number, to: number): boolean {
  const token = text.slice(from, to);
  const bare = token.replace(/=+$/, "");
  if (bare.length > MAX_RANDOM_LENGTH) return true;
  if (UUID.test(bare) || TIMEWARP_ID.test(bare)) return true;
  if (/^sha(?:1|224|256|384|512)-/.test(bare)) return true; // npm integrity
  if (/base64,$/.test(text.slice(Math.max(0, from - 7), from))) return true; // data: URI
  if (/^[0-9a-f]{40}$|^[0-9a-f]{64}$/.test(bare) && HASH_CONTEXT.test(lineAround(text, from, to)))
    return true;
  if (inUrlPath(text, from)) return true;
  if (/^\.(?:c|m)?(?:js|ts|map|json|md|css|html|d\.ts)\b/.test(text.slice(to, to + 8))) return true; // a file
  return isBase64OfText(token);
}

/** Runs of key characters (base64, base64url, hex, with `/`, `+`, `-`, `_` and padding). */
const RUN = /[A-Za-z0-9+/_-]{20,}={0,2}/g;

/** Every random-looking run in `text` that the allowlist does not excuse. */
export function entropyRanges(text: string): Range[] {
  const out: Range[] = [];
  for (const m of text.matchAll(RUN)) {
    let from = m.index;
    let token = m[0];
    // a leading or trailing path separator is punctuation, not part of the key
    while (token.startsWith("/")) {
      token = token.slice(1);
      from += 1;
    }
    token = token.replace(/\/+$/, "");
    const to = from + token.length;
    // a run cut by `%2B`: the decoded view judges the whole
    if (text[from - 1] === "%" || text[to] === "%") continue;
    // an assigned value (`X=…`, `x: "…"`) is more likely a key than a word-like run in prose
    const assigned = /[=:]\s*["'`]?$/.test(text.slice(Math.max(0, from - 4), from));
    if (!looksRandom(token, MIN_RANDOM_LENGTH, assigned ? 0.7 : 0.5)) continue;
    if (isAllowed(text, from, to)) continue;
    out.push([from, to]);
  }
  return out;
}
