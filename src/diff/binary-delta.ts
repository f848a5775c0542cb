/**
 * git's binary delta (the `delta N` block of a `GIT binary patch`, the same opcodes as a pack's
 * deltas): the source and target sizes as little-endian 7-bit varints, then copy ops
 * (`0x80 | flags`, up to 4 offset bytes and 3 size bytes, each present only when non-zero) and
 * insert ops (a count of 1–127, then that many literal bytes).
 *
 * Matches are found as git's diff-delta finds them, in outline: the source is indexed by a hash
 * of each aligned 16-byte block; a rolling hash of the target's 16-byte window looks them up;
 * a hit is checked, extended forward and back over the pending literal bytes, and copied.
 */

const WINDOW = 16;
/** The largest size three size bytes can say; git's applier reads all three. */
const MAX_COPY = 0xffffff;
/** Candidates checked per lookup: a source full of one repeated block cannot make a lookup slow. */
const MAX_CANDIDATES = 64;
const MAX_INSERT = 127;
/** An odd multiplier for the window hash (arithmetic mod 2^32 keeps it rolling exactly). */
const BASE = 0x01000193;
const BASE_TOP = (() => {
  let p = 1;
  for (let k = 1; k < WINDOW; k++) p = Math.imul(p, BASE);
  return p;
})();

/**
 * The source's blocks grouped by bucket, each bucket's entries side by side (earliest block
 * first) with their full hash beside them: a lookup reads one short run of memory and touches
 * the source only when a whole hash matches (random reads over megabytes are what cost).
 */
interface SourceIndex {
  /** Per bucket: where its entries start; one more than the buckets, the last is the end. */
  starts: Int32Array;
  hashes: Int32Array;
  offsets: Int32Array;
  shift: number;
}

function windowHash(buf: Uint8Array, at: number): number {
  let h = 0;
  for (let k = 0; k < WINDOW; k++) h = (Math.imul(h, BASE) + (buf[at + k] as number)) | 0;
  return h;
}

function bucketOf(hash: number, shift: number): number {
  return Math.imul(hash, 0x9e3779b1) >>> shift;
}

function indexSource(src: Uint8Array): SourceIndex {
  const blocks = Math.floor(src.length / WINDOW);
  let bits = 4;
  while (1 << (bits + 2) < blocks && bits < 22) bits++;
  const shift = 32 - bits;
  const starts = new Int32Array((1 << bits) + 1);
  const blockHash = new Int32Array(blocks);
  const keep = new Uint8Array(blocks);
  for (let b = 0; b < blocks; b++) {
    const h = windowHash(src, b * WINDOW);
    blockHash[b] = h;
    // A run of identical blocks is indexed once, at its start: a copy found there extends
    // over the whole run.
    if (b > 0 && blockHash[b - 1] === h) continue;
    keep[b] = 1;
    const k = bucketOf(h, shift) + 1;
    starts[k] = (starts[k] as number) + 1;
  }
  for (let k = 1; k < starts.length; k++)
    starts[k] = (starts[k] as number) + (starts[k - 1] as number);
  const total = starts[starts.length - 1] as number;
  const hashes = new Int32Array(total);
  const offsets = new Int32Array(total);
  const fill = starts.slice(0, -1);
  for (let b = 0; b < blocks; b++) {
    if (keep[b] === 0) continue;
    const h = blockHash[b] as number;
    const k = bucketOf(h, shift);
    const at = fill[k] as number;
    fill[k] = at + 1;
    hashes[at] = h;
    offsets[at] = b * WINDOW;
  }
  return { starts, hashes, offsets, shift };
}

/** How many bytes match from a[ai] and b[bi], at most `max`; long runs compare natively. */
function matchLength(a: Buffer, ai: number, b: Buffer, bi: number, max: number): number {
  let n = 0;
  while (n < max && n < 64 && a[ai + n] === b[bi + n]) n++;
  if (n < 64) return n;
  for (let step = 65536; step >= 64; step >>= 4) {
    while (
      n + step <= max &&
      a.subarray(ai + n, ai + n + step).equals(b.subarray(bi + n, bi + n + step))
    ) {
      n += step;
    }
  }
  while (n < max && a[ai + n] === b[bi + n]) n++;
  return n;
}

/** A growable byte buffer for the delta being written. */
class DeltaWriter {
  buf = Buffer.allocUnsafe(1024);
  length = 0;
  private room(n: number): void {
    if (this.length + n <= this.buf.length) return;
    const grown = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.length + n));
    this.buf.copy(grown, 0, 0, this.length);
    this.buf = grown;
  }
  varint(value: number): void {
    this.room(8);
    let v = value;
    while (v >= 0x80) {
      this.buf[this.length++] = (v % 0x80) | 0x80;
      v = Math.floor(v / 0x80);
    }
    this.buf[this.length++] = v;
  }
  insert(data: Buffer, start: number, end: number): void {
    for (let p = start; p < end; p += MAX_INSERT) {
      const n = Math.min(MAX_INSERT, end - p);
      this.room(n + 1);
      this.buf[this.length++] = n;
      this.length += data.copy(this.buf, this.length, p, p + n);
    }
  }
  copy(offset: number, size: number): void {
    this.room(8);
    const at = this.length++;
    let op = 0x80;
    for (let i = 0; i < 4; i++) {
      const byte = Math.floor(offset / 2 ** (8 * i)) & 0xff;
      if (byte !== 0) {
        op |= 1 << i;
        this.buf[this.length++] = byte;
      }
    }
    for (let i = 0; i < 3; i++) {
      const byte = (size >>> (8 * i)) & 0xff;
      if (byte !== 0) {
        op |= 0x10 << i;
        this.buf[this.length++] = byte;
      }
    }
    this.buf[at] = op;
  }
}

