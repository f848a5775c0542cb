import { mkdirSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { ErrorCode, isTimewarpError, systemClock, TimewarpError } from "../core/index.ts";
import { applyFilePatch, parsePatch } from "../diff/index.ts";
import type { EditResult, LedgerContext } from "./ledger-context.ts";
import { withLedgerLock } from "./ledger-lock.ts";
import { ledgerPaths } from "./ledger-paths.ts";
import { applyEditBlockToText } from "./match-edit-block.ts";
import { applyRangedEditToText } from "./plan-ranged-edit.ts";
import {
  buildOperationRecord,
  diffOfEdits,
  type FileEdit,
  isRealChange,
  persistOperation,
} from "./record-operation.ts";
import { resolveWorkspacePath } from "./safe-path.ts";
import type { DirectoryChange } from "./schema.ts";
import {
  type FileState,
  isDirectory,
  readFileState,
  removeEmptyDirectory,
  writeFileState,
} from "./workspace-files.ts";
import { assertLedgerWritable, assertNotVcsPath, VCS_DIRS } from "./write-guard.ts";

/** What a tool plans from the current tree, before anything is written. */
interface EditPlan {
  edits: FileEdit[];
  directories: DirectoryChange[];
  message: string;
}

interface RunEditOptions {
  tool: string;
  description: string;
  toolParams: Record<string, unknown>;
  dryRun: boolean;
  plan: () => EditPlan;
}

/**
 * The one path every edit tool takes: plan from the current tree (under the ledger lock, so two
 * writers never interleave a read-modify-write), then — unless dryRun — write the files and
 * record one operation. dryRun takes no lock and creates nothing, not even `.timewarp/`.
 */
async function runEdit(ctx: LedgerContext, options: RunEditOptions): Promise<EditResult> {
  const started = performance.now();
  if (options.dryRun) {
    const plan = options.plan();
    const edits = plan.edits.filter(isRealChange);
    return {
      success: true,
      message: `dry run: ${plan.message}`,
      previewDiff: diffOfEdits(edits),
      affectedFiles: affectedOf(edits, plan.directories),
      dryRun: true,
    };
  }
  const paths = ledgerPaths(ctx.root);
  // Before the lock (no store is made for a refused edit) and again under it (a travel may have
  // started meanwhile).
  assertLedgerWritable(ctx.root);
  return withLedgerLock(ctx.root, options.tool, () => {
    const timeline = assertLedgerWritable(ctx.root);
    const plan = withCreatedParents(ctx.root, options.plan());
    const edits = plan.edits.filter(isRealChange);
    if (edits.length === 0 && plan.directories.length === 0) {
      return {
        success: true,
        message: `nothing changed: ${plan.message}`,
        previewDiff: "",
        affectedFiles: [],
        dryRun: false,
      };
    }
    writeEdits(ctx.root, edits, plan.directories);
    const record = buildOperationRecord({
      root: paths.root,
      tool: options.tool,
      description: options.description,
      toolParams: options.toolParams,
      edits,
      directories: plan.directories,
      executionTimeMs: Math.round((performance.now() - started) * 100) / 100,
      timeline,
      ...(ctx.sessionId === undefined ? {} : { sessionId: ctx.sessionId }),
      ...(ctx.clock === undefined ? {} : { clock: ctx.clock }),
      ...(ctx.random === undefined ? {} : { random: ctx.random }),
    });
    persistOperation(paths, record, edits, {
      clock: ctx.clock ?? systemClock,
      event: "edit.applied",
    });
    return {
      success: true,
      message:
        timeline.timeline === "past"
          ? `${plan.message} (in the past, at ${timeline.snapshot_id}: \`return\` keeps it as a patch)`
          : plan.message,
      snapshotId: record.id,
      previewDiff: record.diff,
      affectedFiles: record.affectedFiles,
      dryRun: false,
      ...(timeline.timeline === "past" ? { timeline: "past" as const } : {}),
    };
  });
}

/**
 * Record the directories a file creation brings into being, so that reverting the creation
 * removes them again instead of leaving empty folders behind.
 */
function withCreatedParents(root: string, plan: EditPlan): EditPlan {
  const planned = new Set(
    plan.directories.filter((d) => d.action === "created").map((d) => d.path),
  );
  const extra: DirectoryChange[] = [];
  for (const e of plan.edits) {
    if (e.newPath === null || e.after === null) continue;
    const parts = e.newPath.split("/");
    for (let i = 1; i < parts.length; i++) {
      const rel = parts.slice(0, i).join("/");
      if (planned.has(rel) || isDirectory(join(root, rel))) continue;
      planned.add(rel);
      extra.push({ path: rel, action: "created" });
    }
  }
  if (extra.length === 0) return plan;
  extra.sort((a, b) => a.path.split("/").length - b.path.split("/").length);
  return { ...plan, directories: [...extra, ...plan.directories] };
}

function affectedOf(edits: FileEdit[], dirs: DirectoryChange[]): string[] {
  const out = new Set<string>();
  for (const e of edits) {
    if (e.oldPath !== null) out.add(e.oldPath);
    if (e.newPath !== null) out.add(e.newPath);
  }
  for (const d of dirs) out.add(d.path);
  return [...out];
}

/**
 * Apply planned edits to the tree: created directories (shallowest first), file writes and
 * deletions (each atomic), then removed directories (deepest first, as planned).
 */
export function writeEdits(root: string, edits: FileEdit[], dirs: DirectoryChange[]): void {
  for (const d of dirs)
    if (d.action === "created") mkdirSync(join(root, d.path), { recursive: true });
  for (const e of edits) {
    if (e.newPath !== null) writeFileState(join(root, e.newPath), e.newPath, e.after);
  }
  for (const e of edits) {
    if (e.oldPath !== null && e.oldPath !== e.newPath)
      writeFileState(join(root, e.oldPath), e.oldPath, null);
  }
  for (const d of dirs) {
    if (d.action === "removed" && !removeEmptyDirectory(join(root, d.path))) {
      throw new TimewarpError(
        ErrorCode.IO_ERROR,
        `could not remove directory ${d.path}: not empty`,
        {
          data: { path: d.path },
        },
      );
    }
  }
}

const toBytes = (content: string | Uint8Array): Uint8Array =>
  typeof content === "string" ? Buffer.from(content, "utf8") : content;

function decodeText(bytes: Uint8Array, rel: string): string {
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw new TimewarpError(
      ErrorCode.INVALID_INPUT,
      `${rel} is not UTF-8 text; use ApplyWholeFileEdit for binary files`,
      {
        data: { path: rel },
      },
    );
  }
}

