import { workspacePaths } from "../core/index.ts";
import { listSnapshotsChecked } from "../store/index.ts";
import { isManualSnapshot, readPinnedIds } from "./manual-snapshots.ts";

/** One snapshot as `timewarp snapshot list --json` lists it. */
export interface SnapshotSummary {
  snapshot_id: string | undefined;
  created_at: string;
  session_id: string | null;
  files: number;
  bytes: number;
  partial: boolean;
  /** Who made it: by hand, a session start, or a turn checkpoint. */
  origin: "manual" | "turn" | "session";
  pinned: boolean;
}

/** `timewarp snapshot list --json`: every snapshot oldest first, and the records that do not read. */
export interface SnapshotListing {
  snapshots: SnapshotSummary[];
  corrupt: { id: string; code: string; message: string; file: string }[];
}

/**
 * The snapshots, oldest first, as the CLI and the dashboard list them: one damaged record is
 * flagged in `corrupt`, not a reason to hide the others (issue 16). Reads only.
 */
export function listSnapshotSummaries(root: string): SnapshotListing {
  const { records, corrupt } = listSnapshotsChecked(root);
  const pinned = readPinnedIds(workspacePaths(root));
  return {
    snapshots: records.map((r) => ({
      snapshot_id: r.snapshot_id,
      created_at: r.created_at,
      session_id: r.session_id,
      files: r.files,
      bytes: r.bytes,
      partial: r.partial,
      origin: isManualSnapshot(r) ? "manual" : r.origin === "turn" ? "turn" : "session",
      pinned: pinned.has(r.snapshot_id ?? ""),
    })),
    corrupt: corrupt.map((c) => ({ id: c.id, code: c.code, message: c.message, file: c.file })),
  };
}
