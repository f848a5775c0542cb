import { readFileSync, statSync } from "node:fs";
import { brotliCompressSync, brotliDecompressSync, constants, gunzipSync } from "node:zlib";
import { z } from "zod";
import { ErrorCode, formatZodIssues, gitBlobId, TimewarpError } from "../core/index.ts";
import { type NodeStore, nodeStoreFor } from "./manifest-nodes.ts";
import {
  assembleText,
  buildTree,
  isTreeRoot,
  type TreeRoot,
  treeHashOfText,
} from "./manifest-tree.ts";

const Oid = z.string().regex(/^[0-9a-f]{40}$/);

/**
 * One workspace path in a manifest. Files carry the blob id of their bytes; symlinks carry their
 * target inline (and its blob id, as git would); directories are listed too, so empty ones
 * survive. `mode` is the permission bits (`st_mode & 0o7777`). A name that is not valid UTF-8
 * carries its exact bytes in `path_b64` (and `path` shows it with U+FFFD).
 */
export const ManifestEntrySchema = z.object({
  path: z.string().min(1),
  path_b64: z.string().optional(),
  type: z.enum(["file", "symlink", "dir"]),
  mode: z.number().int().nonnegative(),
  size: z.number().int().nonnegative(),
  mtime_ms: z.number(),
  oid: Oid.optional(),
  /**
   * A file that is a hard link of another file of the same manifest: that file's path (the
   * group's first path in manifest order, which carries no `link` itself).
   */
  link: z.string().optional(),
  /** The exact bytes of `link` (base64) when that name is not valid UTF-8. */
  link_b64: z.string().optional(),
  target: z.string().optional(),
  target_b64: z.string().optional(),
});

export type ManifestEntry = z.infer<typeof ManifestEntrySchema>;

export const MANIFEST_SCHEMA_VERSION = 1;

export const ManifestSchema = z.object({
  schema_version: z.literal(MANIFEST_SCHEMA_VERSION),
  entries: z.array(ManifestEntrySchema),
});

/** The list of everything a snapshot holds, sorted by path. */
export type Manifest = z.infer<typeof ManifestSchema>;

/** Entries in canonical order (by key, code-unit order), so equal trees serialize identically. */
export function sortEntries(entries: ManifestEntry[]): ManifestEntry[] {
  return entries.sort((a, b) => {
    const ka = a.path_b64 ?? a.path;
    const kb = b.path_b64 ?? b.path;
    return ka < kb ? -1 : ka > kb ? 1 : 0;
  });
}

/** One manifest entry as its line of canonical JSON (fixed key order; only strings go through JSON.stringify). */
export function entryLine(e: ManifestEntry): string {
  let line = `{"path":${JSON.stringify(e.path)}`;
  if (e.path_b64 !== undefined) line += `,"path_b64":"${e.path_b64}"`;
  line += `,"type":"${e.type}","mode":${e.mode},"size":${e.size},"mtime_ms":${e.mtime_ms}`;
  if (e.oid !== undefined) line += `,"oid":"${e.oid}"`;
  if (e.link !== undefined) line += `,"link":${JSON.stringify(e.link)}`;
  if (e.link_b64 !== undefined) line += `,"link_b64":"${e.link_b64}"`;
  if (e.target !== undefined) line += `,"target":${JSON.stringify(e.target)}`;
  if (e.target_b64 !== undefined) line += `,"target_b64":"${e.target_b64}"`;
  return `${line}}`;
}

const textHead = (version: number) => `{"schema_version":${version},"entries":[\n`;
const TEXT_TAIL = "\n]}\n";

/**
 * The canonical JSON text of a manifest as UTF-8 bytes: fixed key order, one entry per line.
 * Measured first, then written into one buffer of exactly its size: at 100k entries the text
 * is ~20 MB, and building it in pieces and joining them held it twice at a snapshot's peak
 * (issue 22, item 5); one joined string plus its array of lines was worse still. Making each
 * line twice costs ~0.5 µs per entry.
 */
export function manifestBytes(manifest: Manifest): Buffer {
  const entries = manifest.entries;
  return manifestBytesOf(
    manifest.schema_version,
    entries.length,
    (i) => entries[i] as ManifestEntry,
  );
}

/**
 * `manifestBytes` of the manifest whose `count` entries, in order, `at` gives (each may be made
 * on the call and dropped: a scan keeps most files as columns, issue 22 item 5).
 */
