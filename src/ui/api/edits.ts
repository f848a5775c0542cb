import type { Hono } from "hono";
import { z } from "zod";
import {
  getEditHistory,
  getOperation,
  type OperationRecord,
  readSnapshotDiff,
  revertOperation,
} from "../../ledger/index.ts";
import type { UiContext } from "../context.ts";
import { readBody, runAction } from "./actions.ts";
import { runCliAction } from "./cli-action.ts";
import { PageQuerySchema, parseQuery } from "./paging.ts";

const FormatQuery = z.object({
  format: z.enum(["unified", "context", "git"]).default("unified"),
});

// The ledger pages history itself: its cursor is the ledger's, not a list offset.
const HistoryQuery = z.object({
  limit: PageQuerySchema.shape.limit,
  cursor: z.string().max(200).optional(),
  path: z.string().min(1).max(4096),
});

/** `timewarp revert ID [--to ID] [--dry-run] [--force]` as a body. */
const RevertBody = z
  .object({
    dry_run: z.boolean().default(false),
    force: z.boolean().default(false),
    to: z.string().min(1).max(200).optional(),
  })
  .strict();

/** The ledger's own page size cap (`getEditHistory` takes 1..100). */
const HISTORY_PAGE_MAX = 100;

/**
 * The edit view: one ledger operation (`/api/edits/:id`, its diff exactly as `timewarp history
 * show ID --json` gives it in the same `format`), the history of one of its paths, and revert
 * (`POST /api/edits/:id/revert`, the CLI's `timewarp revert ID --json` document).
 */
export function editRoutes(api: Hono, ctx: UiContext): void {
  const lctx = { root: ctx.root, clock: ctx.clock };

  api.get("/edits/:id", (c) => {
    const { format } = parseQuery(FormatQuery, c.req.query());
    const snapshotId = c.req.param("id");
    const shown = readSnapshotDiff(lctx, { snapshotId, format });
    return c.json({
      ...describeOperation(getOperation(lctx, { snapshotId })),
      format,
      diff: shown.diff,
    });
  });

  api.get("/edits/:id/history", (c) => {
    const q = parseQuery(HistoryQuery, c.req.query());
    const h = getEditHistory(lctx, {
      limit: Math.min(q.limit, HISTORY_PAGE_MAX),
      fileFilter: literalGlob(q.path),
      cursor: q.cursor,
    });
    return c.json({
      path: q.path,
      items: h.history.map((i) => ({
        id: i.id,
        timestamp: i.timestamp,
        tool: i.tool,
        description: i.description,
        affected_files: i.affectedFiles,
        lines_changed: i.metadata.linesChanged,
        timeline: i.timeline ?? "present",
      })),
      next: h.pagination.nextCursor ?? null,
      total: h.pagination.total,
    });
  });

  api.post("/edits/:id/revert", async (c) => {
    const body = await readBody(c, RevertBody);
    const snapshotId = c.req.param("id");
    if (body.dry_run)
      return c.json(
        await revertOperation(lctx, {
          snapshotId,
          targetSnapshot: body.to,
          dryRun: true,
          force: body.force,
        }),
      );
    const args = ["revert", snapshotId, ...(body.to === undefined ? [] : ["--to", body.to])];
    const result = await runAction(ctx, () =>
      runCliAction(ctx, body.force === true ? [...args, "--force"] : args),
    );
    return c.json(result);
  });
}

/** Where an edit came from, by its tool: an agent's own tool, its shell, timewarp's tools. */
function sourceOf(tool: string): "agent" | "shell" | "timewarp" | "revert" | "rewind" {
  if (tool === "shell") return "shell";
  if (tool === "ReverseOp") return "revert";
  if (tool === "Rewind") return "rewind";
  if (/^(Apply[A-Za-z]+|Delete|CreateDirectory)$/.test(tool)) return "timewarp";
  return "agent";
}

/** An operation record for the page, snake_case, without its (large) diffs. */
function describeOperation(r: OperationRecord) {
  return {
    id: r.id,
    timestamp: r.timestamp,
    description: r.description,
    tool: r.tool,
    source: sourceOf(r.tool),
    session_id: r.context.sessionId ?? null,
    tool_params: r.context.toolParams,
    affected_files: r.affectedFiles,
    files: r.files.map((f) => ({
      old_path: f.oldPath,
      new_path: f.newPath,
      before: f.before,
      after: f.after,
    })),
    directories: r.directories,
    stats: {
      files_size_bytes: r.metadata.filesSizeBytes,
      lines_changed: r.metadata.linesChanged,
      lines_added: r.metadata.linesAdded,
      lines_removed: r.metadata.linesRemoved,
      execution_time_ms: r.metadata.executionTimeMs,
    },
    reverts: r.reverts ?? [],
    timeline: r.timeline ?? "present",
    travel:
      r.travel === undefined
        ? null
        : { snapshot_id: r.travel.snapshotId, backup_id: r.travel.backupId },
  };
}

/** A path as a picomatch glob matching only itself (its metacharacters escaped). */
function literalGlob(path: string): string {
  return path.replace(/[\\*?[\]{}()!+@|^$]/g, (ch) => `\\${ch}`);
}
