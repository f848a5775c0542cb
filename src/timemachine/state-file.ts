import { existsSync, mkdirSync } from "node:fs";
import {
  ErrorCode,
  faultPoint,
  readJsonFile,
  TimewarpError,
  type WorkspacePaths,
  writeJsonAtomic,
} from "../core/index.ts";
import { initialState, type State, StateSchema } from "./state.ts";

/** Read state.json; the initial state when absent; CORRUPT_FILE (naming file and field) when wrong. */
export function readState(paths: WorkspacePaths): State {
  if (!existsSync(paths.state)) return initialState(paths.root);
  return readJsonFile(paths.state, StateSchema);
}

/**
 * Replace state.json atomically (temp + rename): a reader or a kill -9 sees old or new.
 * `durable` (default) adds the fsyncs a power cut needs. Transitions skip them where losing the
 * write is harmless: a lost "backup" journal or "past" state only replays an idempotent step
 * (the workspace is untouched, or recover restores the snapshot again). The journal that
 * precedes rewriting the workspace and the "present" written before a backup is deleted stay
 * durable.
 */
export function writeState(
  paths: WorkspacePaths,
  state: State,
  options: { durable?: boolean } = {},
): void {
  mkdirSync(paths.data, { recursive: true });
  faultPoint("state-write");
  writeJsonAtomic(
    paths.state,
    { ...state, schema_version: 1 },
    { durable: options.durable ?? true },
  );
}

/** Every command but `recover` refuses while a travel/return journal is open. */
export function assertNoTransition(state: State, paths: WorkspacePaths): void {
  const t = state.transition;
  if (t) {
    throw new TimewarpError(
      ErrorCode.TRANSITION_INTERRUPTED,
      `a ${t.kind} to ${t.kind === "travel" ? t.snapshot_id : "the present"} was interrupted in phase ${t.phase} ` +
        `(started ${t.started_at}, journal in ${paths.state}); run \`timewarp recover\` first`,
      { data: { transition: t } },
    );
  }
}
