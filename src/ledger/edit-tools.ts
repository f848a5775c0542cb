import { readdirSync } from "node:fs";
import { join } from "node:path";
import { ErrorCode, isTimewarpError, pathTextOf, TimewarpError, toFsPath } from "../core/index.ts";
import { applyFilePatch, parsePatch } from "../diff/index.ts";
import { withLedgerWriter } from "./complete-pending-operation.ts";
import type { EditResult, LedgerContext } from "./ledger-context.ts";
import { ledgerPaths } from "./ledger-paths.ts";
import { applyEditBlockToText } from "./match-edit-block.ts";
import { applyRangedEditToText } from "./plan-ranged-edit.ts";
import { assertWritable, withCreatedParents } from "./plan-workspace-writes.ts";
import { diffOfEdits, type FileEdit, isRealChange } from "./record-operation.ts";
import { resolveWorkspacePath } from "./safe-path.ts";
import type { DirectoryChange } from "./schema.ts";
import { type FileState, isDirectory, readFileState } from "./workspace-files.ts";
import { assertLedgerWritable, assertNotVcsPath, VCS_DIRS } from "./write-guard.ts";
import { writeOperation } from "./write-operation.ts";

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
 * writers never interleave a read-modify-write), check that every write can succeed, then —
 * unless dryRun — apply and record it as one write-ahead operation (`writeOperation`: all of
 * it, or nothing and a coded error). dryRun runs the same plan and checks, takes no lock and
 * creates nothing, not even `.timewarp/`.
 */
async function runEdit(ctx: LedgerContext, options: RunEditOptions): Promise<EditResult> {
  const started = performance.now();
  const prepare = () => {
    const plan = options.plan();
    const edits = plan.edits.filter(isRealChange);
    const directories = withCreatedParents(ctx.root, edits, plan.directories);
    assertWritable(ctx.root, edits, directories);
    const warning = askGuard(ctx, options, edits, directories);
    return { message: `${plan.message}${warning}`, edits, directories };
  };
  if (options.dryRun) {
    const { message, edits, directories } = prepare();
    return {
      success: true,
      message: `dry run: ${message}`,
      previewDiff: diffOfEdits(edits),
      affectedFiles: affectedOf(edits, directories),
      dryRun: true,
    };
  }
  const paths = ledgerPaths(ctx.root);
  // Before the lock (no store is made for a refused edit) and again under it (a travel may have
  // started meanwhile).
  assertLedgerWritable(ctx.root);
  return withLedgerWriter(ctx, options.tool, () => {
    const timeline = assertLedgerWritable(ctx.root);
    const { message, edits, directories } = prepare();
    if (edits.length === 0 && directories.length === 0) {
      return {
        success: true,
        message: `nothing changed: ${message}`,
        previewDiff: "",
        affectedFiles: [],
        dryRun: false,
      };
    }
    const record = writeOperation(ctx, paths, {
      tool: options.tool,
      description: options.description,
      toolParams: options.toolParams,
      edits,
      directories,
      timeline,
      event: "edit.applied",
      started,
    });
    return {
      success: true,
      message:
        timeline.timeline === "past"
          ? `${message} (in the past, at ${timeline.snapshot_id}: \`return\` keeps it as a patch)`
          : message,
      snapshotId: record.id,
      previewDiff: record.diff,
      affectedFiles: record.affectedFiles,
      dryRun: false,
      ...(timeline.timeline === "past" ? { timeline: "past" as const } : {}),
    };
  });
}

/** The context's guard on a planned edit: throws GUARD_BLOCKED, or returns a warning suffix. */
function askGuard(
  ctx: LedgerContext,
  options: RunEditOptions,
  edits: FileEdit[],
  directories: DirectoryChange[],
): string {
  if (ctx.guard === undefined || (edits.length === 0 && directories.length === 0)) return "";
  const paths = affectedOf(edits, directories);
  const verdict = ctx.guard({
    tool: options.tool,
    paths,
    diff: diffOfEdits(edits),
    dryRun: options.dryRun,
  });
  if (verdict.action === "rollback") {
    throw new TimewarpError(
      ErrorCode.GUARD_BLOCKED,
      `the drift guards refused this ${options.tool} on ${paths.join(", ")}: ${verdict.reasons.join("; ")} (nothing was written)`,
      { data: { tool: options.tool, paths, reasons: verdict.reasons } },
    );
  }
  return verdict.action === "warn" ? ` (drift guard warning: ${verdict.reasons.join("; ")})` : "";
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

/** The plan of an edit that rewrites one existing text file: its text through `edit`. */
function planTextEdit(
  target: { abs: string; rel: string },
  edit: (text: string) => string,
  message: string,
): EditPlan {
  const before = mustExist(readFileState(target.abs, target.rel), target.rel);
  const text = edit(decodeText(before.bytes, target.rel));
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
    message,
  };
}

/** What every edit tool takes besides its own input. */
interface EditFlags {
  description?: string;
  dryRun?: boolean;
  /** Write inside a version-control folder (`.git`, …) anyway. */
  force?: boolean;
}

