import type { Hono } from "hono";
import { z } from "zod";
import { listIssuesChecked, readIssueFiles } from "../../timemachine/index.ts";
import type { UiContext } from "../context.ts";
import { PageQuerySchema, pageOf, parseQuery } from "./paging.ts";

const IssueListQuery = PageQuerySchema.extend({
  status: z.enum(["open", "fixed", "all"]).default("all"),
});

/**
 * The issues view: `/api/issues` (the CLI's `issue list --json` items, newest first, paged, with
 * the folders whose issue.json does not read) and `/api/issues/:id` (issue.json, the chat as
 * stored — redacted by `issue report` —, experiment.md and the saved patches).
 */
export function issueRoutes(api: Hono, ctx: UiContext): void {
  api.get("/issues", (c) => {
    const q = parseQuery(IssueListQuery, c.req.query());
    const { issues, corrupt } = listIssuesChecked({ root: ctx.root, status: q.status });
    return c.json({ ...pageOf(issues, q), corrupt });
  });
  api.get("/issues/:id", (c) => {
    const files = readIssueFiles({ root: ctx.root, issueId: c.req.param("id") });
    return c.json({
      issue: files.issue,
      raw: files.raw,
      chat: files.chat && {
        header: files.chat.parsed.header,
        entries: files.chat.parsed.entries,
        note: files.chat.parsed.note,
        text: files.chat.text,
      },
      experiment: files.experiment,
      patches: files.patches,
    });
  });
}
