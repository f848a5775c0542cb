import { join } from "node:path";
import { workspacePaths } from "../core/index.ts";

/** Every path of the ledger under `.timewarp/history/`, computed in one place. */
export interface LedgerPaths {
  root: string;
  data: string;
  history: string;
  snapshots: string;
  milestones: string;
  /** Append-only index, one line per operation (see history-index.ts). */
  index: string;
  /** The ledger's own lock, distinct from the time machine's workspace lock. */
  lock: string;
  /** The write-ahead journal of the operation being applied (absent when none is). */
  journal: string;
  objects: string;
  events: string;
  config: string;
}

export function ledgerPaths(root: string): LedgerPaths {
  const ws = workspacePaths(root);
  const history = ws.history;
  return {
    root: ws.root,
    data: ws.data,
    history,
    snapshots: join(history, "snapshots"),
    milestones: join(history, "milestones"),
    index: join(history, "index.tsv"),
    lock: join(history, "lock"),
    journal: join(history, "journal.json"),
    objects: ws.objects,
    events: ws.events,
    config: ws.config,
  };
}

const pad = (n: number, w = 2) => String(n).padStart(w, "0");

/** `snapshots/YYYY/MM/DD/HHMMSS_<id>.json` relative to `history/`, from the record's UTC time. */
export function recordRelativePath(timestampMs: number, id: string): string {
  const d = new Date(timestampMs);
  return join(
    "snapshots",
    pad(d.getUTCFullYear(), 4),
    pad(d.getUTCMonth() + 1),
    pad(d.getUTCDate()),
    `${pad(d.getUTCHours())}${pad(d.getUTCMinutes())}${pad(d.getUTCSeconds())}_${id}.json`,
  );
}
