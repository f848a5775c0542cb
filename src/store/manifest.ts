import { brotliCompressSync, brotliDecompressSync, constants, gunzipSync } from "node:zlib";
import { z } from "zod";
import { ErrorCode, formatZodIssues, gitBlobId, TimewarpError } from "../core/index.ts";

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
function entryLine(e: ManifestEntry): string {
  let line = `{"path":${JSON.stringify(e.path)}`;
  if (e.path_b64 !== undefined) line += `,"path_b64":"${e.path_b64}"`;
  line += `,"type":"${e.type}","mode":${e.mode},"size":${e.size},"mtime_ms":${e.mtime_ms}`;
  if (e.oid !== undefined) line += `,"oid":"${e.oid}"`;
  if (e.target !== undefined) line += `,"target":${JSON.stringify(e.target)}`;
  if (e.target_b64 !== undefined) line += `,"target_b64":"${e.target_b64}"`;
  return `${line}}`;
}

/**
 * The canonical JSON text of a manifest as UTF-8 bytes: fixed key order, one entry per line.
 * Built by hand and in 64 KiB pieces: this runs on every snapshot, and at 100k entries one
 * joined string plus its array of lines was ~30 MB of garbage that pushed the peak RSS up.
 */
export function manifestBytes(manifest: Manifest): Buffer {
  const pieces: Buffer[] = [];
  let total = 0;
  let text = `{"schema_version":${manifest.schema_version},"entries":[\n`;
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
  const last = Buffer.from(`${text}\n]}\n`, "utf8");
  pieces.push(last);
  return Buffer.concat(pieces, total + last.length);
}

/**
 * The manifest's hash: the git blob id of its canonical text. It names exactly this list of
 * paths, types, modes, sizes, mtimes and contents; two manifests with the same hash are equal.
 */
export function hashManifest(manifest: Manifest): string {
  return gitBlobId(manifestBytes(manifest));
}

/** Manifests are stored gzip-compressed: ~4x smaller, which keeps 100 snapshots of a big tree cheap. */
export function encodeManifest(manifest: Manifest): { bytes: Buffer; hash: string } {
  const text = manifestBytes(manifest);
  // Brotli at quality 1: at 10k entries ~3.5 ms and 290 KB, where gzip's fastest level took
  // ~9 ms for 340 KB (and a snapshot's whole budget is a few tens of milliseconds).
  const bytes = brotliCompressSync(text, {
    params: {
      [constants.BROTLI_PARAM_QUALITY]: 1,
      [constants.BROTLI_PARAM_SIZE_HINT]: text.length,
    },
  });
  return { bytes, hash: gitBlobId(text) };
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
    text = bytes[0] === 0x1f && bytes[1] === 0x8b ? gunzipSync(bytes) : brotliDecompressSync(bytes);
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
