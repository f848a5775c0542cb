import { readFileSync, statSync } from "node:fs";
import { brotliCompressSync, brotliDecompressSync, constants, gunzipSync } from "node:zlib";
import { z } from "zod";
import { ErrorCode, errnoCode, formatZodIssues, gitBlobId, TimewarpError } from "../core/index.ts";

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
  if (e.target !== undefined) line += `,"target":${JSON.stringify(e.target)}`;
  if (e.target_b64 !== undefined) line += `,"target_b64":"${e.target_b64}"`;
  return `${line}}`;
}

const textHead = (version: number) => `{"schema_version":${version},"entries":[\n`;
const TEXT_TAIL = "\n]}\n";

/**
 * The canonical JSON text of a manifest as UTF-8 bytes: fixed key order, one entry per line.
 * Built by hand and in 64 KiB pieces: this runs on every snapshot, and at 100k entries one
 * joined string plus its array of lines was ~30 MB of garbage that pushed the peak RSS up.
 */
export function manifestBytes(manifest: Manifest): Buffer {
  const pieces: Buffer[] = [];
  let total = 0;
  let text = textHead(manifest.schema_version);
  let first = true;
  for (const e of manifest.entries) {
    text += first ? entryLine(e) : `,\n${entryLine(e)}`;
    first = false;
    if (text.length >= 65_536) {
      const piece = Buffer.from(text, "utf8");
      pieces.push(piece);
      total += piece.length;
      text = "";
    }
  }
  const last = Buffer.from(`${text}${TEXT_TAIL}`, "utf8");
  pieces.push(last);
  return Buffer.concat(pieces, total + last.length);
}

const LINE_HEAD = Buffer.from('{"path":"');
const TYPE_KEY = Buffer.from(',"type":"');
const B64_KEY = Buffer.from(',"path_b64":"');

/**
 * The entry lines of a canonical manifest text (`manifestBytes`): line `i` is
 * `text[starts[i], ends[i])`, lines are separated by ",\n" (a raw newline is never inside
 * one: JSON escapes it in strings). Null when `text` is not such a text, or names a path that
 * is not UTF-8 (those sort by their bytes, so a search by path would be wrong).
 */
interface TextLines {
  text: Buffer;
  head: Buffer;
  tail: Buffer;
  starts: number[];
  ends: number[];
}

function textLines(text: Buffer): TextLines | null {
  const head = Buffer.from(textHead(MANIFEST_SCHEMA_VERSION));
  const tail = Buffer.from(TEXT_TAIL);
  if (
    text.length < head.length + tail.length ||
    text.compare(head, 0, head.length, 0, head.length) !== 0 ||
    text.compare(tail, 0, tail.length, text.length - tail.length) !== 0 ||
    text.includes(B64_KEY)
  ) {
    return null;
  }
  const bodyEnd = text.length - tail.length;
  const starts: number[] = [];
  const ends: number[] = [];
  for (let pos = head.length; pos < bodyEnd; ) {
    let nl = text.indexOf(0x0a, pos);
    if (nl < 0 || nl > bodyEnd) nl = bodyEnd;
    const end = nl < bodyEnd ? nl - 1 : nl;
    if (nl < bodyEnd && text[end] !== 0x2c) return null;
    starts.push(pos);
    ends.push(end);
    pos = nl + 1;
  }
  return { text, head, tail, starts, ends };
}

/** The path of line `i` (its JSON string, up to the `type` key that always follows). */
function linePath(lines: TextLines, i: number): string | null {
  const { text } = lines;
  const s = lines.starts[i] as number;
  if (text.compare(LINE_HEAD, 0, LINE_HEAD.length, s, s + LINE_HEAD.length) !== 0) return null;
  const close = text.indexOf(TYPE_KEY, s);
  if (close < 0 || close >= (lines.ends[i] as number)) return null;
  return JSON.parse(text.toString("utf8", s + LINE_HEAD.length - 1, close)) as string;
}