function mustExist(state: FileState | null, rel: string): FileState {
  if (state === null) {
    throw new TimewarpError(ErrorCode.NOT_FOUND, `${rel} does not exist in the workspace`, {
      data: { path: rel },
    });
  }
  return state;
}

/** ApplyEditBlock: replace the one exact occurrence of `searchBlock` in `path` by `replaceBlock`. */
export async function applyEditBlock(
  ctx: LedgerContext,
  params: {
    path: string;
    searchBlock: string;
    replaceBlock: string;
    description?: string;
    dryRun?: boolean;
    /** Write inside a version-control folder (`.git`, …) anyway. */
    force?: boolean;
  },
): Promise<EditResult> {
  const target = resolveWorkspacePath(ctx.root, params.path);
  assertNotVcsPath(target.rel, params.force === true);
  return runEdit(ctx, {
    tool: "ApplyEditBlock",
    description: params.description ?? `Edit block in ${target.rel}`,
    toolParams: {
      path: target.rel,
      searchBlock: params.searchBlock,
      replaceBlock: params.replaceBlock,
    },
    dryRun: params.dryRun === true,
    plan: () => {
      const before = mustExist(readFileState(target.abs, target.rel), target.rel);
      const text = applyEditBlockToText({
        text: decodeText(before.bytes, target.rel),
        search: params.searchBlock,
        replace: params.replaceBlock,
        path: target.rel,
      });
      return {
        edits: [
          {
            oldPath: target.rel,
            newPath: target.rel,
            before,
            after: { bytes: toBytes(text), mode: before.mode },
          },
        ],
        directories: [],
        message: `replaced one block in ${target.rel}`,
      };
    },
  });
}

/** ApplyWholeFileEdit: set the whole content of `path` (created if absent; bytes or UTF-8 text). */
export async function applyWholeFileEdit(
  ctx: LedgerContext,
  params: {
    path: string;
    content: string | Uint8Array;
    description?: string;
    dryRun?: boolean;
    /** Write inside a version-control folder (`.git`, …) anyway. */
    force?: boolean;
  },
): Promise<EditResult> {
  const target = resolveWorkspacePath(ctx.root, params.path);
  assertNotVcsPath(target.rel, params.force === true);
  const bytes = toBytes(params.content);
  return runEdit(ctx, {
    tool: "ApplyWholeFileEdit",
    description: params.description ?? `Write ${target.rel}`,
    toolParams: { path: target.rel, contentBytes: bytes.length },
    dryRun: params.dryRun === true,
    plan: () => {
      if (isDirectory(target.abs)) {
        throw new TimewarpError(ErrorCode.INVALID_INPUT, `${target.rel} is a directory`, {
          data: { path: target.rel },
        });
      }
      const before = readFileState(target.abs, target.rel);
      return {
        edits: [
          {
            oldPath: before === null ? null : target.rel,
            newPath: target.rel,
            before,
            after: { bytes, mode: before?.mode ?? "100644" },
          },
        ],
        directories: [],
        message: `${before === null ? "created" : "rewrote"} ${target.rel} (${bytes.length} bytes)`,
      };
    },
  });
}