/** The workspace path an edit names, refused inside a version-control folder unless forced. */
function editTarget(ctx: LedgerContext, params: { path: string; force?: boolean }) {
  const target = resolveWorkspacePath(ctx.root, params.path);
  assertNotVcsPath(target.rel, params.force === true);
  return target;
}

/** ApplyEditBlock: replace the one exact occurrence of `searchBlock` in `path` by `replaceBlock`. */
export async function applyEditBlock(
  ctx: LedgerContext,
  params: {
    path: string;
    searchBlock: string;
    replaceBlock: string;
  } & EditFlags,
): Promise<EditResult> {
  const target = editTarget(ctx, params);
  return runEdit(ctx, {
    tool: "ApplyEditBlock",
    description: params.description ?? `Edit block in ${target.rel}`,
    toolParams: {
      path: target.rel,
      searchBlock: params.searchBlock,
      replaceBlock: params.replaceBlock,
    },
    dryRun: params.dryRun === true,
    plan: () =>
      planTextEdit(
        target,
        (text) =>
          applyEditBlockToText({
            text,
            search: params.searchBlock,
            replace: params.replaceBlock,
            path: target.rel,
          }),
        `replaced one block in ${target.rel}`,
      ),
  });
}

/** ApplyWholeFileEdit: set the whole content of `path` (created if absent; bytes or UTF-8 text). */
export async function applyWholeFileEdit(
  ctx: LedgerContext,
  params: {
    path: string;
    content: string | Uint8Array;
  } & EditFlags,
): Promise<EditResult> {
  const target = editTarget(ctx, params);
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
  } & EditFlags,
): Promise<EditResult> {
  const target = editTarget(ctx, params);
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
    plan: () =>
      planTextEdit(
        target,
        (text) =>
          applyRangedEditToText({
            text,
            startLine: params.startLine,
            endLine: params.endLine,
            content: params.content,
            path: target.rel,
          }),
        `replaced lines ${params.startLine}-${params.endLine} of ${target.rel}`,
      ),
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
  // Names by their exact bytes (a name that is not UTF-8 keeps them, issue 16 §7); a patch may
  // create, change or delete a symlink, as git's can.
  const nameOf = (text: string | null, bytes: Uint8Array | null | undefined) =>
    text === null ? null : bytes ? pathTextOf(bytes) : text;
  const resolve = (name: string | null) =>
    name === null ? null : resolveWorkspacePath(ctx.root, name, { links: true });
  const resolved = patches.map((p) => ({
    patch: p,
    old: resolve(nameOf(p.oldPath, p.oldPathBytes)),
    new: resolve(nameOf(p.newPath, p.newPathBytes)),
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
        overlay.has(rel) ? (overlay.get(rel) ?? null) : readFileState(abs, rel, { links: true });
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
          r.patch.newMode === "100755" ||
          r.patch.newMode === "100644" ||
          r.patch.newMode === "120000"
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
      return {
        edits,
        directories: emptiedDirectories(ctx.root, overlay),
        message: `applied a diff to ${originals.size} file(s)`,
      };
    },
  });
}

/**
 * The folders a patch leaves empty by deleting or renaming away their last file, deepest first:
 * `git apply` removes them, so the ledger does too (and records it, so a revert brings them back).
 */
function emptiedDirectories(
  root: string,
  overlay: Map<string, FileState | null>,
): DirectoryChange[] {
  const removed = new Set<string>();
  const live = (dir: string): boolean => {
    let names: Buffer[] = [];
    try {
      names = readdirSync(toFsPath(join(root, dir)), { encoding: "buffer" });
    } catch {
      return true;
    }
    for (const n of names) {
      const child = `${dir}/${pathTextOf(n)}`;
      if (overlay.has(child) ? overlay.get(child) !== null : !removed.has(child)) return true;
    }
    for (const [p, s] of overlay)
      if (s !== null && p.startsWith(`${dir}/`) && !p.slice(dir.length + 1).includes("/"))
        return true;
    return false;
  };
  const candidates = new Set<string>();
  for (const [p, s] of overlay) {
    if (s !== null) continue;
    for (let i = p.lastIndexOf("/"); i > 0; i = p.lastIndexOf("/", i - 1))
      candidates.add(p.slice(0, i));
  }
  const depth = (p: string) => p.split("/").length;
  for (const dir of [...candidates].sort((a, b) => depth(b) - depth(a))) {
    if (isDirectory(join(root, dir)) && !live(dir)) removed.add(dir);
  }
  return [...removed]
    .sort((a, b) => depth(b) - depth(a))
    .map((path) => ({ path, action: "removed" as const }));
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
        const abs = toFsPath(join(ctx.root, rel));
        // Names by their bytes (`pathTextOf`): one that is not UTF-8 is still found and recorded.
        for (const entry of readdirSync(abs, { withFileTypes: true, encoding: "buffer" })
          .map((e) => ({ name: pathTextOf(e.name), isDirectory: () => e.isDirectory() }))
          .sort((a, b) => (a.name < b.name ? -1 : 1))) {
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
  params: { path: string } & EditFlags,
): Promise<EditResult> {
  const target = editTarget(ctx, params);
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
