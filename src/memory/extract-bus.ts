import { readEvents } from "../core/index.ts";
import type { DraftEvent } from "./phases.ts";

export interface BusExtraction {
  events: DraftEvent[];
  warnings: string[];
}

/**
 * Edit events from the workspace bus (`.timewarp/events.jsonl`, `readEvents` in core): every
 * file of `edit.applied` / `edit.recorded` (with the ledger operation id, so a rollback can be
 * `timewarp revert <op>`) and of `shell.changed`. Torn or unknown lines are warnings.
 */
export function extractBusEvents(eventsPath: string): BusExtraction {
  const { events, skipped } = readEvents(eventsPath);
  const out: DraftEvent[] = [];
  for (const e of events) {
    if (e.type === "edit.applied" || e.type === "edit.recorded") {
      for (const file of e.data.files) {
        out.push({
          tool: "edit",
          where: file,
          why: `${e.data.tool} (${e.type} ${e.data.operation_id} at ${e.ts})`,
          confidence: 1,
          source: "bus",
          op_id: e.data.operation_id,
        });
      }
    } else if (e.type === "shell.changed") {
      for (const file of e.data.files) {
        out.push({
          tool: "edit",
          where: file,
          why: `changed by a shell command (${e.ts})`,
          confidence: 0.8,
          source: "bus",
        });
      }
    }
  }
  return {
    events: out,
    warnings: skipped.map((s) => `${eventsPath} line ${s.line}: ${s.reason}, skipped`),
  };
}