export function manifestBytesOf(
  version: number,
  count: number,
  at: (i: number) => ManifestEntry,
): Buffer {
  const head = textHead(version);
  let total = Buffer.byteLength(head) + TEXT_TAIL.length;
  for (let i = 0; i < count; i++) {
    total += Buffer.byteLength(entryLine(at(i)), "utf8") + (i > 0 ? 2 : 0);
  }
  const out = Buffer.allocUnsafeSlow(total);
  let pos = out.write(head, 0, "latin1");
  for (let i = 0; i < count; i++) {
    if (i > 0) pos += out.write(",\n", pos, "latin1");
    pos += out.write(entryLine(at(i)), pos, "utf8");
  }
  pos += out.write(TEXT_TAIL, pos, "latin1");
  if (pos !== total) {
    throw new TimewarpError(ErrorCode.INTERNAL, `manifest text: wrote ${pos} of ${total} bytes`);
  }
  return out;
}

const LINE_HEAD = Buffer.from('{"path":"');
const TYPE_KEY = Buffer.from(',"type":"');
const B64_KEY = Buffer.from(',"path_b64":"');

/**
 * Texts already found canonical with plain UTF-8 names (or made so by `spliceManifestText`):
 * a return compares and splices the same few texts several times, and each check is a search
 * through all of its bytes. A text is never written to once made, so the answer holds.
 */
const plainTexts = new WeakSet<Buffer>();

/**
 * Where the entry lines of a canonical manifest text (`manifestBytes`) end (they start right
 * after the head; lines are separated by ",\n", and a raw newline is never inside one: JSON
 * escapes it in strings), or null when `text` has not the canonical head and tail, or names a
 * path that is not UTF-8 (those sort by their bytes, so a search by path would be wrong).
 */
function textBodyEnd(text: Buffer, head: Buffer, tail: Buffer): number | null {
  if (plainTexts.has(text)) return text.length - tail.length;
  const plain =
    text.length >= head.length + tail.length &&
    text.compare(head, 0, head.length, 0, head.length) === 0 &&
    text.compare(tail, 0, tail.length, text.length - tail.length) === 0 &&
    !text.includes(B64_KEY);
  if (!plain) return null;
  plainTexts.add(text);
  return text.length - tail.length;
}

/**
 * The canonical text of a manifest with a few entries changed, made from the text of the
 * manifest before (`manifestBytes`): `edits` maps a path to its new entry, or to null when it
 * is gone. Lines are found by binary search and the others copied in runs, so the cost is a
 * memory copy of the text, not a line per entry. The result is byte for byte what
 * `manifestBytes` gives for the edited manifest. Null when `text` is not such a text, or holds
 * or gets a name that is not UTF-8 (those sort by their bytes; the caller encodes anew).
 */
export function spliceManifestText(
  text: Buffer,
  edits: ReadonlyMap<string, ManifestEntry | null>,
): Buffer | null {
  const head = Buffer.from(textHead(MANIFEST_SCHEMA_VERSION));
  const tail = Buffer.from(TEXT_TAIL);
  const bodyEnd = textBodyEnd(text, head, tail);
  if (bodyEnd === null) return null;
  // The first line from the line start `from` on whose path is not below `path`: its start (the
  // body's end when none), and whether it is `path` itself. A binary search over the bytes,
  // each probe reading the line around its middle byte, so no line is looked at otherwise.
  const lowerBound = (path: string, from: number): { at: number; same: boolean } | null => {
    let lo = from;
    let hi = bodyEnd;
    let same = false; // whether the line at `hi` is `path`
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const start = mid === lo ? lo : Math.max(lo, text.lastIndexOf(0x0a, mid - 1) + 1);
      const line = lineAt(text, start, bodyEnd);
      const p = line === null ? null : pathOfLine(text, start, line.end);
      if (line === null || p === null) return null;
      if (p < path) {
        lo = line.next;
      } else {
        hi = start;
        same = p === path;
      }
    }
    return { at: lo, same };
  };
  const pieces: Buffer[] = [head];
  let first = true;
  const emit = (piece: Buffer) => {
    if (!first) pieces.push(SEPARATOR);
    pieces.push(piece);
    first = false;
  };
  let cursor = head.length; // the start of the first line not yet copied or replaced
  for (const path of [...edits.keys()].sort()) {
    const entry = edits.get(path);
    if (entry?.path_b64 !== undefined || entry?.target_b64 !== undefined) return null;
    const found = lowerBound(path, cursor);
    if (found === null) return null;
    const { at } = found;
    // the lines before it, up to the last one's end (before its separator)
    if (at > cursor) emit(text.subarray(cursor, at === bodyEnd ? bodyEnd : at - SEPARATOR.length));
    cursor = found.same ? (lineAt(text, at, bodyEnd)?.next ?? bodyEnd) : at;
    if (entry !== null && entry !== undefined) emit(Buffer.from(entryLine(entry), "utf8"));
  }
  if (cursor < bodyEnd) emit(text.subarray(cursor, bodyEnd));
  pieces.push(tail);
  const out = Buffer.concat(pieces);
  plainTexts.add(out); // plain lines in, plain lines out
  return out;
}

