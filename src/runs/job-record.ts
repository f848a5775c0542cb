import type { Clock } from "../core/index.ts";
import type { JobState, Manifest } from "./protocol.ts";
import type { ProtocolIo, RunPaths, Timeline } from "./run-dir.ts";
import type { JobFailure } from "./taxonomy.ts";

/**
 * A job's record while it runs (seed §2, §4): job_manifest.json, rewritten whole on every save,
 * and the timeline's state events — the state entered, its actions, its exit — so that the run
 * directory says at every moment where the job is.
 */
export interface JobRecord {
  readonly manifest: Manifest;
  save(): void;
  enter(state: JobState, message?: string): void;
  /** STATE_EXIT of the current state, with what it reports. */
  leave(data?: Record<string, unknown>): void;
  act(action: string, data?: Record<string, unknown>): void;
  /** The ERROR event of a failed job, and the exit of the state it failed in; never throws. */
  fail(failure: JobFailure): void;
}

export function createJobRecord(o: {
  manifest: Manifest;
  timeline: Timeline;
  io: ProtocolIo;
  paths: RunPaths;
  clock: Clock;
  progress: (message: string) => void;
}): JobRecord {
  const { manifest, timeline } = o;
  let state: JobState | undefined;
  const record: JobRecord = {
    manifest,
    save() {
      manifest.updated_at = o.clock.now().toISOString();
      o.io.writeFile(o.paths.manifest, `${JSON.stringify(manifest, null, 2)}\n`);
    },
    enter(s, message) {
      state = s;
      o.progress(`${s.toLowerCase().replaceAll("_", " ")}…`);
      timeline.append({
        level: "INFO",
        event: "STATE_ENTER",
        state: s,
        ...(message ? { message } : {}),
      });
    },
    leave(data) {
      if (state)
        timeline.append({ level: "INFO", event: "STATE_EXIT", state, ...(data ? { data } : {}) });
      state = undefined;
    },
    act(action, data) {
      timeline.append({
        level: "INFO",
        event: "ACTION",
        ...(state ? { state } : {}),
        data: { action, ...data },
      });
    },
    fail(failure) {
      try {
        timeline.append({
          level: "ERROR",
          event: "ERROR",
          ...(state ? { state } : {}),
          message: failure.message,
          data: {
            error_type: failure.error_type,
            ...(failure.detail_code ? { detail_code: failure.detail_code } : {}),
          },
        });
        if (state) record.leave({ error_type: failure.error_type });
      } catch {
        // the disk may be full; the terminal writes after this try again
      }
    },
  };
  return record;
}
