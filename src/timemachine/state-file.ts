import {
  ensureDataDir,
  faultPoint,
  type State,
  type WorkspacePaths,
  writeJsonAtomic,
} from "../core/index.ts";

/** The reading side is in core (the ledger needs it too); the time machine alone writes. */
export { assertNoTransition, readState } from "../core/index.ts";

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
  ensureDataDir(paths.root);
  faultPoint("state-write");
  writeJsonAtomic(
    paths.state,
    { ...state, schema_version: 1 },
    { durable: options.durable ?? true },
  );
}
