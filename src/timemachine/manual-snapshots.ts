import { existsSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";
import {
  acquireLock,
  assertNoTransition,
  type Clock,
  ErrorCode,
  effectiveExcludes,
  type Random,
  readJsonFile,
  readState,
  systemClock,
  systemRandom,
  TimewarpError,
  type WorkspacePaths,
  workspacePaths,
  writeJsonAtomic,
} from "../core/index.ts";
import {
  type CreateSnapshotOptions,
  type CreateSnapshotResult,
  createSnapshot,
  deleteSnapshot,
  initWorkspace,
  readSnapshot,
  type SnapshotRecord,
} from "../store/index.ts";
import { issueSnapshotIds } from "./issues.ts";

/*
 * Snapshots the user made by hand are the user's: a session start's cleanup once deleted them
 * ("cleanup: 2 snapshot(s) deleted", issue 16 class 9). They stay until the user deletes them
 * (`snapshot delete`) or the config's retention (`retention.manual_snapshots_keep`,
 * `manual_snapshots_max_age_days`, both off by default) lets them go; a pinned snapshot
 * (`snapshot pin`) is never cleaned up, whoever made it.
 */

/** `.timewarp/pins.json`: the pinned snapshot ids, with when each was pinned. */
const PinsSchema = z.object({
  schema_version: z.literal(1),
  pinned: z.record(z.string(), z.object({ pinned_at: z.string() })),
});
type Pins = z.infer<typeof PinsSchema>;

function pinsFile(paths: WorkspacePaths): string {
  return join(paths.data, "pins.json");
}

function readPinsFile(paths: WorkspacePaths): Pins {
  const file = pinsFile(paths);
  if (!existsSync(file)) return { schema_version: 1, pinned: {} };
  return readJsonFile(file, PinsSchema);
}

/** The pinned snapshot ids (empty when none was ever pinned). CORRUPT_FILE when pins.json is bad. */
export function readPinnedIds(paths: WorkspacePaths): Set<string> {
  return new Set(Object.keys(readPinsFile(paths).pinned));
}

/** A snapshot made by hand: `origin: manual`, or an older record with no session (sessions always name one). */
export function isManualSnapshot(record: SnapshotRecord): boolean {
  if (record.kind !== "snapshot") return false;
  if (record.origin !== undefined) return record.origin === "manual";
  return record.session_id === null;
}

export interface ManualSnapshotOptions {
  root: string;
  sessionId?: string | null;
  clock?: Clock;
  random?: Random;
  onProgress?: CreateSnapshotOptions["onProgress"];
}

/**
 * `timewarp snapshot create`: a snapshot made by hand (`origin: manual`), under the workspace
 * lock. TRANSITION_INTERRUPTED while a travel/return awaits recover (a snapshot of a half-
 * restored tree would look like a real state). In the past it snapshots the past workspace.
 */
export function createManualSnapshot(options: ManualSnapshotOptions): CreateSnapshotResult {
  const { config } = initWorkspace(options.root, options.clock ? { clock: options.clock } : {});
  const paths = workspacePaths(options.root);
  const lock = acquireLock(paths.lock, { command: "snapshot create" });
  try {
    assertNoTransition(readState(paths), paths);
    return createSnapshot(paths.root, {
      sessionId: options.sessionId ?? null,
      origin: "manual",
      excludes: effectiveExcludes(config),
      maxFileBytes: config.max_file_bytes,
      clock: options.clock ?? systemClock,
      random: options.random ?? systemRandom,
      onProgress: options.onProgress,
    });
  } finally {
    lock.release();
  }
}

export interface PinResult {
  snapshot_id: string;
  pinned: boolean;
  /** False when it already was in the asked state. */
  changed: boolean;
}

/** `snapshot pin ID` / `unpin ID`: SNAPSHOT_NOT_FOUND for an unknown id (pinning); idempotent. */
export function setSnapshotPinned(options: {
  root: string;
  snapshotId: string;
  pinned: boolean;
  clock?: Clock;
}): PinResult {
  const paths = workspacePaths(options.root);
  const lock = acquireLock(paths.lock, {
    command: `snapshot ${options.pinned ? "pin" : "unpin"} ${options.snapshotId}`,
  });
  try {
    const pins = readPinsFile(paths);
    const was = options.snapshotId in pins.pinned;
    if (was === options.pinned) {
      return { snapshot_id: options.snapshotId, pinned: was, changed: false };
    }
    if (options.pinned) {
      readSnapshot(paths.root, options.snapshotId); // SNAPSHOT_NOT_FOUND, listing what exists
      pins.pinned[options.snapshotId] = {
        pinned_at: (options.clock ?? systemClock).now().toISOString(),
      };
    } else delete pins.pinned[options.snapshotId];
    writeJsonAtomic(pinsFile(paths), pins);
    return { snapshot_id: options.snapshotId, pinned: options.pinned, changed: true };
  } finally {
    lock.release();
  }
}

export interface DeleteSnapshotResult {
  snapshot_id: string;
  /** Why it was in use and deleted anyway (`--force`), if it was. */
  forced: string[];
}

/**
 * `snapshot delete ID`: the user's way to remove a snapshot (objects go at the next gc). Refuses
 * while a transition awaits recover; the snapshot a travel is at, always (SNAPSHOT_IN_USE:
 * return needs its record); a pinned one (SNAPSHOT_PINNED), an issue's or the current session's
 * (SNAPSHOT_IN_USE) unless `force`.
 */
export function deleteUserSnapshot(options: {
  root: string;
  snapshotId: string;
  force?: boolean;
  clock?: Clock;
}): DeleteSnapshotResult {
  const paths = workspacePaths(options.root);
  const id = options.snapshotId;
  const lock = acquireLock(paths.lock, { command: `snapshot delete ${id}` });
  try {
    const state = readState(paths);
    assertNoTransition(state, paths);
    readSnapshot(paths.root, id); // SNAPSHOT_NOT_FOUND first
    if (state.mode === "past" && state.current_snapshot_id === id) {
      throw new TimewarpError(
        ErrorCode.SNAPSHOT_IN_USE,
        `snapshot ${id} is the one the workspace travelled to; run \`timewarp return\` first`,
        { data: { snapshot_id: id, used_by: ["travel"] } },
      );
    }
    const pins = readPinsFile(paths);
    const force = options.force === true;
    const wasPinned = id in pins.pinned;
    if (wasPinned && !force) {
      throw new TimewarpError(
        ErrorCode.SNAPSHOT_PINNED,
        `snapshot ${id} is pinned (since ${pins.pinned[id]?.pinned_at}); \`timewarp snapshot unpin ${id}\` first, or --force`,
        { data: { snapshot_id: id } },
      );
    }
    const usedBy: string[] = [];
    if (issueSnapshotIds(paths).has(id)) usedBy.push("issue");
    if (state.session_snapshot_id === id) usedBy.push("session");
    if (usedBy.length > 0 && !force) {
      throw new TimewarpError(
        ErrorCode.SNAPSHOT_IN_USE,
        `snapshot ${id} is ${usedBy.map((u) => (u === "issue" ? "an issue's snapshot" : "the current session's snapshot")).join(" and ")}; --force deletes it anyway`,
        { data: { snapshot_id: id, used_by: usedBy } },
      );
    }
    deleteSnapshot(paths.root, id, { clock: options.clock ?? systemClock });
    if (wasPinned) {
      delete pins.pinned[id];
      writeJsonAtomic(pinsFile(paths), pins);
    }
    return { snapshot_id: id, forced: force ? [...(wasPinned ? ["pinned"] : []), ...usedBy] : [] };
  } finally {
    lock.release();
  }
}
