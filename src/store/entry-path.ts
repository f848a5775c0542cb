import { ErrorCode, TimewarpError } from "../core/index.ts";

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
 * segment, no NUL, and not inside `.timewarp/` (a restore never writes there).
 */
export function assertSafeEntryPath(bytes: Buffer, shown: string): void {
  const reject = (why: string): never => {
    throw new TimewarpError(
      ErrorCode.UNSAFE_PATH,
      `manifest entry ${JSON.stringify(shown)} is unsafe: ${why}`,
      { data: { path: shown, reason: why } },
    );
  };
  if (bytes.length === 0) reject("empty path");
  if (bytes[0] === 0x2f) reject("absolute path");
  if (bytes.includes(0)) reject("contains NUL");
  let start = 0;
  let first = true;
  for (let i = 0; i <= bytes.length; i++) {
    if (i === bytes.length || bytes[i] === 0x2f) {
      const len = i - start;
      if (len === 0) reject("empty segment");
      if (len === 1 && bytes[start] === 0x2e) reject("'.' segment");
      if (len === 2 && bytes[start] === 0x2e && bytes[start + 1] === 0x2e) reject("'..' segment");
      if (first && len === 9 && bytes.toString("latin1", start, i) === ".timewarp")
        reject("inside .timewarp/");
      first = false;
      start = i + 1;
    }
  }
}

/**
 * `assertSafeEntryPath` for a path held as text (no `path_b64`): the same rules, checked on the
 * string, without encoding it (a restore checks every entry of a 10k-entry manifest).
 */
export function assertSafeEntryText(path: string): void {
  const why = unsafeTextReason(path);
  if (why !== null) {
    throw new TimewarpError(
      ErrorCode.UNSAFE_PATH,
      `manifest entry ${JSON.stringify(path)} is unsafe: ${why}`,
      { data: { path, reason: why } },
    );
  }
}

function unsafeTextReason(path: string): string | null {
  if (path.length === 0) return "empty path";
  if (path.charCodeAt(0) === 0x2f) return "absolute path";
  if (path.includes("\0")) return "contains NUL";
  let start = 0;
  for (;;) {
    const slash = path.indexOf("/", start);
    const end = slash < 0 ? path.length : slash;
    const len = end - start;
    if (len === 0) return "empty segment";
    if (len <= 2 && path.charCodeAt(start) === 0x2e) {
      if (len === 1) return "'.' segment";
      if (path.charCodeAt(start + 1) === 0x2e) return "'..' segment";
    }
    if (start === 0 && len === 9 && path.startsWith(".timewarp")) return "inside .timewarp/";
    if (slash < 0) return null;
    start = slash + 1;
  }
}

/** The parent key of a `/`-separated path, or "" for a top-level one. */
export function parentOf(path: string): string {
  const i = path.lastIndexOf("/");
  return i < 0 ? "" : path.slice(0, i);
}
