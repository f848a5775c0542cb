import { createHash } from "node:crypto";

/** git's blob id: SHA-1 of `blob <size>\0<bytes>`, lowercase hex. The content id of the whole toolkit. */
export function gitBlobId(bytes: Uint8Array): string {
  return createHash("sha1").update(`blob ${bytes.length}\0`).update(bytes).digest("hex");
}

/** The blob id of the empty file (`e69de29…`), handy for creates and deletes. */
export const EMPTY_BLOB_ID = "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391";

/** A regular file's mode as git records it. */
export type GitFileMode = "100644" | "100755";

/** git's mode of a regular file: executable when any execute bit is set, as git itself decides. */
export function gitFileMode(mode: number): GitFileMode {
  return (mode & 0o111) !== 0 ? "100755" : "100644";
}
