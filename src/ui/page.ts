import { createHash } from "node:crypto";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { extname, join, normalize, sep } from "node:path";
import { type Context, Hono } from "hono";
import { TIMEWARP_VERSION } from "../core/index.ts";
import { CONTENT_TYPES, vendorFile, vendorNames, webDir } from "./assets.ts";
import type { UiContext } from "./context.ts";

/**
 * The page and its files. The shell (`web/index.html`) names every script, style and library
 * under `/v/<version>/…`, where the version is a hash of all of them, taken once per process:
 * such a URL's bytes never change, so the browser keeps them (`immutable`) and a reload asks the
 * server for nothing but the page. Relative imports stay inside the version, so the modules need
 * no rewriting. The unversioned `/assets/…` and `/vendor/…` still answer, revalidated by ETag.
 * The page itself carries the first answers its view asks for (see `preloadBlock`).
 */
export function pageRoutes(app: Hono, ctx: UiContext, api: Hono): void {
  // the API's routes, asked from inside: an answer that is not 200 is left for the page to ask
  const inner = new Hono().onError(() => new Response(null, { status: 500 }));
  inner.route("/api", api);
  app.get("/v/:version/vendor/:name", (c) => {
    const file = vendorFile(c.req.param("name"));
    return file === undefined ? c.notFound() : sendFile(c, file, c.req.param("version"));
  });
  app.get("/v/:version/assets/*", (c) => {
    const prefix = `/v/${c.req.param("version")}/assets/`;
    const file = webFile(c.req.path.slice(prefix.length));
    return file === undefined ? c.notFound() : sendFile(c, file, c.req.param("version"));
  });
  app.get("/vendor/:name", (c) => {
    const file = vendorFile(c.req.param("name"));
    return file === undefined ? c.notFound() : sendFile(c, file);
  });
  app.get("/assets/*", (c) => {
    const file = webFile(c.req.path.slice("/assets/".length));
    return file === undefined ? c.notFound() : sendFile(c, file);
  });
  app.get("*", (c) => {
    c.header("content-type", "text/html; charset=utf-8");
    return c.body(pageStream(new URL(c.req.url), ctx, inner));
  });
}

/** `GET /api/workspace`: what the header shows. */
export function workspaceInfo(ctx: UiContext): object {
  return { root: ctx.root, allow_actions: ctx.allowActions, version: TIMEWARP_VERSION };
}

/** The file of `web/` at `rel` (as the URL has it), or undefined for a path that leaves it. */
function webFile(rel: string): string | undefined {
  const norm = normalize(rel);
  if (norm.startsWith("..") || norm.includes(`${sep}..`) || norm.startsWith(sep)) return undefined;
  const file = join(webDir(), norm);
  return file.startsWith(`${webDir()}${sep}`) ? file : undefined;
}

/**
 * A file of the page or a library. Under the current version: kept by the browser for a year,
 * never revalidated. Otherwise (no version, or one of an earlier server): revalidated by ETag
 * (size and mtime), so a reload costs a 304 instead of the bytes.
 */
function sendFile(c: Context, file: string, version?: string): Response | Promise<Response> {
  let body: Buffer;
  try {
    const st = statSync(file);
    if (!st.isFile()) return c.notFound();
    if (version !== undefined && version === assetVersion()) {
      c.header("Cache-Control", "private, max-age=31536000, immutable");
    } else {
      const etag = `"${st.size.toString(36)}-${Math.trunc(st.mtimeMs).toString(36)}"`;
      c.header("Cache-Control", "no-cache");
      c.header("ETag", etag);
      if (c.req.header("if-none-match") === etag) return c.body(null, 304);
    }
    body = readFileSync(file);
  } catch {
    return c.notFound();
  }
  const type = CONTENT_TYPES[extname(file)] ?? "application/octet-stream";
  return c.body(new Uint8Array(body), 200, { "content-type": type });
}

let version: string | undefined;

/**
 * A hash of every file the page may load (its own and the libraries on the allow-list), taken
 * once: a file changed while the server runs is seen on the next start, not by a reload.
 */
