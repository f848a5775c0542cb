/**
 * `bytes` in memory of its own, for what a cache keeps: itself when it spans its whole
 * ArrayBuffer, else an exact-size copy. A Buffer under 4 KiB made by `Buffer.from` lies in
 * Node's shared 8 KiB pool, and a decompressed object or block is a view into zlib's output
 * chunk (16 KiB, or the 48 KiB a manifest block asks for): kept as such, each keeps the whole
 * buffer under it alive. The node caches counted 5 MiB of texts while they held 12 MiB (the
 * daemon's worker after rounds of snapshots at 100k files; issue 22, item 5).
 */
export function ownedBytes(bytes: Buffer): Buffer {
  if (bytes.length === bytes.buffer.byteLength) return bytes;
  const copy = Buffer.allocUnsafeSlow(bytes.length);
  bytes.copy(copy);
  return copy;
}
