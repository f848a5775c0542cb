/**
 * Views of a text for the redactor (pure): the same text decoded (JSON/JS string escapes,
 * percent-encoding, a few HTML entities, repeated for nested encodings) and with keys that wrap
 * onto the next line joined. Detectors run on each view; `toOriginal` maps what they find back
 * to the span of the original text, so a secret found inside `%3D`-encoded or `\"`-escaped
 * text is redacted with its escapes (issue 16, class 8).
 */

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

function hexValue(s: string): number {
  return /^[0-9a-fA-F]+$/.test(s) ? Number.parseInt(s, 16) : -1;
}

/** One round of decoding: each escape becomes the character it stands for. */
function decodeOnce(text: string): { text: string; spans: Int32Array } | null {
  let out = "";
  const starts: number[] = [];
  let changed = false;
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    let decoded: string | undefined;
    let width = 1;
    if (c === "\\" && i + 1 < text.length) {
      const next = text[i + 1] ?? "";
      if (next === "u") {
        const code = hexValue(text.slice(i + 2, i + 6));
        if (code >= 0 && text.length >= i + 6) {
          decoded = String.fromCharCode(code);
          width = 6;
        }
      } else if (next === "x") {
        const code = hexValue(text.slice(i + 2, i + 4));
        if (code >= 0 && text.length >= i + 4) {
          decoded = String.fromCharCode(code);
          width = 4;
        }
      } else if (JSON_ESCAPES[next] !== undefined) {
        decoded = JSON_ESCAPES[next];
        width = 2;
      }
    } else if (c === "%") {
      // ASCII only: a multi-byte UTF-8 sequence never spells a delimiter a detector looks for
      const code = hexValue(text.slice(i + 1, i + 3));
      if (code >= 0 && code < 0x80 && text.length >= i + 3) {
        decoded = String.fromCharCode(code);
        width = 3;
      }
    } else if (c === "&") {
      const semi = text.indexOf(";", i);
      if (semi > i && semi - i <= 6) {
        const entity = text.slice(i, semi + 1);
        if (ENTITIES[entity] !== undefined) {
          decoded = ENTITIES[entity];
          width = entity.length;
        }
      }
    }
    if (decoded === undefined) {
      out += c;
      starts.push(i);
      i += 1;
    } else {
      out += decoded;
      starts.push(i);
      i += width;
      changed = true;
    }
  }
  if (!changed) return null;
  starts.push(text.length);
  return { text: out, spans: Int32Array.from(starts) };
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
    const spans: Int32Array = next.spans;
    const composed: Int32Array =
      map === null ? spans : spans.map((at) => (map as Int32Array)[at] ?? text.length);
    map = composed;
    current = next.text;
  }
  return map === null ? null : { text: current, map, joins: [] };
}

const TOKEN_CHAR = /[A-Za-z0-9+/=_-]/;

/**
 * The view with a line break (and the next line's indentation, or a `>`/`#`/`//` quote prefix)
 * removed wherever a run of key characters ends one line and another starts the next: a key a
 * terminal or an editor wrapped. Null when no line wraps that way.
 */
export function joinedView(view: TextView): TextView | null {
  const { text } = view;
  const breaks = [...text.matchAll(/\r?\n[ \t]*(?:(?:>|#|\/\/)[ \t]*)?/g)];
  let out = "";
  const starts: number[] = [];
  const joins: number[] = [];
  let at = 0;
  for (const b of breaks) {
    const from = b.index;
    const to = from + b[0].length;
    const before = text[from - 1];
    const after = text[to];
    if (before === undefined || after === undefined) continue;
    if (!TOKEN_CHAR.test(before) || !TOKEN_CHAR.test(after)) continue;
    for (let i = at; i < from; i++) starts.push(i);
    out += text.slice(at, from);
    joins.push(out.length);
    at = to;
  }
  if (joins.length === 0) return null;
  for (let i = at; i < text.length; i++) starts.push(i);
  out += text.slice(at);
  starts.push(text.length);
  const local = Int32Array.from(starts);
  const map =
    view.map === null ? local : local.map((i) => (view.map as Int32Array)[i] ?? text.length);
  return { text: out, map, joins };
}
