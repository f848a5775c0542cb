import {
  type GitFileMode,
  isTimewarpError,
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

/** One file of an edit made already: its content before and after. */
export interface RecordedFile {
  /** Workspace-relative (or absolute inside the workspace) path of the edited file. */
  file: string;
  /** Content before the edit; null when the edit created the file. */
  before: string | Uint8Array | null;
  /** Content after the edit; null when the edit deleted the file. */
  after: string | Uint8Array | null;
  /** Git modes; default: the file's current mode on disk (or 100644), for both sides. */
  beforeMode?: GitFileMode;
  afterMode?: GitFileMode;
}

export interface RecordEditOptions extends LedgerContext, RecordedFile {
  /** The tool that made the edit, e.g. "Edit", "Write", "apply_patch". */
  tool: string;
  description?: string;
  /** The tool's own input, kept in `context.toolParams`. */
  toolParams?: Record<string, unknown>;
  /** How long the edit took, if the caller knows (default: the time spent recording). */
  executionTimeMs?: number;
}

export interface RecordEditResult {
  /** The operation id; null when before and after are identical (nothing is recorded). */
  snapshotId: string | null;
  affectedFiles: string[];
  diff: string;
}

export interface RecordEditsOptions extends Omit<RecordEditOptions, keyof RecordedFile> {
  /** Every file the one tool call changed (one shell command's several files, say). */
  files: RecordedFile[];
}

export interface RecordEditsResult extends RecordEditResult {
  /** Files the ledger refuses (a path escaping the workspace or below a symlink), not recorded. */
  refused: { file: string; code: string; message: string }[];
}

const bytesOf = (v: string | Uint8Array | null) =>
  v === null ? null : typeof v === "string" ? Buffer.from(v, "utf8") : v;

/**
 * Record an edit someone else already made (an agent's own Edit/Write tool seen by a hook): one
 * operation, with diff, reverse diff and pre/post images, exactly as the ledger's own tools
 * record theirs. The file itself is not touched. A path the ledger refuses throws (UNSAFE_PATH,
 * INVALID_INPUT).
 */
export async function recordEdit(options: RecordEditOptions): Promise<RecordEditResult> {
  const { file, before, after, beforeMode, afterMode, ...rest } = options;
  const one: RecordedFile = {
    file,
    before,
    after,
    beforeMode,
    afterMode,
  };
  const r = await recordFiles({ ...rest, files: [one] }, "throw");
  return { snapshotId: r.snapshotId, affectedFiles: r.affectedFiles, diff: r.diff };
}

/**
 * `recordEdit` for one tool call that changed several files (a shell command): one operation
 * with a multi-file diff, so one `ReverseOp` undoes the call. A path the ledger refuses is
 * listed in `refused` and the others are still recorded.
 */
export function recordEdits(options: RecordEditsOptions): Promise<RecordEditsResult> {
  return recordFiles(options, "list");
}

async function recordFiles(
  options: RecordEditsOptions,
  refusal: "throw" | "list",
): Promise<RecordEditsResult> {
  const started = performance.now();
  const refused: RecordEditsResult["refused"] = [];
  const edits: FileEdit[] = [];
  for (const f of options.files) {
    let target: ReturnType<typeof resolveWorkspacePath>;
    try {
      target = resolveWorkspacePath(options.root, f.file);
    } catch (error) {
      if (refusal === "throw" || !isTimewarpError(error)) throw error;
      refused.push({ file: f.file, code: error.code, message: error.message });
      continue;
    }
    const onDisk = statMode(target.abs);
    const afterMode = f.afterMode ?? onDisk ?? "100644";
    const beforeMode = f.beforeMode ?? afterMode;
    const before = bytesOf(f.before);
    const after = bytesOf(f.after);
    const edit: FileEdit = {
      oldPath: before === null ? null : target.rel,
      newPath: after === null ? null : target.rel,
      before: before === null ? null : { bytes: before, mode: beforeMode },
      after: after === null ? null : { bytes: after, mode: afterMode },
    };
    if (isRealChange(edit)) edits.push(edit);
  }
  if (edits.length === 0) return { snapshotId: null, affectedFiles: [], diff: "", refused };
  const paths = ledgerPaths(options.root);
  const named = edits.map((e) => (e.newPath ?? e.oldPath) as string);
  return withLedgerWriter(options, `recordEdit ${options.tool}`, () => {
    // The edit happened already: it is recorded whatever the state (never "file changed, no
    // record"), and says so when it was made in the past. (PreToolUse blocks edit tools while a
    // transition awaits recover.)
    const record = buildOperationRecord({
      root: paths.root,
      tool: options.tool,
      description: options.description ?? `${options.tool} on ${named.join(", ")}`,
      toolParams: options.toolParams ?? {},
      edits,
      ...timelineNow(options.root),
      executionTimeMs:
        options.executionTimeMs ?? Math.round((performance.now() - started) * 100) / 100,
      sessionId: options.sessionId,
      clock: options.clock,
      random: options.random,
    });
    persistOperation(paths, record, edits, {
      clock: options.clock ?? systemClock,
      event: "edit.recorded",
    });
    return {
      snapshotId: record.id,
      affectedFiles: record.affectedFiles,
      diff: record.diff,
      refused,
    };
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
