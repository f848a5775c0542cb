import { createHash } from "node:crypto";

/** git's blob id: SHA-1 of `blob <size>\0<bytes>`, lowercase hex. The content id of the whole toolkit. */
export function gitBlobId(bytes: Uint8Array): string {
  return createHash("sha1").update(`blob ${bytes.length}\0`).update(bytes).digest("hex");
}

/** The blob id of the empty file (`e69de29…`), handy for creates and deletes. */
export const EMPTY_BLOB_ID = "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391";

/** The all-zero id git writes for an absent side in `index` lines. */
export const NULL_OID = "0000000000000000000000000000000000000000";