/** What differs between two manifests given as canonical texts (`diffManifestTexts`). */
export interface TextDifference {
  /** The entries of `a` whose line is not in `b` (changed, or only in `a`), in path order. */
  a: ManifestEntry[];
  /** The entries of `b` whose line is not in `a`, in path order. */
  b: ManifestEntry[];
  /** Lines the two texts share (the same entry, byte for byte). */
  same: number;
  /** The symlinks of `b`, all of them (a restore checks no entry lies below one). */
  bSymlinks: string[];
  /** The entries of `b` that are hard links of another (`link`), all of them. */
  bLinks: ManifestEntry[];
}

const SYMLINK_TYPE = Buffer.from('"type":"symlink"');

/**
 * Compare two canonical manifest texts line by line, decoding only the lines that differ: the
 * cost of comparing 10k entries is a pass over the bytes, not 20k objects. Null when either is
 * not a canonical text of plain UTF-8 names (decode them instead).
 */
export function diffManifestTexts(a: Buffer, b: Buffer): TextDifference | null {
  const head = Buffer.from(textHead(MANIFEST_SCHEMA_VERSION));
  const tail = Buffer.from(TEXT_TAIL);
  const endA = textBodyEnd(a, head, tail);
  const endB = textBodyEnd(b, head, tail);
  if (endA === null || endB === null) return null;
  const out: TextDifference = { a: [], b: [], same: 0, bSymlinks: [], bLinks: [] };
  // i and j are at the start of a line of a and of b (or at their ends). Runs of equal bytes
  // are skipped a block at a time; only the lines around a difference are looked at.
  let i = head.length;
  let j = head.length;
  while (i < endA && j < endB) {
    const run = equalRun(a, i, endA, b, j, endB);
    // Back to the start of the line holding the first differing byte: the same offset in both,
    // since the bytes before it are equal and the run began at a line start.
    const lineStart = run === 0 ? i : Math.max(i, a.lastIndexOf(0x0a, i + run - 1) + 1);
    j += lineStart - i;
    i = lineStart;
    if (i >= endA || j >= endB) break;
    const la = lineAt(a, i, endA);
    const lb = lineAt(b, j, endB);
    if (la === null || lb === null) return null;
    if (la.end - i === lb.end - j && a.compare(b, j, lb.end, i, la.end) === 0) {
      // the same entry; only a separator differed (one of them is its text's last line)
      i = la.next;
      j = lb.next;
      continue;
    }
    const pa = pathOfLine(a, i, la.end);
    const pb = pathOfLine(b, j, lb.end);
    if (pa === null || pb === null) return null;
    const nextA = pa <= pb ? takeLine(a, i, endA, out.a) : i;
    const nextB = pb <= pa ? takeLine(b, j, endB, out.b) : j;
    if (nextA === null || nextB === null) return null;
    i = nextA;
    j = nextB;
  }
  if (!takeRest(a, i, endA, out.a) || !takeRest(b, j, endB, out.b)) return null;
  out.same = countLines(b, head.length, endB) - out.b.length;
  for (let at = b.indexOf(SYMLINK_TYPE); at >= 0; at = b.indexOf(SYMLINK_TYPE, at + 1)) {
    const start = b.lastIndexOf(0x0a, at) + 1;
    const line = lineAt(b, Math.max(start, head.length), endB);
    const path = line === null ? null : pathOfLine(b, Math.max(start, head.length), line.end);
    if (path === null) return null;
    out.bSymlinks.push(path);
  }
  for (let at = b.indexOf(LINK_KEY); at >= 0; at = b.indexOf(LINK_KEY, at + 1)) {
    const start = Math.max(b.lastIndexOf(0x0a, at) + 1, head.length);
    const line = lineAt(b, start, endB);
    const e = line === null ? null : entryOfLine(b, start, line.end);
    if (e === null) return null;
    if (e.link !== undefined) out.bLinks.push(e);
  }
  return out;
}

