import { ErrorCode, TimewarpError, unsafeRelPathReason } from "../core/index.ts";

/**
 * A workspace-relative path as the store keeps it. Names are bytes on Linux; a name that is not
 * valid UTF-8 keeps its exact bytes in `raw` (and in a manifest as `path_b64`) so it round-trips
 * instead of being mangled into U+FFFD.
 */
export interface RelPath {
  /** Display/key form, `/`-separated, UTF-8 (lossy only when `raw` is set). */
  path: string;
  /** The exact bytes, present only when they are not valid UTF-8. */
  raw?: Buffer;
}

/** The decoded name and whether it decoded losslessly. */
export function decodeName(name: Buffer): { text: string; exact: boolean } {
  const text = name.toString("utf8");
  // U+FFFD appears in the decoded text for every invalid sequence; only then compare bytes.
  if (!text.includes("\uFFFD")) return { text, exact: true };
  return { text, exact: Buffer.from(text, "utf8").equals(name) };
}

/** The key a manifest entry is identified by: the path, or the exact bytes when they are not UTF-8. */
export function entryKey(entry: { path: string; path_b64?: string | undefined }): string {
  return entry.path_b64 === undefined ? entry.path : `\0b64:${entry.path_b64}`;
}

/** The bytes of a manifest entry's path. */
export function entryPathBytes(entry: { path: string; path_b64?: string | undefined }): Buffer {
  return entry.path_b64 === undefined
    ? Buffer.from(entry.path, "utf8")
    : Buffer.from(entry.path_b64, "base64");
}

/**
 * The file-system path of a workspace-relative entry under `root`: a string when the bytes are
 * UTF-8, else a Buffer (Node passes Buffer paths to the kernel byte for byte).
 */
export function fsPathOf(
  root: string,
  entry: { path: string; path_b64?: string | undefined },
): string | Buffer {
  if (entry.path_b64 === undefined) return `${root}/${entry.path}`;
  return Buffer.concat([Buffer.from(`${root}/`, "utf8"), Buffer.from(entry.path_b64, "base64")]);
}

/**
 * Throws UNSAFE_PATH unless `bytes` is a plain relative path: not absolute, no empty, `.` or `..`
 * segment, no NUL, and not inside `.timewarp/` (a restore never writes there). The rule is
 * core's `unsafeRelPathReason`, the one every write checks again at write time.
 */
export function assertSafeEntryPath(bytes: Buffer, shown: string): void {
  const why = unsafeRelPathReason(bytes);
  if (why !== null) throw unsafeEntry(shown, why);
}

/**
 * `assertSafeEntryPath` for a path held as text (no `path_b64`): the same rules, checked on the
 * string, without encoding it (a restore checks every entry of a 10k-entry manifest).
 */
export function assertSafeEntryText(path: string): void {
  const why = unsafeRelPathReason(path);
  if (why !== null) throw unsafeEntry(path, why);
}

function unsafeEntry(path: string, why: string): TimewarpError {
  return new TimewarpError(
    ErrorCode.UNSAFE_PATH,
    `manifest entry ${JSON.stringify(path)} is unsafe: ${why}`,
    { data: { path, reason: why } },
  );
}

/** The parent key of a `/`-separated path, or "" for a top-level one. */
export function parentOf(path: string): string {
  const i = path.lastIndexOf("/");
  return i < 0 ? "" : path.slice(0, i);
}
