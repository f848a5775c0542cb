import { createShortId, type Random } from "../core/index.ts";

/**
 * An operation's id: OPERATION_ID_LEN characters of [0-9a-z]. The seed's tools call it
 * `snapshotId` on the wire; it names one recorded operation, not a workspace snapshot.
 */
export const OPERATION_ID_LEN = 10;

export function createOperationId(random: Random): string {
  return createShortId(random, OPERATION_ID_LEN);
}
