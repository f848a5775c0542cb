/**
 * Views of a text for the redactor (pure): the same text decoded (JSON/JS string escapes,
 * percent-encoding, a few HTML entities, repeated for nested encodings) and with keys that wrap
 * onto the next line joined. Detectors run on each view; `toOriginal` maps what they find back
 * to the span of the original text, so a secret found inside `%3D`-encoded or `\"`-escaped
 * text is redacted with its escapes (issue 16, class 8).
 */

import { looksKeyLike } from "./redact-entropy.ts";

export type Range = [number, number];

export interface TextView {
  text: string;
  /** Original offset of each character, plus one entry for the end; null for the original. */
  map: Int32Array | null;
  /** Offsets in `text` where a line break was removed (joined views only). */
  joins: number[];
}

export function originalView(text: string): TextView {
  return { text, map: null, joins: [] };
}

/** The span of the original text that `range` (in view coordinates) came from. */
export function toOriginal(view: TextView, range: Range): Range {
  if (view.map === null) return range;
  return [view.map[range[0]] ?? 0, view.map[range[1]] ?? 0];
}

const JSON_ESCAPES: Record<string, string> = {
  '"': '"',
  "'": "'",
  "\\": "\\",
  "/": "/",
  n: "\n",
  r: "\r",
  t: "\t",
  b: "\b",
  f: "\f",
};
const ENTITIES: Record<string, string> = {
  "&amp;": "&",
  "&quot;": '"',
  "&#39;": "'",
  "&#x27;": "'",
  "&lt;": "<",
  "&gt;": ">",
  "&#x2F;": "/",
  "&#x2f;": "/",
  "&#47;": "/",
};

/**
 * Escapes: JSON/JS (`\"`, `\n`, `\u0041`, `\x41`), percent-encoded ASCII (a multi-byte UTF-8
 * sequence never spells a delimiter a detector looks for), and the HTML entities URLs carry.
 */
const ESCAPE =
  /\\(?:u[0-9a-fA-F]{4}|x[0-9a-fA-F]{2}|["'\\/nrtbf])|%[0-7][0-9a-fA-F]|&(?:amp|quot|#39|#x27|lt|gt|#x2[fF]|#47);/g;

function decodeEscape(e: string): string {
  if (e[0] === "%") return String.fromCharCode(Number.parseInt(e.slice(1), 16));
  if (e[0] === "&") return ENTITIES[e] ?? e;
  const kind = e[1] ?? "";
  if (kind === "u" || kind === "x") return String.fromCharCode(Number.parseInt(e.slice(2), 16));
  return JSON_ESCAPES[kind] ?? e;
}

/** One round of decoding: each escape becomes the character it stands for. */
function decodeOnce(text: string): { text: string; starts: Int32Array } | null {
  const escapes = [...text.matchAll(ESCAPE)];
  if (escapes.length === 0) return null;
  let removed = 0;
  for (const m of escapes) removed += m[0].length - 1;
  const starts = new Int32Array(text.length - removed + 1);
  const parts: string[] = [];
  let at = 0;
  let o = 0;
  for (const m of escapes) {
    for (let i = at; i < m.index; i++) starts[o++] = i;
    parts.push(text.slice(at, m.index), decodeEscape(m[0]));
    starts[o++] = m.index;
    at = m.index + m[0].length;
  }
  for (let i = at; i < text.length; i++) starts[o++] = i;
  parts.push(text.slice(at));
  starts[o] = text.length;
  return { text: parts.join(""), starts };
}

/**
 * The text with every escape decoded, up to four times (a password percent-encoded inside a
 * `next=` parameter that is itself encoded, JSON inside a JSON string). Null when the text has
 * nothing to decode.
 */
export function decodedView(text: string): TextView | null {
  if (!/[\\%&]/.test(text)) return null;
  let current = text;
  let map: Int32Array | null = null;
  for (let round = 0; round < 4; round++) {
    const next = decodeOnce(current);
    if (next === null) break;
    const outer: Int32Array | null = map;
    map = outer === null ? next.starts : next.starts.map((at) => outer[at] ?? text.length);
    current = next.text;
  }
  return map === null ? null : { text: current, map, joins: [] };
}

/** Characters of keys and passwords: a line break between two of them may be a wrap. */
const TOKEN_CHAR = /[A-Za-z0-9+/=_~!*.@%:-]/;

const RUN_AT = /[A-Za-z0-9+/=_~!*.@%:-]+/y;

/**
 * Does the line starting at `at` look like the rest of a wrapped key: its first run is all the
 * line holds (but closing punctuation), or is key material itself (letters and digits)? A line
 * that goes on with words or code (`this.tokens = …`) is a new line, not a wrap.
 */
function looksLikeWrappedRest(text: string, at: number): boolean {
  RUN_AT.lastIndex = at;
  const run = RUN_AT.exec(text)?.[0] ?? "";
  const lineEnd = text.indexOf("\n", at);
  const rest = text.slice(at + run.length, lineEnd === -1 ? text.length : lineEnd);
  if (/^["'`,;)\]}]*\s*$/.test(rest)) return true;
  return looksKeyLike(run);
}

/** A URL's userinfo cut by the line break: `scheme://user:pa` + `ss@host`. */
function wrapsUrlPassword(text: string, from: number, to: number): boolean {
  const lineStart = text.lastIndexOf("\n", from - 1) + 1;
  return (
    /:\/\/[^\s/@]*$/.test(text.slice(lineStart, from)) &&
    /^[^\s/@]*@[A-Za-z0-9[]/.test(text.slice(to, to + 300))
  );
}

/**
 * The view with a line break (and the next line's indentation, or a `>`/`#`/`//` quote prefix)
 * removed wherever a run of key characters ends one line and another starts the next: a key a
 * terminal or an editor wrapped. Null when no line wraps that way.
 */
export function joinedView(view: TextView): TextView | null {
  const { text } = view;
  const cuts: [number, number][] = [];
  for (const b of text.matchAll(/\r?\n[ \t]*(?:(?:>|#|\/\/|\*)[ \t]*)?/g)) {
    const from = b.index;
    const to = from + b[0].length;
    const before = text[from - 1];
    const after = text[to];
    if (before === undefined || after === undefined) continue;
    if (!TOKEN_CHAR.test(before) || !TOKEN_CHAR.test(after)) continue;
    if (text.endsWith("-----", from)) continue; // a PEM armor line ends there, no key wraps
    if (!looksLikeWrappedRest(text, to) && !wrapsUrlPassword(text, from, to)) continue;
    cuts.push([from, to]);
  }
  if (cuts.length === 0) return null;
  let removed = 0;
  for (const [from, to] of cuts) removed += to - from;
  const starts = new Int32Array(text.length - removed + 1);
  const parts: string[] = [];
  const joins: number[] = [];
  let at = 0;
  let o = 0;
  for (const [from, to] of cuts) {
    for (let i = at; i < from; i++) starts[o++] = i;
    parts.push(text.slice(at, from));
    joins.push(o);
    at = to;
  }
  for (let i = at; i < text.length; i++) starts[o++] = i;
  parts.push(text.slice(at));
  starts[o] = text.length;
  const outer = view.map;
  const map = outer === null ? starts : starts.map((i) => outer[i] ?? text.length);
  return { text: parts.join(""), map, joins };
}