const LINK_KEY = Buffer.from(',"link":"');

/**
 * How many bytes from `i` in `a` and `j` in `b` are equal (before either end): compared a
 * block at a time, doubling while they match, then narrowed by halves to the first difference.
 */
function equalRun(a: Buffer, i: number, endA: number, b: Buffer, j: number, endB: number): number {
  const max = Math.min(endA - i, endB - j);
  let done = 0;
  let window = 4096;
  while (done < max) {
    const n = Math.min(window, max - done);
    if (a.compare(b, j + done, j + done + n, i + done, i + done + n) === 0) {
      done += n;
      window *= 2;
      continue;
    }
    let lo = done;
    let hi = done + n; // a and b agree on [i, i + lo), differ somewhere in [lo, hi)
    while (hi - lo > 32) {
      const mid = (lo + hi) >>> 1;
      if (a.compare(b, j + lo, j + mid, i + lo, i + mid) === 0) lo = mid;
      else hi = mid;
    }
    while (lo < hi && a[i + lo] === b[j + lo]) lo++;
    return lo;
  }
  return max;
}

/**
 * The line starting at `start` of a text whose body ends at `bodyEnd`: its entry's end (before
 * the "," separator) and where the next line starts. Null when a line other than the last does
 * not end with ",".
 */
function lineAt(
  text: Buffer,
  start: number,
  bodyEnd: number,
): { end: number; next: number } | null {
  const nl = text.indexOf(0x0a, start);
  if (nl < 0 || nl >= bodyEnd) return { end: bodyEnd, next: bodyEnd };
  if (text[nl - 1] !== 0x2c) return null;
  return { end: nl - 1, next: nl + 1 };
}

/** The lines of a body (its line separators plus one), one native search per line. */
function countLines(text: Buffer, start: number, bodyEnd: number): number {
  if (bodyEnd <= start) return 0;
  let n = 1;
  for (let at = text.indexOf(0x0a, start); at >= 0 && at < bodyEnd; at = text.indexOf(0x0a, at + 1))
    n++;
  return n;
}

/** The entry on the line at `start`, into `into`; where the next line starts, or null. */
function takeLine(
  text: Buffer,
  start: number,
  bodyEnd: number,
  into: ManifestEntry[],
): number | null {
  const line = lineAt(text, start, bodyEnd);
  const e = line === null ? null : entryOfLine(text, start, line.end);
  if (line === null || e === null) return null;
  into.push(e);
  return line.next;
}

/** Every entry from the line at `start` to the body's end, into `into`; false when one is not. */
function takeRest(text: Buffer, start: number, bodyEnd: number, into: ManifestEntry[]): boolean {
  for (let at = start; at < bodyEnd; ) {
    const next = takeLine(text, at, bodyEnd, into);
    if (next === null) return false;
    at = next;
  }
  return true;
}

function pathOfLine(text: Buffer, start: number, end: number): string | null {
  if (text.compare(LINE_HEAD, 0, LINE_HEAD.length, start, start + LINE_HEAD.length) !== 0)
    return null;
  const close = text.indexOf(TYPE_KEY, start);
  if (close < 0 || close >= end) return null;
  return JSON.parse(text.toString("utf8", start + LINE_HEAD.length - 1, close)) as string;
}

function entryOfLine(text: Buffer, start: number, end: number): ManifestEntry | null {
  let e: unknown;
  try {
    e = JSON.parse(text.toString("utf8", start, end));
  } catch {
    return null;
  }
  return manifestProblem({ schema_version: MANIFEST_SCHEMA_VERSION, entries: [e] }) === null
    ? (e as ManifestEntry)
    : null;
}

const SEPARATOR = Buffer.from(",\n");

/**
 * The manifest's hash: the git blob id of the root of its tree (`manifest-tree.ts`), which names
 * exactly this list of paths, types, modes, sizes, mtimes and contents; two manifests with the
 * same hash are equal. (Records written before the tree hash the whole canonical text.)
 */
export function hashManifest(manifest: Manifest): string {
  return treeHashOfText(manifestBytes(manifest));
}

/**
 * A manifest's canonical text stored as a tree: its nodes written to `nodes`, and the record's
 * manifest file (the brotli'd root), with the tree's hash.
 */
