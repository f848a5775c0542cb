import { readdirSync } from "node:fs";
import { join } from "node:path";
import { type FileChange, primeKept, scanKept } from "../store/index.ts";
import { hookPaths } from "./hook-paths.ts";
import { readPendingCapture } from "./pending-capture.ts";

/**
 * The hooks' view of the workspace, the baseline a shell command is diffed against, is kept in
 * `.timewarp/hooks/` by the store (`scanKept`, src/store/workspace-scan.ts: a stat cache plus,
 * with the watch daemon, an overlay of what it reported since).
 */

export interface ShellScan {
  /** The baseline's id, which PostToolUse expects to find unchanged. */
  id: string;
  files: number;
  rehashed: number;
}

export interface ShellRescan extends ShellScan {
  /** Files whose content changed since the baseline. */
  changes: FileChange[];
  /** The baseline was not the one PreToolUse took (another scan ran in between, or none). */
  baselineMoved: boolean;
}

/**
 * PreToolUse of a shell tool: bring the baseline up to date (only files that changed are read)
 * and keep it as the baseline of this command.
 */
export function scanBaseline(root: string): ShellScan {
  const { id, files, rehashed } = scanKept(root, hookPaths(root).dir);
  return { id, files, rehashed };
}

/** PostToolUse of a shell tool: scan again and diff against the baseline. */
export function rescanAfterShell(root: string, expectedBaseline: string | null): ShellRescan {
  const scan = scanKept(root, hookPaths(root).dir);
  return {
    id: scan.id,
    files: scan.files,
    rehashed: scan.rehashed,
    changes: scan.changes,
    baselineMoved: expectedBaseline !== scan.beforeId,
  };
}

/**
 * The watch daemon's prime of this view (`primeKept`): brought to the new daemon's token in the
 * prime's own process, unless a shell command runs (a PreToolUse left its baseline for the
 * PostToolUse to diff against: moving it would lose what the command changed so far).
 */
export function primeShellView(root: string): string {
  const paths = hookPaths(root);
  return primeKept(root, paths.dir, () => !shellRunning(paths.pending));
}

/** Whether a pending capture holds a shell command's baseline (an unreadable one counts). */
function shellRunning(pending: string): boolean {
  let sessions: string[];
  try {
    sessions = readdirSync(pending);
  } catch {
    return false;
  }
  for (const session of sessions) {
    let names: string[];
    try {
      names = readdirSync(join(pending, session));
    } catch {
      continue;
    }
    for (const name of names) {
      try {
        // (gone since the listing: counted as running, as an unreadable one is)
        const capture = readPendingCapture(join(pending, session, name));
        if (capture === null || capture.baseline_manifest !== null) return true;
      } catch {
        return true;
      }
    }
  }
  return false;
}