/** The entry on line `i`, checked as a manifest entry; null when it is not one. */
function lineEntry(lines: TextLines, i: number): ManifestEntry | null {
  let e: unknown;
  try {
    e = JSON.parse(lines.text.toString("utf8", lines.starts[i], lines.ends[i]));
  } catch {
    return null;
  }
  return manifestProblem({ schema_version: MANIFEST_SCHEMA_VERSION, entries: [e] }) === null
    ? (e as ManifestEntry)
    : null;
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
  const lines = textLines(text);
  if (lines === null) return null;
  const { starts, ends } = lines;
  const lowerBound = (path: string): number | null => {
    let lo = 0;
    let hi = starts.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const p = linePath(lines, mid);
      if (p === null) return null;
      if (p < path) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
  const paths = [...edits.keys()].sort();
  const pieces: Buffer[] = [lines.head];
  let first = true;
  const emit = (piece: Buffer) => {
    if (!first) pieces.push(SEPARATOR);
    pieces.push(piece);
    first = false;
  };
  let cursor = 0;
  for (const path of paths) {
    const entry = edits.get(path);
    if (entry?.path_b64 !== undefined || entry?.target_b64 !== undefined) return null;
    const at = lowerBound(path);
    if (at === null) return null;
    if (at > cursor) emit(text.subarray(starts[cursor], ends[at - 1]));
    cursor = at;
    if (at < starts.length && linePath(lines, at) === path) cursor = at + 1;
    if (entry !== null && entry !== undefined) emit(Buffer.from(entryLine(entry), "utf8"));
  }
  if (cursor < starts.length) emit(text.subarray(starts[cursor], ends[starts.length - 1]));
  pieces.push(lines.tail);
  return Buffer.concat(pieces);
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
}

const SYMLINK_TYPE = Buffer.from('"type":"symlink"');

/**
 * Compare two canonical manifest texts line by line, decoding only the lines that differ: the
 * cost of comparing 10k entries is a pass over the bytes, not 20k objects. Null when either is
 * not a canonical text of plain UTF-8 names (decode them instead).
 */
export function diffManifestTexts(a: Buffer, b: Buffer): TextDifference | null {
  const la = textLines(a);
  const lb = textLines(b);
  if (la === null || lb === null) return null;
  const out: TextDifference = { a: [], b: [], same: 0, bSymlinks: [] };
  const na = la.starts.length;
  const nb = lb.starts.length;
  let i = 0;
  let j = 0;
  const take = (lines: TextLines, k: number, into: ManifestEntry[]): boolean => {
    const e = lineEntry(lines, k);
    if (e === null) return false;
    into.push(e);
    return true;
  };
  while (i < na || j < nb) {
    if (i < na && j < nb) {
      const sa = la.starts[i] as number;
      const ea = la.ends[i] as number;
      const sb = lb.starts[j] as number;
      const eb = lb.ends[j] as number;
      if (ea - sa === eb - sb && a.compare(b, sb, eb, sa, ea) === 0) {
        out.same++;
        i++;
        j++;
        continue;
      }
      const pa = linePath(la, i);
      const pb = linePath(lb, j);
      if (pa === null || pb === null) return null;
      if (pa <= pb && !take(la, i++, out.a)) return null;
      if (pb <= pa && !take(lb, j++, out.b)) return null;
    } else if (i < na) {
      if (!take(la, i++, out.a)) return null;
    } else if (!take(lb, j++, out.b)) return null;
  }
  for (let at = b.indexOf(SYMLINK_TYPE); at >= 0; at = b.indexOf(SYMLINK_TYPE, at + 1)) {
    const k = lineAt(lb, at);
    const path = k < 0 ? null : linePath(lb, k);
    if (path === null) return null;
    out.bSymlinks.push(path);
  }
  return out;
}

/** The line holding byte `at` (binary search over the starts); -1 when none. */
function lineAt(lines: TextLines, at: number): number {
  let lo = 0;
  let hi = lines.starts.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    if ((lines.starts[mid] as number) > at) hi = mid - 1;
    else if ((lines.ends[mid] as number) <= at) lo = mid + 1;
    else return mid;
  }
  return -1;
}

const SEPARATOR = Buffer.from(",\n");

/**
 * The manifest's hash: the git blob id of its canonical text. It names exactly this list of
 * paths, types, modes, sizes, mtimes and contents; two manifests with the same hash are equal.
 */
export function hashManifest(manifest: Manifest): string {
  return gitBlobId(manifestBytes(manifest));
}

/** A manifest as stored (brotli-compressed: ~5x smaller, which keeps 100 snapshots of a big tree cheap), and its hash. */
export function encodeManifest(manifest: Manifest): { bytes: Buffer; hash: string } {
  const text = manifestBytes(manifest);
  return { bytes: compressManifest(text), hash: gitBlobId(text) };
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
  let text: Buffer;
  try {
    text = decompressManifest(readFileSync(file));
  } catch (error) {
    if (errnoCode(error) !== undefined) throw error;
    throw new TimewarpError(
      ErrorCode.CORRUPT_FILE,
      `${file}: not a compressed manifest (${error instanceof Error ? error.message : String(error)})`,
      { data: { file } },
    );
  }
  const got = gitBlobId(text);
  if (got !== hash) {
    throw new TimewarpError(
      ErrorCode.CORRUPT_FILE,
      `${file}: manifest hash is ${got}, the record expects ${hash}`,
      { data: { file, expected: hash, got } },
    );
  }
  keepText({ key, hash, text });
  return text;
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
  let text: Buffer;
  try {
    text = decompressManifest(bytes);
  } catch (error) {
    throw new TimewarpError(
      ErrorCode.CORRUPT_FILE,
      `${options.source}: not a compressed manifest (${error instanceof Error ? error.message : String(error)})`,
      { data: { file: options.source } },
    );
  }
  if (options.hash !== undefined) {
    const got = gitBlobId(text);
    if (got !== options.hash) {
      throw new TimewarpError(
        ErrorCode.CORRUPT_FILE,
        `${options.source}: manifest hash is ${got}, the record expects ${options.hash}`,
        { data: { file: options.source, expected: options.hash, got } },
      );
    }
  }
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
    if (!isOptString(e.path_b64) || !isOptString(e.target) || !isOptString(e.target_b64))
      return `entries.${i}`;
  }
  return null;
}