/** ApplyRangedEdit: replace lines `startLine..endLine` (1-based, inclusive) of `path` by `content`. */
export async function applyRangedEdit(
  ctx: LedgerContext,
  params: {
    path: string;
    startLine: number;
    endLine: number;
    content: string;
    description?: string;
    dryRun?: boolean;
    /** Write inside a version-control folder (`.git`, …) anyway. */
    force?: boolean;
  },
): Promise<EditResult> {
  const target = resolveWorkspacePath(ctx.root, params.path);
  assertNotVcsPath(target.rel, params.force === true);
  return runEdit(ctx, {
    tool: "ApplyRangedEdit",
    description:
      params.description ?? `Edit lines ${params.startLine}-${params.endLine} of ${target.rel}`,
    toolParams: {
      path: target.rel,
      startLine: params.startLine,
      endLine: params.endLine,
      content: params.content,
    },
    dryRun: params.dryRun === true,
    plan: () => {
      const before = mustExist(readFileState(target.abs, target.rel), target.rel);
      const text = applyRangedEditToText({
        text: decodeText(before.bytes, target.rel),
        startLine: params.startLine,
        endLine: params.endLine,
        content: params.content,
        path: target.rel,
      });
      return {
        edits: [
          {
            oldPath: target.rel,
            newPath: target.rel,
            before,
            after: { bytes: toBytes(text), mode: before.mode },
          },
        ],
        directories: [],
        message: `replaced lines ${params.startLine}-${params.endLine} of ${target.rel}`,
      };
    },
  });
}

/**
 * ApplyUnifiedDiff: apply a (multi-file, git or plain unified) diff. Every file is planned in
 * memory first; if any hunk does not apply, DIFF_APPLY_CONFLICT names the file and nothing is
 * written. Hunks may sit at an offset from their recorded line only where they match uniquely.
 */
export async function applyUnifiedDiff(
  ctx: LedgerContext,
  params: { diff: string; description?: string; dryRun?: boolean; force?: boolean },
): Promise<EditResult> {
  const patches = parsePatch(params.diff);
  if (patches.length === 0) {
    throw new TimewarpError(ErrorCode.INVALID_INPUT, "the diff contains no file changes");
  }
  const resolved = patches.map((p) => ({
    patch: p,
    old: p.oldPath === null ? null : resolveWorkspacePath(ctx.root, p.oldPath),
    new: p.newPath === null ? null : resolveWorkspacePath(ctx.root, p.newPath),
  }));
  for (const r of resolved)
    for (const side of [r.old, r.new])
      if (side !== null) assertNotVcsPath(side.rel, params.force === true);
  return runEdit(ctx, {
    tool: "ApplyUnifiedDiff",
    description: params.description ?? `Apply a diff to ${patches.length} file(s)`,
    toolParams: { diff: params.diff },
    dryRun: params.dryRun === true,
    plan: () => {
      // Later patches of the same diff see the result of earlier ones.
      const overlay = new Map<string, FileState | null>();
      const current = (rel: string, abs: string) =>
        overlay.has(rel) ? (overlay.get(rel) ?? null) : readFileState(abs, rel);
      const originals = new Map<string, FileState | null>();
      for (const r of resolved) {
        const rel = r.old?.rel ?? r.new?.rel ?? "";
        const beforeState = r.old === null ? null : current(r.old.rel, r.old.abs);
        if (r.old === null && r.new !== null && current(r.new.rel, r.new.abs) !== null) {
          throw new TimewarpError(
            ErrorCode.DIFF_APPLY_CONFLICT,
            `${r.new.rel}: the diff creates it, but it already exists`,
            {
              data: {
                path: r.new.rel,
                conflicts: [{ hunk: 0, header: "", reason: "file exists", expectedAt: 0 }],
              },
            },
          );
        }
        if (r.old !== null && beforeState === null) {
          throw new TimewarpError(
            ErrorCode.DIFF_APPLY_CONFLICT,
            `${r.old.rel}: the diff modifies it, but it does not exist`,
            {
              data: {
                path: r.old.rel,
                conflicts: [{ hunk: 0, header: "", reason: "file missing", expectedAt: 0 }],
              },
            },
          );
        }
        let afterBytes: Uint8Array | null;
        try {
          afterBytes = applyFilePatch(beforeState?.bytes ?? null, r.patch, {
            allowOffset: true,
            checkOid: false,
          });
        } catch (error) {
          if (isTimewarpError(error, "DIFF_APPLY_CONFLICT")) {
            throw new TimewarpError(ErrorCode.DIFF_APPLY_CONFLICT, `${rel}: ${error.message}`, {
              data: { ...error.data, path: rel },
              cause: error,
            });
          }
          throw error;
        }
        for (const side of [r.old, r.new]) {
          if (side !== null && !originals.has(side.rel))
            originals.set(side.rel, current(side.rel, side.abs));
        }
        const mode =
          r.patch.newMode === "100755" || r.patch.newMode === "100644"
            ? r.patch.newMode
            : (beforeState?.mode ?? "100644");
        if (r.old !== null && r.new !== null && r.old.rel !== r.new.rel)
          overlay.set(r.old.rel, null);
        if (r.new !== null)
          overlay.set(r.new.rel, afterBytes === null ? null : { bytes: afterBytes, mode });
        else if (r.old !== null) overlay.set(r.old.rel, null);
      }
      // One edit per touched path, from its state before the diff to its state after.
      const edits: FileEdit[] = [];
      for (const [rel, before] of originals) {
        const after = overlay.has(rel) ? (overlay.get(rel) ?? null) : before;
        edits.push({
          oldPath: before === null ? null : rel,
          newPath: after === null ? null : rel,
          before,
          after,
        });
      }
      return { edits, directories: [], message: `applied a diff to ${originals.size} file(s)` };
    },
  });
}

