import { createHash } from "node:crypto";
import type { IndexData } from "./history-index.ts";
import { OPERATION_ID_LEN } from "./operation-id.ts";

/**
 * A derived, columnar copy of a prefix of `index.tsv` (`index.cache` beside it), so a fresh
 * process (every CLI call and hook) loads 100k operations without parsing 100k lines. It is
 * never the source of truth: it is valid only for the index file it was made from (same inode
 * and device) and only for the first `covered` bytes of it (a line boundary), checked by a hash
 * of the head and tail of that prefix; the reader then parses only the lines appended after
 * it. Anything that does not check out (truncated, corrupt, another inode, a shorter index,
 * different bytes) is ignored and the index is parsed in full.
 *
 * Layout: magic, u32 header length, header JSON, zero padding to 8 bytes, then the columns:
 *
 *     ts            Float64Array(count)
 *     linesChanged  Float64Array(count)
 *     pathIds       Uint32Array(count)   into header.paths (distinct raw paths fields)
 *     toolIds       Uint32Array(count)   into header.tools
 *     ids           count × 10 latin1 bytes
 *
 * header.sha1 covers the tables and the columns, so a torn or bit-flipped file is refused too.
 */
const MAGIC = Buffer.from("TWIDXC1\n", "latin1");
/** Bytes of the index head and tail hashed into the fingerprint. */
const PROBE = 4096;

/** Which bytes of which index file a cache describes. */
export interface IndexCacheKey {
  ino: number;
  dev: number;
  /** Bytes of index.tsv the cache covers (ends at an LF). */
  covered: number;
  /** sha1 of the first and last PROBE bytes of the covered prefix. */
  fingerprint: string;
}

interface CacheHeader extends IndexCacheKey {
  v: 1;
  count: number;
  tools: string[];
  paths: string[];
  sha1: string;
}

/** The fingerprint of a covered prefix, from its head and tail bytes (see `probeRanges`). */
export function fingerprintOf(head: Uint8Array, tail: Uint8Array): string {
  return createHash("sha1").update(head).update(tail).digest("hex");
}

/** The byte ranges of index.tsv the fingerprint of a `covered`-byte prefix hashes. */
export function probeRanges(covered: number): { head: [number, number]; tail: [number, number] } {
  return {
    head: [0, Math.min(PROBE, covered)],
    tail: [Math.max(0, covered - PROBE), covered],
  };
}

/** Encode `data` (parsed from exactly the key's prefix). */
export function encodeIndexCache(data: IndexData, key: IndexCacheKey): Buffer {
  const n = data.count;
  const body = Buffer.concat([
    u8(data.ts.subarray(0, n)),
    u8(data.linesChanged.subarray(0, n)),
    u8(data.pathIds.subarray(0, n)),
    u8(data.toolIds.subarray(0, n)),
    data.ids.subarray(0, n * OPERATION_ID_LEN),
  ]);
  const header: CacheHeader = {
    v: 1,
    ...key,
    count: n,
    tools: data.tools,
    paths: data.paths,
    sha1: contentHash(data.tools, data.paths, body),
  };
  const json = Buffer.from(JSON.stringify(header), "utf8");
  const len = Buffer.alloc(4);
  len.writeUInt32LE(json.length);
  const headEnd = MAGIC.length + 4 + json.length;
  const padding = Buffer.alloc((8 - (headEnd % 8)) % 8);
  return Buffer.concat([MAGIC, len, json, padding, body]);
}

/** What header.sha1 covers: the tables and the columns. */
const contentHash = (tools: string[], paths: string[], body: Uint8Array) =>
  createHash("sha1")
    .update(JSON.stringify([tools, paths]))
    .update(body)
    .digest("hex");

const u8 = (a: Float64Array | Uint32Array) => Buffer.from(a.buffer, a.byteOffset, a.byteLength);

/** The key a cache file claims, or undefined if its header is unreadable. */
export function readCacheKey(buf: Buffer): IndexCacheKey | undefined {
  const header = readHeader(buf);
  return header === undefined
    ? undefined
    : {
        ino: header.ino,
        dev: header.dev,
        covered: header.covered,
        fingerprint: header.fingerprint,
      };
}

function readHeader(buf: Buffer): (CacheHeader & { bodyAt: number }) | undefined {
  if (buf.length < MAGIC.length + 4 || !buf.subarray(0, MAGIC.length).equals(MAGIC)) {
    return undefined;
  }
  const len = buf.readUInt32LE(MAGIC.length);
  const headEnd = MAGIC.length + 4 + len;
  if (headEnd > buf.length) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(buf.toString("utf8", MAGIC.length + 4, headEnd));
  } catch {
    return undefined;
  }
  if (!isHeader(parsed)) return undefined;
  return { ...parsed, bodyAt: headEnd + ((8 - (headEnd % 8)) % 8) };
}

const isInt = (v: unknown): v is number => typeof v === "number" && Number.isSafeInteger(v);
const isStrings = (v: unknown): v is string[] =>
  Array.isArray(v) && v.every((s) => typeof s === "string");

function isHeader(v: unknown): v is CacheHeader {
  if (typeof v !== "object" || v === null) return false;
  const h = v as Record<string, unknown>;
  return (
    h.v === 1 &&
    isInt(h.ino) &&
    isInt(h.dev) &&
    isInt(h.covered) &&
    isInt(h.count) &&
    typeof h.fingerprint === "string" &&
    typeof h.sha1 === "string" &&
    isStrings(h.tools) &&
    isStrings(h.paths)
  );
}

/**
 * Decode a cache file whose key the caller has already matched against the index; undefined
 * when the body is short, its hash differs or an id points outside its table.
 */
export function decodeIndexCache(buf: Buffer): { key: IndexCacheKey; data: IndexData } | undefined {
  const header = readHeader(buf);
  if (header === undefined) return undefined;
  const { count, bodyAt } = header;
  const size = count * (8 + 8 + 4 + 4 + OPERATION_ID_LEN);
  if (buf.length !== bodyAt + size) return undefined;
  let body: Uint8Array = buf.subarray(bodyAt);
  if (contentHash(header.tools, header.paths, body) !== header.sha1) return undefined;
  if (body.byteOffset % 8 !== 0) body = new Uint8Array(body); // typed views need alignment
  const { buffer, byteOffset } = body;
  let at = byteOffset;
  const ts = new Float64Array(buffer, at, count);
  at += count * 8;
  const linesChanged = new Float64Array(buffer, at, count);
  at += count * 8;
  const pathIds = new Uint32Array(buffer, at, count);
  at += count * 4;
  const toolIds = new Uint32Array(buffer, at, count);
  at += count * 4;
  const ids = new Uint8Array(buffer, at, count * OPERATION_ID_LEN);
  const nTools = header.tools.length;
  const nPaths = header.paths.length;
  for (let i = 0; i < count; i++) {
    if ((toolIds[i] ?? nTools) >= nTools || (pathIds[i] ?? nPaths) >= nPaths) return undefined;
  }
  const data: IndexData = {
    count,
    ts,
    linesChanged,
    toolIds,
    pathIds,
    ids,
    tools: header.tools,
    paths: header.paths,
    toolIndex: undefined,
    pathIndex: undefined,
    byId: undefined,
  };
  return {
    key: {
      ino: header.ino,
      dev: header.dev,
      covered: header.covered,
      fingerprint: header.fingerprint,
    },
    data,
  };
}
