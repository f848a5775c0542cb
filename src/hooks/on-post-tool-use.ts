import { lstatSync, readFileSync } from "node:fs";
import { join } from "node:path";
import {
  appendEvent,
  errnoCode,
  type GitFileMode,
  gitFileMode,
  workspacePaths,
} from "../core/index.ts";
import type { RecordedFile } from "../ledger/index.ts";
import type { HookOutcome } from "./hook-outcome.ts";
import { pendingFile } from "./hook-paths.ts";
import { capturedBytes, readPendingCapture, removePendingCapture } from "./pending-capture.ts";
import type { HookContext } from "./run-hook.ts";
import { editTargets, toolKind } from "./tool-kinds.ts";

/** Shell-made changes above this size, or with a NUL byte, are not put in the ledger (binary). */
const MAX_SHELL_TEXT_BYTES = 2 * 1024 * 1024;

function isText(bytes: Uint8Array | null): boolean {
  if (bytes === null) return true;
  if (bytes.length > MAX_SHELL_TEXT_BYTES) return false;
  // git's heuristic: a NUL byte in the first 8000 bytes means binary.
  return !bytes.subarray(0, 8000).includes(0);
}

function readNow(root: string, path: string): { bytes: Buffer | null; mode: GitFileMode } {
  const abs = join(root, path);
  try {
    const st = lstatSync(abs);
    if (!st.isFile()) return { bytes: null, mode: "100644" };
    return { bytes: readFileSync(abs), mode: gitFileMode(st.mode) };
  } catch (error) {
    const code = errnoCode(error);
    if (code === "ENOENT" || code === "ENOTDIR") return { bytes: null, mode: "100644" };
    throw error;
  }
}

const gitMode = (mode: number | null): GitFileMode | undefined =>
  mode === null ? undefined : gitFileMode(mode);

/**
 * PostToolUse. After an edit tool: one ledger record for the call, with the pre-image of each
 * file PreToolUse captured and the file as it is now. After a shell tool: a stat-cache rescan against the
 * baseline PreToolUse took; the changed text files go into the ledger as one operation of tool
 * `shell` (the command is one operation, whatever it touched), and a `shell.changed` event lists
 * them all. This is how edits made through the shell (sed -i, a
 * code generator, git checkout) become undoable like any other.
 */