/** Delete: remove a file, or a directory with everything in it (each file recorded for the reverse). */
export async function deletePath(
  ctx: LedgerContext,
  params: { path: string; description?: string; dryRun?: boolean; force?: boolean },
): Promise<EditResult> {
  const target = resolveWorkspacePath(ctx.root, params.path);
  const force = params.force === true;
  assertNotVcsPath(target.rel, force);
  return runEdit(ctx, {
    tool: "Delete",
    description: params.description ?? `Delete ${target.rel}`,
    toolParams: { path: target.rel },
    dryRun: params.dryRun === true,
    plan: () => {
      if (!isDirectory(target.abs)) {
        const before = mustExist(readFileState(target.abs, target.rel), target.rel);
        return {
          edits: [{ oldPath: target.rel, newPath: null, before, after: null }],
          directories: [],
          message: `deleted ${target.rel}`,
        };
      }
      const edits: FileEdit[] = [];
      const dirs: DirectoryChange[] = [];
      const walk = (rel: string) => {
        const abs = join(ctx.root, rel);
        for (const entry of readdirSync(abs, { withFileTypes: true }).sort((a, b) =>
          a.name < b.name ? -1 : 1,
        )) {
          const childRel = `${rel}/${entry.name}`;
          // a nested repository inside the folder goes only when forced
          if (VCS_DIRS.includes(entry.name)) assertNotVcsPath(childRel, force);
          if (entry.isDirectory()) walk(childRel);
          else {
            const before = readFileState(join(ctx.root, childRel), childRel);
            if (before !== null)
              edits.push({ oldPath: childRel, newPath: null, before, after: null });
          }
        }
        dirs.push({ path: rel, action: "removed" });
      };
      walk(target.rel);
      return {
        edits,
        directories: dirs,
        message: `deleted ${target.rel}/ (${edits.length} files)`,
      };
    },
  });
}

/** CreateDirectory: create a directory and any missing parents (recorded, so a revert removes them). */
export async function createDirectory(
  ctx: LedgerContext,
  params: { path: string; description?: string; dryRun?: boolean; force?: boolean },
): Promise<EditResult> {
  const target = resolveWorkspacePath(ctx.root, params.path);
  assertNotVcsPath(target.rel, params.force === true);
  return runEdit(ctx, {
    tool: "CreateDirectory",
    description: params.description ?? `Create directory ${target.rel}`,
    toolParams: { path: target.rel },
    dryRun: params.dryRun === true,
    plan: () => {
      const parts = target.rel.split("/");
      const dirs: DirectoryChange[] = [];
      for (let i = 1; i <= parts.length; i++) {
        const rel = parts.slice(0, i).join("/");
        const abs = join(ctx.root, rel);
        if (isDirectory(abs)) continue;
        if (readFileState(abs, rel) !== null) {
          throw new TimewarpError(ErrorCode.NOT_A_DIRECTORY, `${rel} exists and is a file`, {
            data: { path: rel },
          });
        }
        dirs.push({ path: rel, action: "created" });
      }
      return {
        edits: [],
        directories: dirs,
        message: dirs.length === 0 ? `${target.rel} already exists` : `created ${target.rel}/`,
      };
    },
  });
}
