import {
  readState,
  systemClock,
  type Timeline,
  timelineOf,
  workspacePaths,
} from "../core/index.ts";
import { withLedgerWriter } from "./complete-pending-operation.ts";
import type { LedgerContext } from "./ledger-context.ts";
import { ledgerPaths } from "./ledger-paths.ts";
import {
  buildOperationRecord,
  type FileEdit,
  isRealChange,
  persistOperation,
} from "./record-operation.ts";
import { resolveWorkspacePath } from "./safe-path.ts";
import { statMode } from "./workspace-files.ts";

export interface RecordEditOptions extends LedgerContext {
  /** Workspace-relative (or absolute inside the workspace) path of the edited file. */
  file: string;
  /** Content before the edit; null when the edit created the file. */
  before: string | Uint8Array | null;
  /** Content after the edit; null when the edit deleted the file. */
  after: string | Uint8Array | null;
  /** The tool that made the edit, e.g. "Edit", "Write", "apply_patch". */
  tool: string;
  description?: string;
  /** The tool's own input, kept in `context.toolParams`. */
  toolParams?: Record<string, unknown>;
  /** Git modes; default: the file's current mode on disk (or 100644), for both sides. */
  beforeMode?: "100644" | "100755";
  afterMode?: "100644" | "100755";
  /** How long the edit took, if the caller knows (default: the time spent recording). */
  executionTimeMs?: number;
}

export interface RecordEditResult {
  /** The operation id; null when before and after are identical (nothing is recorded). */
  snapshotId: string | null;
  affectedFiles: string[];
  diff: string;
}

const bytesOf = (v: string | Uint8Array | null) =>
  v === null ? null : typeof v === "string" ? Buffer.from(v, "utf8") : v;

/**
 * Record an edit someone else already made (an agent's own Edit/Write tool seen by a hook): one
 * operation, with diff, reverse diff and pre/post images, exactly as the ledger's own tools
 * record theirs. The file itself is not touched.
 */
export async function recordEdit(options: RecordEditOptions): Promise<RecordEditResult> {
  const started = performance.now();
  const target = resolveWorkspacePath(options.root, options.file);
  const onDisk = statMode(target.abs);
  const afterMode = options.afterMode ?? onDisk ?? "100644";
  const beforeMode = options.beforeMode ?? afterMode;
  const before = bytesOf(options.before);
  const after = bytesOf(options.after);
  const edit: FileEdit = {
    oldPath: before === null ? null : target.rel,
    newPath: after === null ? null : target.rel,
    before: before === null ? null : { bytes: before, mode: beforeMode },
    after: after === null ? null : { bytes: after, mode: afterMode },
  };
  if (!isRealChange(edit)) return { snapshotId: null, affectedFiles: [], diff: "" };
  const paths = ledgerPaths(options.root);
  return withLedgerWriter(options, `recordEdit ${options.tool}`, () => {
    // The edit happened already: it is recorded whatever the state (never "file changed, no
    // record"), and says so when it was made in the past. (PreToolUse blocks edit tools while a
    // transition awaits recover.)
    const record = buildOperationRecord({
      root: paths.root,
      tool: options.tool,
      description: options.description ?? `${options.tool} on ${target.rel}`,
      toolParams: options.toolParams ?? {},
      edits: [edit],
      ...timelineNow(options.root),
      executionTimeMs:
        options.executionTimeMs ?? Math.round((performance.now() - started) * 100) / 100,
      ...(options.sessionId === undefined ? {} : { sessionId: options.sessionId }),
      ...(options.clock === undefined ? {} : { clock: options.clock }),
      ...(options.random === undefined ? {} : { random: options.random }),
    });
    persistOperation(paths, record, [edit], {
      clock: options.clock ?? systemClock,
      event: "edit.recorded",
    });
    return { snapshotId: record.id, affectedFiles: record.affectedFiles, diff: record.diff };
  });
}

/** Where the recorded edit landed; a state.json that cannot be read never stops the record. */
function timelineNow(root: string): { timeline?: Timeline } {
  try {
    return { timeline: timelineOf(readState(workspacePaths(root))) };
  } catch {
    return {};
  }
}