export async function onPostToolUse(ctx: HookContext): Promise<HookOutcome> {
  const kind = toolKind(ctx.payload.tool_name);
  const tool = ctx.payload.tool_name ?? "";
  if (kind === "other") return { kind: "ok", summary: `${tool}: not an edit or shell tool` };
  const file = pendingFile(ctx.root, ctx.payload);
  const capture = readPendingCapture(file);
  const toolParams =
    typeof ctx.payload.tool_input === "object"
      ? ctx.payload.tool_input
      : { input: ctx.payload.tool_input ?? null };
  const common = {
    root: ctx.root,
    clock: ctx.clock,
    random: ctx.random,
    sessionId: ctx.payload.session_id,
  };

  if (kind === "edit") {
    if (capture === null) {
      const named = editTargets(ctx.payload, ctx.root).paths;
      return {
        kind: "failed",
        summary: `${tool}: no pre-image`,
        message: `no pre-image for ${tool} on ${named.join(", ") || "(no file named)"}: PreToolUse did not run for this call (is the PreToolUse hook installed?); the edit was not recorded`,
      };
    }
    const { recordEdits } = await import("../ledger/index.ts");
    const skipped: string[] = [];
    const files: RecordedFile[] = [];
    for (const f of capture.files) {
      if (f.skipped !== null) {
        skipped.push(`${f.path} (${f.skipped})`);
        continue;
      }
      const now = readNow(ctx.root, f.path);
      const beforeMode = gitMode(f.mode);
      files.push({
        file: f.path,
        before: f.exists ? capturedBytes(f) : null,
        after: now.bytes,
        afterMode: now.mode,
        ...(beforeMode !== undefined ? { beforeMode } : {}),
      });
    }
    // One tool call, one operation (an apply_patch over three files is one revert).
    const result = await recordEdits({ ...common, files, tool, toolParams });
    for (const r of result.refused) skipped.push(`${r.file} (${r.message})`);
    removePendingCapture(file);
    const ops = result.snapshotId === null ? [] : [result.snapshotId];
    const note = skipped.length > 0 ? `; not recorded: ${skipped.join(", ")}` : "";
    const summary = `${tool}: ${ops.length} ledger record(s) ${ops.join(" ")}${note}`;
    // A warning PreToolUse left for the model (Gemini CLI): delivered here, with the capture gone.
    return capture.warning !== undefined
      ? { kind: "warn", summary, reason: capture.warning }
      : { kind: "ok", summary };
  }

  const { rescanAfterShell } = await import("./shell-scan.ts");
  const scan = rescanAfterShell(ctx.root, capture?.baseline_manifest ?? null);
  removePendingCapture(file);
  if (scan.changes.length === 0) return { kind: "ok", summary: `${tool}: no file changed` };
  const { recordEdits } = await import("../ledger/index.ts");
  const { createObjectStore } = await import("../store/index.ts");
  const store = createObjectStore(workspacePaths(ctx.root).objects);
  const read = (oid: string | null): Buffer | null | undefined => {
    if (oid === null) return null;
    return store.has(oid) ? store.read(oid) : undefined;
  };
  const command =
    typeof toolParams.command === "string"
      ? toolParams.command
      : JSON.stringify(toolParams.command ?? "");
  const notRecorded: string[] = [];
  const files: RecordedFile[] = [];
  for (const change of scan.changes) {
    const before = read(change.before);
    const after = read(change.after);
    if (before === undefined || after === undefined) {
      notRecorded.push(`${change.path} (content not in the object store)`);
      continue;
    }
    if (!isText(before) || !isText(after)) {
      notRecorded.push(`${change.path} (binary or large)`);
      continue;
    }
    files.push({ file: change.path, before, after });
  }
  // One command, one operation: its files share one record and one diff, and one revert undoes
  // the command. A path the ledger refuses (now below a symlink, say) must not cost the others.
  const result = await recordEdits({
    ...common,
    files,
    tool: "shell",
    // the history shows the tool beside it: the command alone
    description: command.length > 200 ? `${command.slice(0, 200)}…` : command,
    toolParams: { ...toolParams, agent_tool: tool },
  });
  for (const r of result.refused) notRecorded.push(`${r.file} (${r.message})`);
  const ops = result.snapshotId === null ? [] : [result.snapshotId];
  appendEvent(
    workspacePaths(ctx.root).events,
    "shell.changed",
    {
      files: scan.changes.map((c) => c.path),
      session_id: ctx.payload.session_id,
      tool,
      operations: ops,
      not_recorded: notRecorded,
      baseline_moved: scan.baselineMoved,
    },
    ctx.clock,
  );
  const note = notRecorded.length > 0 ? `; not recorded: ${notRecorded.join(", ")}` : "";
  const summary = `${tool}: ${scan.changes.length} file(s) changed, ${ops.length} ledger record(s)${note}`;
  // A shell command is not announced file by file, so PreToolUse cannot stop it: its changes
  // are scored here, after the fact, and the model is told (with the undo) rather than left
  // believing a blacklisted file is untouched (issue 17).
  const { checkGoal } = await import("./goal-guard.ts");
  const verdict = await checkGoal(
    ctx,
    scan.changes.map((c) => c.path),
  );
  if (verdict.action === "none" || verdict.action === "ok") return { kind: "ok", summary };
  const undo = ops.length > 0 ? `; undo it with \`timewarp revert ${ops[0]}\`` : "";
  return {
    kind: "warn",
    summary: `${summary}; drift ${verdict.action === "rollback" ? "violation" : "warning"}`,
    reason:
      `timewarp drift ${verdict.action === "rollback" ? "violation" : "warning"}: this command changed ` +
      `${scan.changes.map((c) => c.path).join(", ")}: ${verdict.reasons.join("; ")}${undo}`,
  };
}
