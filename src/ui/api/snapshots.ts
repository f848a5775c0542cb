import type { Hono } from "hono";
import picomatch from "picomatch";
import { z } from "zod";
import { type ManifestEntry, readManifest, readSnapshot } from "../../store/index.ts";
import {
  diffSnapshotFile,
  diffSnapshots,
  listSnapshotSummaries,
  readStatus,
  rewind,
  turnsAtSnapshot,
  undoRewind,
} from "../../timemachine/index.ts";
import type { UiContext } from "../context.ts";
import { readBody, runAction } from "./actions.ts";
import { runCliAction } from "./cli-action.ts";
import { PageQuerySchema, pageOf, parseQuery } from "./paging.ts";

/** `?to=` of a comparison: another snapshot's id, or the workspace now (absent or "workspace"). */
const ToQuery = z.object({ to: z.string().min(1).max(200).optional() });
const FilesQuery = PageQuerySchema.extend({ glob: z.string().max(1000).optional() });
const FileDiffQuery = ToQuery.extend({ path: z.string().min(1).max(4096) });
const DryRunBody = z.object({ dry_run: z.boolean().default(false) }).strict();
/** `timewarp rewind --undo [--force] [--dry-run]` as a body. */
const UndoRewindBody = z
  .object({ dry_run: z.boolean().default(false), force: z.boolean().default(false) })
  .strict();
/** `timewarp rewind TURN [--session ID] [--dry-run]` as a body. */
const RewindBody = z
  .object({
    turn: z.string().min(1).max(200),
    session_id: z.string().min(1).max(200).optional(),
    dry_run: z.boolean().default(false),
  })
  .strict();

const toOf = (to: string | undefined) => (to === undefined || to === "workspace" ? undefined : to);

/**
 * The snapshot views: the list (newest first, each row as `timewarp snapshot list --json` has
 * it), one snapshot (`snapshot show --json`, the turns it is the checkpoint of), its files from
 * the manifest (paged, by glob), `snapshot diff` against another snapshot or the workspace and
 * one path's text diff, the time machine's state (`timewarp status --json`), and the actions
 * travel, return and rewind: each with `dry_run` for the preview, then the CLI's `--json`.
 */
export function snapshotRoutes(api: Hono, ctx: UiContext): void {
  readRoutes(api, ctx);
  actionRoutes(api, ctx);
}

function readRoutes(api: Hono, ctx: UiContext): void {
  api.get("/status", (c) => c.json(readStatus(ctx.root)));

  api.get("/snapshots", (c) => {
    const q = parseQuery(PageQuerySchema, c.req.query());
    const listing = listSnapshotSummaries(ctx.root);
    return c.json({ ...pageOf([...listing.snapshots].reverse(), q), corrupt: listing.corrupt });
  });

  api.get("/snapshots/:id", (c) => {
    const record = readSnapshot(ctx.root, c.req.param("id"));
    const turns = turnsAtSnapshot({
      root: ctx.root,
      snapshotId: c.req.param("id"),
      sessionId: record.session_id,
    });
    return c.json({ snapshot: record, turns });
  });

  api.get("/snapshots/:id/files", (c) => {
    const q = parseQuery(FilesQuery, c.req.query());
    const entries = readManifest(ctx.root, c.req.param("id")).entries;
    const glob = q.glob?.trim();
    const match = glob ? picomatch(glob, { dot: true }) : undefined;
    const kept = match === undefined ? entries : entries.filter((e) => match(e.path));
    const page = pageOf(kept, q);
    return c.json({ ...page, items: page.items.map(fileRow) });
  });

  api.get("/snapshots/:id/diff", (c) => {
    const q = parseQuery(ToQuery, c.req.query());
    return c.json(diffSnapshots({ root: ctx.root, from: c.req.param("id"), to: toOf(q.to) }));
  });

  api.get("/snapshots/:id/diff/file", (c) => {
    const q = parseQuery(FileDiffQuery, c.req.query());
    return c.json(
      diffSnapshotFile({ root: ctx.root, from: c.req.param("id"), to: toOf(q.to), path: q.path }),
    );
  });
}

function actionRoutes(api: Hono, ctx: UiContext): void {
  const tm = { root: ctx.root, clock: ctx.clock };

  // The preview of a travel: where the time machine is, and how the snapshot differs from the
  // workspace now (what the travel rewrites). The real call is `timewarp travel ID --json`.
  api.post("/snapshots/:id/travel", async (c) => {
    const body = await readBody(c, DryRunBody);
    const snapshotId = c.req.param("id");
    if (body.dry_run)
      return c.json({
        dry_run: true,
        snapshot_id: snapshotId,
        status: readStatus(ctx.root),
        difference: diffSnapshots({ root: ctx.root, from: snapshotId }),
      });
    return c.json(await runAction(ctx, () => runCliAction(ctx, ["travel", snapshotId])));
  });

  // The preview of a return: the travel it ends, and what was changed while in the past (kept
  // as a patch, never dropped). The real call is `timewarp return --json`.
  api.post("/return", async (c) => {
    const body = await readBody(c, DryRunBody);
    if (body.dry_run) {
      const status = readStatus(ctx.root);
      const at = status.mode === "past" ? status.current_snapshot_id : null;
      return c.json({
        dry_run: true,
        status,
        past_work: at === null ? null : diffSnapshots({ root: ctx.root, from: at }),
      });
    }
    return c.json(await runAction(ctx, () => runCliAction(ctx, ["return"])));
  });

  // `timewarp rewind TURN [--session ID] [--dry-run] --json`: the dry run is the library's own.
  api.post("/rewind", async (c) => {
    const body = await readBody(c, RewindBody);
    if (body.dry_run)
      return c.json(rewind({ ...tm, turn: body.turn, sessionId: body.session_id, dryRun: true }));
    const session = body.session_id === undefined ? [] : ["--session", body.session_id];
    return c.json(await runAction(ctx, () => runCliAction(ctx, ["rewind", body.turn, ...session])));
  });

  // `timewarp rewind --undo [--force] [--dry-run] --json`: the last rewind still in effect taken
  // back (NOTHING_TO_UNDO when there is none, REVERT_CONFLICT when its files changed since).
  api.post("/rewind/undo", async (c) => {
    const body = await readBody(c, UndoRewindBody);
    if (body.dry_run) return c.json(await undoRewind({ ...tm, dryRun: true, force: body.force }));
    const args = ["rewind", "--undo", ...(body.force ? ["--force"] : [])];
    return c.json(await runAction(ctx, () => runCliAction(ctx, args)));
  });
}

function fileRow(e: ManifestEntry) {
  return {
    path: e.path,
    type: e.type,
    mode: e.mode.toString(8).padStart(4, "0"),
    size: e.size,
    ...(e.type === "symlink" ? { target: e.target ?? null } : {}),
    ...(e.link === undefined ? {} : { link: e.link }),
  };
}