export function assetVersion(): string {
  if (version !== undefined) return version;
  const hash = createHash("sha256");
  const files = readdirSync(webDir(), { recursive: true, encoding: "utf8" }).sort();
  for (const rel of files) {
    const file = join(webDir(), rel);
    if (!statSync(file).isFile()) continue;
    hash.update(`${rel}\0`).update(readFileSync(file)).update("\0");
  }
  for (const name of vendorNames()) {
    const file = vendorFile(name);
    if (file !== undefined) hash.update(`vendor/${name}\0`).update(readFileSync(file)).update("\0");
  }
  version = hash.digest("hex").slice(0, 16);
  return version;
}

let shell: { text: string; csp: string } | undefined;

/**
 * The shell with its URLs under the current version, and its Content-Security-Policy with the
 * hash of its one inline script (the import map). Data blocks (`application/json`) never run,
 * so the policy need not name them.
 */
export function pageShell(): { text: string; csp: string } {
  if (shell !== undefined) return shell;
  const raw = readFileSync(join(webDir(), "index.html"), "utf8");
  const text = raw.replace(/(["'])\/(assets|vendor)\//g, `$1/v/${assetVersion()}/$2/`);
  const inline = /<script type="importmap">([\s\S]*?)<\/script>/.exec(text)?.[1] ?? "";
  const hash = createHash("sha256").update(inline).digest("base64");
  const csp = [
    "default-src 'self'",
    `script-src 'self' 'sha256-${hash}'`,
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data:",
    "connect-src 'self'",
    "frame-ancestors 'none'",
    "base-uri 'none'",
    "form-action 'self'",
  ].join("; ");
  shell = { text, csp };
  return shell;
}

/**
 * The page for `url`, in two parts: the shell up to `</body>` at once (the browser starts on its
 * scripts and styles, from its cache), then the answers its first view will ask for, once known.
 * Its scripts run when the page has arrived, with the answers in it.
 */
function pageStream(url: URL, ctx: UiContext, api: Hono): ReadableStream<Uint8Array> {
  const text = pageShell().text;
  const end = text.lastIndexOf("</body>");
  const encoder = new TextEncoder();
  return new ReadableStream({
    async start(controller) {
      controller.enqueue(encoder.encode(text.slice(0, end)));
      // the first part leaves before the answers are computed (synchronous work)
      await new Promise((resolve) => setImmediate(resolve));
      const answers = await firstAnswers(url, ctx, api).catch(() => []);
      controller.enqueue(encoder.encode(`${preloadBlock(answers)}\n  ${text.slice(end)}`));
      controller.close();
    },
  });
}

/** The answers the first view for `url` asks for, as `[request, JSON]`. */
async function firstAnswers(url: URL, ctx: UiContext, api: Hono): Promise<[string, string][]> {
  const answers: [string, string][] = [["/api/workspace", JSON.stringify(workspaceInfo(ctx))]];
  const timeline = timelineRequest(url);
  if (timeline !== undefined) {
    const res = await api.request(`/api/timeline?${timeline}`);
    if (res.status === 200) answers.push([`/api/timeline?${timeline}`, await res.text()]);
  }
  return answers;
}

/** The timeline view's first page size (`PAGE` in `web/views/timeline.js`). */
const TIMELINE_PAGE = 50;
const TIMELINE_FILTERS = ["agent", "glob", "kind", "session", "cursor"];

/**
 * The query string of the API request the timeline view makes for `url`, keys sorted as the
 * page's `takePreloaded` sorts them; undefined for another view, or for a time filter (the page
 * turns local times into UTC, the server cannot know its time zone).
 */
function timelineRequest(url: URL): string | undefined {
  if (url.pathname !== "/" && url.pathname !== "/timeline") return undefined;
  if (url.searchParams.get("since") || url.searchParams.get("until")) return undefined;
  const q = new URLSearchParams({ limit: String(TIMELINE_PAGE) });
  for (const k of TIMELINE_FILTERS) {
    const v = url.searchParams.get(k);
    if (v) q.set(k, v);
  }
  q.sort();
  return q.toString();
}

/**
 * `<script type="application/json" id="tw-preload">{"<request>": <answer>, …}</script>`: JSON
 * the browser never runs; `<` is escaped (`\u003c`, the same string to JSON) so no text inside
 * can close the element.
 */
function preloadBlock(answers: [key: string, json: string][]): string {
  const body = answers.map(([key, json]) => `${JSON.stringify(key)}:${json}`).join(",");
  return `<script type="application/json" id="tw-preload">{${body.replaceAll("<", "\\u003c")}}</script>`;
}