export function encodeManifestTree(text: Buffer, nodes: NodeStore): TreeRoot & { bytes: Buffer } {
  const tree = buildTree(text, nodes);
  return { ...tree, bytes: compressManifest(tree.root) };
}

/** A manifest's canonical text as stored. */
export function compressManifest(text: Buffer): Buffer {
  // Brotli at quality 1: at 10k entries ~3.5 ms and 290 KB, where gzip's fastest level took
  // ~9 ms for 340 KB (and a snapshot's whole budget is a few tens of milliseconds).
  return brotliCompressSync(text, {
    params: {
      [constants.BROTLI_PARAM_QUALITY]: 1,
      [constants.BROTLI_PARAM_SIZE_HINT]: text.length,
    },
  });
}

/** The canonical text in stored manifest bytes (brotli, or gzip); throws when neither. */
export function decompressManifest(bytes: Buffer): Buffer {
  return bytes[0] === 0x1f && bytes[1] === 0x8b ? gunzipSync(bytes) : brotliDecompressSync(bytes);
}

/** The texts `readManifestTextFile` read or was given last, newest first, by file and hash. */
const lastTexts: { key: string; hash: string; text: Buffer }[] = [];
const KEPT_TEXTS = 2;

function keepText(entry: { key: string; hash: string; text: Buffer }): void {
  const at = lastTexts.findIndex((e) => e.key === entry.key);
  if (at >= 0) lastTexts.splice(at, 1);
  lastTexts.unshift(entry);
  lastTexts.length = Math.min(lastTexts.length, KEPT_TEXTS);
}

const fileKey = (st: { dev: number; ino: number; size: number; mtimeMs: number }) =>
  `${st.dev}:${st.ino}:${st.size}:${st.mtimeMs}`;

/**
 * The canonical text in the stored manifest file `file`, checked against `hash` (CORRUPT_FILE
 * when it does not match or does not decompress; the file system's error when it cannot be
 * read). The last two texts are kept, keyed by the file's device, inode, size and mtime: a
 * return reads the same file up to three times (its backup's manifest, which is also the base
 * of both of its scans); a session start reads the last snapshot's as the base of its scan,
 * writes the new one, then reads the last one again when its cleanup deleted it. Manifest files
 * are never rewritten in place.
 */
export function readManifestTextFile(file: string, hash: string): Buffer {
  const key = fileKey(statSync(file));
  const kept = lastTexts.find((e) => e.key === key && e.hash === hash);
  if (kept !== undefined) return kept.text;
  // Read first, decompress apart: zlib's errors carry a `code` too (Z_BUF_ERROR for a truncated
  // file), which must not pass for the file system's (issue 16: that was IO_ERROR).
  const text = decodeManifestText(readFileSync(file), file, hash);
  keepText({ key, hash, text });
  return text;
}

/**
 * The canonical text of stored manifest bytes (brotli; gzip in records written before 0.1),
 * checked against `hash` when given. CORRUPT_FILE naming `source` on any mismatch.
 */
function decodeManifestText(bytes: Buffer, source: string, hash: string | undefined): Buffer {
  const stored = decodeStoredManifest(bytes, source, hash);
  if (stored.root === undefined) return stored.text;
  const nodes = nodeStoreFor(source);
  if (nodes === null) {
    throw new TimewarpError(ErrorCode.CORRUPT_FILE, `${source}: a manifest tree outside a store`, {
      data: { file: source },
    });
  }
  return assembleText(stored.root, nodes, source);
}

/**
 * The canonical text of stored manifest bytes, unchecked (the caller made them): a tree's
 * nodes come from `nodes`.
 */
export function storedManifestText(bytes: Buffer, source: string, nodes: NodeStore): Buffer {
  const stored = decodeStoredManifest(bytes, source, undefined);
  return stored.root === undefined ? stored.text : assembleText(stored.root, nodes, source);
}

/**
 * Stored manifest bytes as they are: the root of a tree (`root`), or the whole canonical text
 * of a record written before trees (`text`), checked against `hash` when given (for a tree,
 * the root's hash: its nodes are checked as they are read).
 */
