import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { z } from "zod";
import { isTempName } from "../core/index.ts";
import { RequestSchema } from "./protocol.ts";
import type { RunPaths } from "./run-dir.ts";

export type QueuedRequest = z.infer<typeof RequestSchema>;

/** The names a request takes in queue/ as the tool claims and finishes it (never a duplicate). */
const QUEUED = /^(.+)\.json(\.claimed(\.done)?)?$/;

/**
 * The request `requestId` as it sits in queue/ — waiting, claimed, or claimed and done — or
 * undefined when it was never made. A file that does not parse counts as never made: requests
 * are published whole (temp + link), so a bad one is foreign.
 */
export function readQueuedRequest(paths: RunPaths, requestId: string): QueuedRequest | undefined {
  for (const suffix of ["", ".claimed", ".claimed.done"]) {
    const file = join(paths.queue, `${requestId}.json${suffix}`);
    try {
      return RequestSchema.parse(JSON.parse(readFileSync(file, "utf8")));
    } catch {
      // not under this name
    }
  }
  return undefined;
}

/** Ids of the requests in queue/ that have no ack yet: what the tool works on or will. */
export function unansweredRequests(paths: RunPaths): string[] {
  let names: string[];
  try {
    names = readdirSync(paths.queue);
  } catch {
    return [];
  }
  const ids = new Set<string>();
  for (const name of names) {
    const id = isTempName(name) ? undefined : QUEUED.exec(name)?.[1];
    if (id && !existsSync(join(paths.ack, `${id}.json`))) ids.add(id);
  }
  return [...ids].sort();
}
