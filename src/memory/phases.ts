import type { Checkpoint, MemoryEvent } from "./schemas.ts";

/** An event before steps and phases are assigned; `phase` only when the source knows it (a reproduction script is `reproduce`). */
export type DraftEvent = Omit<MemoryEvent, "run_id" | "step" | "phase"> & { phase?: Checkpoint };

/**
 * Number the events and give each its checkpoint: edits and plans are `modify`; a test before
 * any edit is `reproduce`, the first test after an edit `test`, and a further test run with no
 * edit in between `regress` (the suite run again once the change was tested: confirming it holds,
 * or retrying it). A draft that carries its own phase (a reproduction script run after an edit)
 * keeps it and does not move the others. Pure.
 */
export function assignPhases(runId: string, drafts: readonly DraftEvent[]): MemoryEvent[] {
  let edited = false;
  let testedSinceEdit = false;
  return drafts.map((d, step) => {
    let phase: MemoryEvent["phase"] = "modify";
    if (d.phase !== undefined) return { run_id: runId, step, ...d, phase: d.phase };
    if (d.tool === "edit") {
      edited = true;
      testedSinceEdit = false;
    } else if (d.tool === "shell") {
      phase = !edited ? "reproduce" : testedSinceEdit ? "regress" : "test";
      if (edited) testedSinceEdit = true;
    }
    return { run_id: runId, step, phase, ...d };
  });
}