export function decodeStoredManifest(
  bytes: Buffer,
  source: string,
  hash: string | undefined,
): { root: Buffer; text?: undefined } | { text: Buffer; root?: undefined } {
  let text: Buffer;
  try {
    text = decompressManifest(bytes);
  } catch (error) {
    throw new TimewarpError(
      ErrorCode.CORRUPT_FILE,
      `${source}: not a compressed manifest (${error instanceof Error ? error.message : String(error)})`,
      { data: { file: source } },
    );
  }
  if (hash !== undefined) {
    const got = gitBlobId(text);
    if (got !== hash) {
      throw new TimewarpError(
        ErrorCode.CORRUPT_FILE,
        `${source}: manifest hash is ${got}, the record expects ${hash}`,
        { data: { file: source, expected: hash, got } },
      );
    }
  }
  return isTreeRoot(text) ? { root: text } : { text };
}

/**
 * Drop the kept texts (see `readManifestTextFile`): a long-lived process (the hook server's
 * worker) calls it after each request, since at 100k files each text is ~20 MB that would stay
 * resident between requests for a hit the next request rarely has.
 */
export function forgetManifestTexts(): void {
  lastTexts.length = 0;
}

/** Keep `text` as the text of the manifest file just written at `file` (see `readManifestTextFile`). */
export function rememberManifestText(file: string, hash: string, text: Buffer): void {
  try {
    keepText({ key: fileKey(statSync(file)), hash, text });
  } catch {
    // not kept: the next read decompresses it
  }
}

/**
 * Parse stored manifest bytes (brotli; gzip in records written before 0.1), checking the hash
 * the record promised. CORRUPT_FILE on any mismatch.
 */
export function decodeManifest(
  bytes: Buffer,
  options: { source: string; hash?: string },
): Manifest {
  const text = decodeManifestText(bytes, options.source, options.hash);
  return parseManifestText(text, options.source);
}

/** A manifest from its canonical text; CORRUPT_FILE naming `source` when it is not one. */
export function parseManifestText(text: Buffer, source: string): Manifest {
  const options = { source };
  let json: unknown;
  try {
    json = JSON.parse(text.toString("utf8"));
  } catch (error) {
    throw new TimewarpError(
      ErrorCode.CORRUPT_FILE,
      `${options.source}: not valid JSON (${error instanceof Error ? error.message : String(error)})`,
      { data: { file: options.source } },
    );
  }
  const problem = manifestProblem(json);
  if (problem !== null) {
    // The schema's own message names the field; it runs only on this (rare) failure path.
    const parsed = ManifestSchema.safeParse(json);
    throw new TimewarpError(
      ErrorCode.CORRUPT_FILE,
      `${options.source}: ${parsed.success ? problem : formatZodIssues(parsed.error.issues)}`,
      { data: { file: options.source } },
    );
  }
  return json as Manifest;
}

const OID_TEXT = /^[0-9a-f]{40}$/;
const isOptString = (v: unknown) => v === undefined || typeof v === "string";

/**
 * The check `ManifestSchema` makes, written out by hand: a manifest is read on every travel,
 * return and restore, and zod over 10k entries costs several milliseconds and a lot of garbage.
 * Unknown keys pass, as they do through the schema. Returns null when `json` is a valid
 * manifest, else what is wrong (manifest.test.ts holds the two checks to the same verdicts).
 */
export function manifestProblem(json: unknown): string | null {
  if (typeof json !== "object" || json === null) return "not an object";
  const doc = json as { schema_version?: unknown; entries?: unknown };
  if (doc.schema_version !== MANIFEST_SCHEMA_VERSION) return "schema_version";
  if (!Array.isArray(doc.entries)) return "entries";
  for (let i = 0; i < doc.entries.length; i++) {
    const e = doc.entries[i] as Record<string, unknown> | null;
    if (typeof e !== "object" || e === null || Array.isArray(e)) return `entries.${i}`;
    if (typeof e.path !== "string" || e.path.length === 0) return `entries.${i}.path`;
    if (e.type !== "file" && e.type !== "symlink" && e.type !== "dir") return `entries.${i}.type`;
    if (!Number.isInteger(e.mode) || (e.mode as number) < 0) return `entries.${i}.mode`;
    if (!Number.isInteger(e.size) || (e.size as number) < 0) return `entries.${i}.size`;
    if (typeof e.mtime_ms !== "number" || !Number.isFinite(e.mtime_ms))
      return `entries.${i}.mtime_ms`;
    if (e.oid !== undefined && (typeof e.oid !== "string" || !OID_TEXT.test(e.oid)))
      return `entries.${i}.oid`;
    if (
      !isOptString(e.path_b64) ||
      !isOptString(e.target) ||
      !isOptString(e.target_b64) ||
      !isOptString(e.link) ||
      !isOptString(e.link_b64)
    )
      return `entries.${i}`;
  }
  return null;
}
