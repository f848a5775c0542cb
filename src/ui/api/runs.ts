import { readFileSync } from "node:fs";
import { basename, isAbsolute } from "node:path";
import type { Context, Hono } from "hono";
import { z } from "zod";
import { ErrorCode, TimewarpError } from "../../core/index.ts";
import { listJobs, readJobFiles, showJob, skillMetricSeries } from "../../runs/index.ts";
import type { UiContext } from "../context.ts";
import { dataFile } from "../data-files.ts";
import { PageQuerySchema, pageOf, parseQuery } from "./paging.ts";

const FileQuery = z.object({
  path: z.string().min(1),
  download: z.enum(["1"]).optional(),
});

/**
 * The runs view (SkillPilot; jobs live in `<root>/.skillpilot/runs/`): `/api/runs` (`skill runs
 * --json`'s jobs, newest first, paged), `/api/runs/:job` (`skill show --json` and the run
 * directory read: states, timeline, requests with acks, reports, session files, debug bundle),
 * `/api/runs/:job/metrics` (every job of its skill) and `/api/runs/:job/file?path=` (one file of
 * the run directory, through `dataFile`: nothing outside `.skillpilot/`, after symlinks).
 */
export function runRoutes(api: Hono, ctx: UiContext): void {
  api.get("/runs", async (c) => {
    const q = parseQuery(PageQuerySchema, c.req.query());
    const jobs = await listJobs({ cwd: ctx.root, clock: ctx.clock, close: false });
    // newest first by start time (ids order jobs of one second by their random suffix)
    const newest = jobs.sort(
      (a, b) =>
        (b.created_at ?? "").localeCompare(a.created_at ?? "") || b.job_id.localeCompare(a.job_id),
    );
    return c.json(pageOf(newest, q));
  });
  // `skill show JOB --json`, never closing a stale job: a read-only dashboard writes nothing
  const jobOf = (jobId: string) =>
    showJob({ cwd: ctx.root, jobId, clock: ctx.clock, close: false });
  api.get("/runs/:job", async (c) => {
    const job = await jobOf(c.req.param("job"));
    return c.json({ ...job, files: readJobFiles(job.run_dir) });
  });
  api.get("/runs/:job/metrics", async (c) => {
    const job = await jobOf(c.req.param("job"));
    return c.json(
      await skillMetricSeries({ cwd: ctx.root, skill: job.manifest.skill.name, clock: ctx.clock }),
    );
  });
  api.get("/runs/:job/file", async (c) => {
    const q = parseQuery(FileQuery, c.req.query());
    const job = await jobOf(c.req.param("job"));
    // a path of this run directory: no climbing out of it (dataFile then checks the real path)
    if (q.path.split(/[\\/]/).some((part) => part === ".." || part === "") || isAbsolute(q.path))
      throw new TimewarpError(
        ErrorCode.UNSAFE_PATH,
        `not a path inside the run directory of ${job.job_id}: ${q.path}`,
      );
    const file = dataFile(ctx.root, `.skillpilot/runs/${job.job_id}/${q.path}`);
    return sendDataFile(c, file, q.download === "1");
  });
}

/**
 * Files a job's tool wrote are not the dashboard's own: they are never sent as HTML or script
 * (a report named x.html or x.js would run on this origin), only as text or bytes.
 */
const TEXT_FILES = /\.(txt|log|md|tcl|patch|diff|json|jsonl|rpt|csv|tsv|yaml|yml|tail)$/i;

/** A data file: text shown inline as text/plain, anything else (or `download`) as an attachment. */
function sendDataFile(c: Context, file: string, download: boolean): Response {
  const body = readFileSync(file);
  const text = TEXT_FILES.test(file) || !file.includes(".");
  const inline = !download && text;
  const name = basename(file).replace(/[^\w.-]/g, "_");
  return c.body(new Uint8Array(body), 200, {
    "content-type": text ? "text/plain; charset=utf-8" : "application/octet-stream",
    "content-disposition": `${inline ? "inline" : "attachment"}; filename="${name}"`,
  });
}