/**
 * Where the search stands: the target window at `t`, its hash, and `shift`, the source offset
 * minus the target offset of the last copy (where the source would go on after a replaced run).
 */
interface Cursor {
  t: number;
  hash: number;
  shift: number;
  /** Out: the best match found. */
  matchSrc: number;
  matchLength: number;
}

/**
 * The longest checked match for the window at `c.t`, among the index's blocks and the last
 * copy's continuation (a replaced run is followed by the source it replaced, at any alignment).
 * No allocation: it runs per byte.
 */
function findMatch(index: SourceIndex, src: Buffer, tgt: Buffer, c: Cursor): void {
  c.matchLength = 0;
  const room = Math.min(tgt.length - c.t, MAX_COPY);
  const bucket = bucketOf(c.hash, index.shift);
  const end = Math.min(
    index.starts[bucket + 1] as number,
    (index.starts[bucket] as number) + MAX_CANDIDATES,
  );
  for (let i = index.starts[bucket] as number; i < end; i++) {
    if (index.hashes[i] !== c.hash) continue;
    const s = index.offsets[i] as number;
    const max = Math.min(src.length - s, room);
    if (max <= c.matchLength) continue;
    const n = matchLength(src, s, tgt, c.t, max);
    if (n > c.matchLength) {
      c.matchSrc = s;
      c.matchLength = n;
    }
    if (n === max) break;
  }
  // The last copy's continuation, when it is longer: the index's earliest block wins ties, as
  // small offsets are shorter ops (in repeated data every phase matches as far).
  const next = c.t + c.shift;
  if (next >= 0 && next < src.length && src[next] === tgt[c.t]) {
    const n = matchLength(src, next, tgt, c.t, Math.min(src.length - next, room));
    if (n >= WINDOW && n > c.matchLength) {
      c.matchSrc = next;
      c.matchLength = n;
    }
  }
}

/**
 * After a continuation is chosen at `c.t`, look at the next windows for an indexed block that,
 * taken back to `c.t`, matches as far: in repeated data it gives a small offset where the
 * continuation's is large (shorter ops that deflate well), as git's search would find it.
 */
function preferIndexed(index: SourceIndex, src: Buffer, tgt: Buffer, c: Cursor): void {
  const room = Math.min(tgt.length - c.t, MAX_COPY);
  let hash = c.hash;
  for (let j = 1; j < WINDOW && c.t + j + WINDOW <= tgt.length; j++) {
    const drop = Math.imul(tgt[c.t + j - 1] as number, BASE_TOP);
    hash = (Math.imul((hash - drop) | 0, BASE) + (tgt[c.t + j - 1 + WINDOW] as number)) | 0;
    const bucket = bucketOf(hash, index.shift);
    const end = Math.min(
      index.starts[bucket + 1] as number,
      (index.starts[bucket] as number) + MAX_CANDIDATES,
    );
    for (let i = index.starts[bucket] as number; i < end; i++) {
      const s = (index.offsets[i] as number) - j;
      if (index.hashes[i] !== hash || s < 0 || s >= c.matchSrc) continue;
      const n = matchLength(src, s, tgt, c.t, Math.min(src.length - s, room));
      if (n >= c.matchLength) {
        c.matchSrc = s;
        c.matchLength = n;
        return;
      }
    }
  }
}

/**
 * The git delta that turns `source` into `target`, or null once it would exceed `maxSize`
 * bytes or when the source is too large for the index's 31-bit offsets (the caller then writes
 * a literal). Either side may be empty.
 */
export function createGitDelta(
  source: Uint8Array,
  target: Uint8Array,
  opts: { maxSize?: number } = {},
): Uint8Array | null {
  const src = Buffer.from(source.buffer, source.byteOffset, source.byteLength);
  const tgt = Buffer.from(target.buffer, target.byteOffset, target.byteLength);
  const maxSize = opts.maxSize ?? Number.POSITIVE_INFINITY;
  if (src.length > 0x7fffffff) return null;
  const out = new DeltaWriter();
  out.varint(src.length);
  out.varint(tgt.length);
  const index = indexSource(src);
  let pending = 0;
  const c: Cursor = { t: 0, hash: 0, shift: 0, matchSrc: 0, matchLength: 0 };
  if (tgt.length >= WINDOW) c.hash = windowHash(tgt, 0);
  while (c.t + WINDOW <= tgt.length) {
    findMatch(index, src, tgt, c);
    if (c.matchLength >= WINDOW && c.matchSrc === c.t + c.shift) preferIndexed(index, src, tgt, c);
    if (c.matchLength < WINDOW) {
      const t = c.t;
      if (t + WINDOW < tgt.length) {
        const drop = Math.imul(tgt[t] as number, BASE_TOP);
        c.hash = (Math.imul((c.hash - drop) | 0, BASE) + (tgt[t + WINDOW] as number)) | 0;
      }
      c.t = t + 1;
      // Literal bytes cost at least themselves: past the budget, stop early.
      if (out.length + (c.t - pending) > maxSize) return null;
      continue;
    }
    let s = c.matchSrc;
    let start = c.t;
    let length = c.matchLength;
    while (start > pending && s > 0 && length < MAX_COPY && src[s - 1] === tgt[start - 1]) {
      s--;
      start--;
      length++;
    }
    out.insert(tgt, pending, start);
    out.copy(s, length);
    if (out.length > maxSize) return null;
    c.t = start + length;
    pending = c.t;
    c.shift = s - start;
    if (c.t + WINDOW <= tgt.length) c.hash = windowHash(tgt, c.t);
  }
  out.insert(tgt, pending, tgt.length);
  if (out.length > maxSize) return null;
  return new Uint8Array(out.buf.buffer, out.buf.byteOffset, out.length);
}
