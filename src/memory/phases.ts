import type { MemoryEvent } from "./schemas.ts";

/** An event before steps and phases are assigned. */
export type DraftEvent = Omit<MemoryEvent, "run_id" | "step" | "phase">;

/**
 * Number the events and give each its checkpoint: edits and plans are `modify`; a test before
 * any edit is `reproduce`, after an edit `test`, and after a test has passed since the last edit
 * `regress` (re-running the suite once the fix holds). Pure.
 */
export function assignPhases(runId: string, drafts: readonly DraftEvent[]): MemoryEvent[] {
  let edited = false;
  let passedSinceEdit = false;
  return drafts.map((d, step) => {
    let phase: MemoryEvent["phase"] = "modify";
    if (d.tool === "edit") {
      edited = true;
      passedSinceEdit = false;
    } else if (d.tool === "shell") {
      phase = !edited ? "reproduce" : passedSinceEdit ? "regress" : "test";
      const r = d.result;
      if (
        edited &&
        r !== undefined &&
        r.failed === 0 &&
        (r.exit_code === null || r.exit_code === 0)
      )
        passedSinceEdit = true;
    }
    return { run_id: runId, step, phase, ...d };
  });
}
