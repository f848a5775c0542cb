import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dataFile } from "../src/ui/data-files.ts";
import { startUiServer, type UiServer } from "../src/ui/index.ts";
import { makeTempDir } from "./helpers/cli.ts";

/**
 * The dashboard's gate, against a real server on a free port: the token (query → cookie,
 * Bearer), the server's own Host and Origin only (DNS rebinding, cross-site pages), actions
 * only with --allow-actions and from the page, and no file outside the dashboard's assets,
 * the vendor allow-list, `.timewarp/` and `.skillpilot/`.
 */
let tmp: { dir: string; cleanup: () => void };
let root: string;
let readOnly: UiServer;
let actions: UiServer;

const REPO = resolve(import.meta.dirname, "..");
const PACKAGE_JSON = readFileSync(join(REPO, "package.json"), "utf8");
/** The page itself (the shell, whatever its preloaded answers): what an unknown path gets. */
const isPage = (body: string) =>
  body.startsWith("<!doctype html>") && body.includes('<div id="app"></div>');

interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** One HTTP request with the path sent byte for byte (no URL normalization, as `curl --path-as-is`). */
function raw(
  server: UiServer,
  path: string,
  options: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<RawResponse> {
  return new Promise((done, fail) => {
    const req = request(
      {
        host: "127.0.0.1",
        port: server.port,
        method: options.method ?? "GET",
        path,
        headers: { host: `127.0.0.1:${server.port}`, ...options.headers },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () =>
          done({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(chunks).toString("utf8"),
          }),
        );
      },
    );
    req.on("error", fail);
    if (options.body !== undefined) req.write(options.body);
    req.end();
  });
}

/** The version the page's files are named under (`/v/<version>/…`). */
function versionOf(page: string): string {
  const v = /"\/v\/([0-9a-f]{16})\/assets\/app\.js"/.exec(page)?.[1];
  if (v === undefined) throw new Error("the page names no versioned app.js");
  return v;
}

const PROMPT = "</script><script>alert(1)</script><!-- a prompt";
const bearer = (s: UiServer) => ({ authorization: `Bearer ${s.token}` });
const errorCode = (r: RawResponse) =>
  (JSON.parse(r.body) as { error: { code: string } }).error.code;

beforeAll(async () => {
  tmp = makeTempDir("tw-ui-server-");
  root = join(tmp.dir, "ws");
  mkdirSync(join(root, ".timewarp"), { recursive: true });
  mkdirSync(join(root, ".skillpilot", "runs", "job"), { recursive: true });
  // a prompt that tries to end the page's data block
  const turn = {
    type: "turn.checkpointed",
    ts: "2026-11-20T10:00:00.000Z",
    data: { session_id: "s1", turn: 1, snapshot_id: "snap1", stored: true, prompt: PROMPT },
  };
  writeFileSync(join(root, ".timewarp", "events.jsonl"), `${JSON.stringify(turn)}\n`);
  readOnly = await startUiServer({ root });
  actions = await startUiServer({ root, allowActions: true });
});

afterAll(async () => {
  await readOnly?.close();
  await actions?.close();
  tmp?.cleanup();
});

describe("the token", () => {
  it("is required by the API and by the page (401)", async () => {
    const paths = ["/api/workspace", "/api/timeline", "/api/stream", "/", "/timeline"];
    for (const path of [...paths, "/assets/app.js", "/vendor/preact.mjs"]) {
      const r = await raw(readOnly, path);
      expect(r.status, path).toBe(401);
      expect(r.body).not.toContain("<script");
    }
    expect(errorCode(await raw(readOnly, "/api/workspace"))).toBe("UNAUTHORIZED");
    const wrong = await raw(readOnly, "/api/workspace", {
      headers: { authorization: `Bearer ${readOnly.token}x` },
    });
    expect(wrong.status).toBe(401);
    expect((await raw(readOnly, `/api/workspace?token=${readOnly.token.slice(1)}`)).status).toBe(
      401,
    );
  });

  it("moves from the URL into an HttpOnly cookie, which then opens page and API", async () => {
    const first = await fetch(readOnly.url, { redirect: "manual" });
    expect(first.status).toBe(302);
    expect(first.headers.get("location")).toBe("/");
    const cookie = first.headers.get("set-cookie") ?? "";
    expect(cookie).toMatch(/^tw_token_\d+=/);
    expect(cookie).toMatch(/HttpOnly/i);
    expect(cookie).toMatch(/SameSite=Strict/i);
    const jar = cookie.split(";")[0] ?? "";
    const page = await fetch(`${readOnly.origin}/timeline`, { headers: { cookie: jar } });
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<div id="app">');
    const ws = await fetch(`${readOnly.origin}/api/workspace`, { headers: { cookie: jar } });
    expect(ws.status).toBe(200);
    expect(await ws.json()).toMatchObject({ root, allow_actions: false });
    // a deep link keeps its path and query once the token is gone from it
    const deep = await fetch(`${readOnly.origin}/runs/x?tab=metrics&token=${readOnly.token}`, {
      redirect: "manual",
    });
    expect(deep.headers.get("location")).toBe("/runs/x?tab=metrics");
  });

  it("is accepted as a Bearer header", async () => {
    const r = await fetch(`${readOnly.origin}/api/workspace`, { headers: bearer(readOnly) });
    expect(r.status).toBe(200);
  });
});

describe("Host and Origin", () => {
  it("refuse a foreign Host (DNS rebinding) even with the token (403)", async () => {
    for (const host of [
      `evil.example:${readOnly.port}`,
      "127.0.0.1",
      `127.0.0.1:${readOnly.port + 1}`,
    ]) {
      const r = await raw(readOnly, "/api/workspace", { headers: { ...bearer(readOnly), host } });
      expect(r.status, host).toBe(403);
      expect(errorCode(r)).toBe("FOREIGN_ORIGIN");
    }
    const own = await raw(readOnly, "/api/workspace", {
      headers: { ...bearer(readOnly), host: `localhost:${readOnly.port}` },
    });
    expect(own.status).toBe(200);
  });

  it("refuse a foreign Origin even with the token (403)", async () => {
    for (const origin of [
      "https://evil.example",
      `http://127.0.0.1:${readOnly.port + 1}`,
      "null",
    ]) {
      const r = await raw(readOnly, "/api/timeline", { headers: { ...bearer(readOnly), origin } });
      expect(r.status, origin).toBe(403);
    }
    const own = await raw(readOnly, "/api/workspace", {
      headers: { ...bearer(readOnly), origin: readOnly.origin },
    });
    expect(own.status).toBe(200);
  });
});

describe("actions", () => {
  it("are refused without --allow-actions (403 ACTIONS_DISABLED)", async () => {
    const r = await raw(readOnly, "/api/nothing", {
      method: "POST",
      headers: { ...bearer(readOnly), origin: readOnly.origin, "content-type": "application/json" },
      body: "{}",
    });
    expect(r.status).toBe(403);
    expect(errorCode(r)).toBe("ACTIONS_DISABLED");
  });

  it("are refused without an Origin even when allowed (403), and pass the gate with one", async () => {
    const headers = { ...bearer(actions), "content-type": "application/json" };
    const none = await raw(actions, "/api/nothing", { method: "POST", headers, body: "{}" });
    expect(none.status).toBe(403);
    expect(errorCode(none)).toBe("FOREIGN_ORIGIN");
    const foreign = await raw(actions, "/api/nothing", {
      method: "POST",
      headers: { ...headers, origin: "https://evil.example" },
      body: "{}",
    });
    expect(foreign.status).toBe(403);
    const own = await raw(actions, "/api/nothing", {
      method: "POST",
      headers: { ...headers, origin: actions.origin },
      body: "{}",
    });
    // through the gate: the route does not exist
    expect(own.status).toBe(404);
    expect(errorCode(own)).toBe("NOT_FOUND");
  });
});

describe("files", () => {
  const outside = [
    "/assets/../../../package.json",
    "/assets/..%2f..%2f..%2fpackage.json",
    "/assets/%2e%2e/%2e%2e/%2e%2e/package.json",
    "/assets/%2e%2e%2f%2e%2e%2f%2e%2e%2fpackage.json",
    "/assets/%252e%252e%252f%252e%252e%252f%252e%252e%252fpackage.json",
    "/assets/..\\..\\..\\package.json",
    "/assets/..%5c..%5c..%5cpackage.json",
    "/assets//etc/passwd",
    "/assets/%2fetc%2fpasswd",
    "/assets/lib/../../../../package.json",
    "/assets/....//....//....//package.json",
    "/vendor/..%2f..%2fpackage.json",
    "/vendor/%2e%2e%2fpackage.json",
  ];

  it("never serve a file outside src/ui/web through /assets or /vendor, however encoded", async () => {
    const version = versionOf((await raw(readOnly, "/", { headers: bearer(readOnly) })).body);
    const versioned = (v: string) => outside.map((p) => `/v/${v}${p}`);
    for (const path of [...outside, ...versioned(version), ...versioned("0")]) {
      const r = await raw(readOnly, path, { headers: bearer(readOnly) });
      expect(r.body, path).not.toBe(PACKAGE_JSON);
      expect(r.body, path).not.toContain('"name": "timewarp"');
      expect(r.body, path).not.toContain("root:x:0:0");
      // refused, or answered with the page itself (an unknown path is a view URL)
      expect([400, 403, 404].includes(r.status) || isPage(r.body), `${path}: ${r.status}`).toBe(
        true,
      );
    }
    const own = await raw(readOnly, "/assets/lib/api.js", { headers: bearer(readOnly) });
    expect(own.status).toBe(200);
    expect(own.headers["content-type"]).toContain("javascript");
  });

  it("serve only the vendor allow-list", async () => {
    const listed = await raw(readOnly, "/vendor/preact.mjs", { headers: bearer(readOnly) });
    expect(listed.status).toBe(200);
    const names = ["preact", "preact.js", "package.json", "zod.mjs", "constructor", "__proto__"];
    for (const name of [...names, "toString", "hasOwnProperty", "valueOf"]) {
      const r = await raw(readOnly, `/vendor/${name}`, { headers: bearer(readOnly) });
      expect(r.status, name).toBe(404);
    }
    // `..` leaves /vendor/ altogether: the page answers, never a file
    for (const name of ["..", "%2e%2e"]) {
      const r = await raw(readOnly, `/vendor/${name}`, { headers: bearer(readOnly) });
      expect(r.status === 404 || isPage(r.body), name).toBe(true);
    }
  });

  it("dataFile refuses paths outside .timewarp/.skillpilot, symlinks included", () => {
    const secret = join(tmp.dir, "secret.txt");
    writeFileSync(secret, "secret");
    writeFileSync(join(root, "visible.txt"), "not data");
    writeFileSync(join(root, ".skillpilot", "runs", "job", "report.txt"), "report");
    symlinkSync(secret, join(root, ".skillpilot", "runs", "job", "leak.txt"));
    symlinkSync(tmp.dir, join(root, ".timewarp", "up"));
    mkdirSync(join(root, ".timewarpx"));
    writeFileSync(join(root, ".timewarpx", "f"), "near miss");
    expect(dataFile(root, ".skillpilot/runs/job/report.txt")).toBe(
      join(tmp.dir, "ws", ".skillpilot", "runs", "job", "report.txt"),
    );
    const refused = (rel: string) => {
      try {
        dataFile(root, rel);
        return "served";
      } catch (error) {
        return (error as { code: string }).code;
      }
    };
    expect(refused("visible.txt")).toBe("UNSAFE_PATH");
    expect(refused("../secret.txt")).toBe("UNSAFE_PATH");
    expect(refused(".timewarp/../visible.txt")).toBe("UNSAFE_PATH");
    expect(refused(".timewarp/../../secret.txt")).toBe("UNSAFE_PATH");
    expect(refused(secret)).toBe("UNSAFE_PATH");
    expect(refused(".skillpilot/runs/job/leak.txt")).toBe("UNSAFE_PATH");
    expect(refused(".timewarp/up/secret.txt")).toBe("UNSAFE_PATH");
    expect(refused(".timewarpx/f")).toBe("UNSAFE_PATH");
    expect(refused(".timewarp/events.jsonl\0")).toBe("UNSAFE_PATH");
    expect(refused(".skillpilot/runs/job")).toBe("NOT_A_FILE");
    expect(refused(".timewarp/nothing.json")).toBe("NOT_FOUND");
  });
});

describe("the page", () => {
  const page = (path: string) => raw(readOnly, path, { headers: bearer(readOnly) });
  const preloaded = (body: string) => {
    const block = /<script type="application\/json" id="tw-preload">([^<]*)<\/script>/.exec(body);
    if (block?.[1] === undefined) throw new Error("the page has no preload block");
    return JSON.parse(block[1]) as Record<string, unknown>;
  };

  it("names every file under one version the browser keeps for good, and is itself never kept", async () => {
    const r = await page("/timeline");
    expect(r.headers["cache-control"]).toBe("no-store");
    const version = versionOf(r.body);
    const urls = [...r.body.matchAll(/(?:href|src)="([^"]+)"|"(\/[^"]+\.m?js)"/g)].map(
      (m) => m[1] ?? m[2] ?? "",
    );
    expect(urls.length).toBeGreaterThan(10);
    for (const url of urls) {
      expect(url, url).toMatch(new RegExp(`^/v/${version}/(assets|vendor)/`));
      const file = await raw(readOnly, url, { headers: bearer(readOnly) });
      expect(file.status, url).toBe(200);
      expect(file.headers["cache-control"], url).toBe("private, max-age=31536000, immutable");
      expect(file.headers.etag, url).toBeUndefined();
    }
    // without a version, or under another (a page of an earlier server): revalidated
    for (const url of ["/assets/app.js", `/v/${"0".repeat(16)}/assets/app.js`]) {
      const file = await raw(readOnly, url, { headers: bearer(readOnly) });
      expect(file.headers["cache-control"], url).toBe("no-cache");
      const etag = String(file.headers.etag);
      const again = await raw(readOnly, url, {
        headers: { ...bearer(readOnly), "if-none-match": etag },
      });
      expect(again.status, url).toBe(304);
    }
    // diff2html is loaded beside lib/diff2html.js: under the version, from the allow-list
    const lib = await raw(readOnly, `/v/${version}/vendor/diff2html.min.js`, {
      headers: bearer(readOnly),
    });
    expect(lib.status).toBe(200);
  });

  it("lets only its import map run inline (by hash): the preloaded answers are data", async () => {
    const r = await page("/");
    const csp = String(r.headers["content-security-policy"]);
    const map = /<script type="importmap">([\s\S]*?)<\/script>/.exec(r.body)?.[1] ?? "";
    const hash = createHash("sha256").update(map).digest("base64");
    expect(csp).toContain(`script-src 'self' 'sha256-${hash}'`);
    expect(csp).not.toMatch(/unsafe-eval/);
    const inline = [...r.body.matchAll(/<script([^>]*)>([^<]|<(?!\/script>))+<\/script>/g)];
    expect(inline.map((m) => (m[1] ?? "").trim())).toEqual([
      'type="importmap"',
      'type="application/json" id="tw-preload"',
    ]);
  });

  it("carries its view's first answers exactly as the API gives them, `<` escaped", async () => {
    const r = await page("/timeline");
    const block = /id="tw-preload">([\s\S]*?)<\/script>/.exec(r.body)?.[1] ?? "";
    expect(block).not.toContain("<");
    const answers = preloaded(r.body);
    expect(Object.keys(answers).sort()).toEqual(["/api/timeline?limit=50", "/api/workspace"]);
    const api = async (path: string) =>
      JSON.parse((await raw(readOnly, path, { headers: bearer(readOnly) })).body) as unknown;
    expect(answers["/api/timeline?limit=50"]).toEqual(await api("/api/timeline?limit=50"));
    expect(answers["/api/workspace"]).toEqual(await api("/api/workspace"));
    const timeline = answers["/api/timeline?limit=50"] as { items: { title: string }[] };
    expect(timeline.items.map((i) => i.title)).toContain(PROMPT);
    // the root path shows the timeline too
    expect(Object.keys(preloaded((await page("/")).body))).toContain("/api/timeline?limit=50");
  });

  it("keys a filtered timeline by its request, sorted; leaves out what it cannot know", async () => {
    const filtered = preloaded((await page("/timeline?kind=turn&agent=a%20b&cursor=")).body);
    expect(Object.keys(filtered).sort()).toEqual([
      "/api/timeline?agent=a+b&kind=turn&limit=50",
      "/api/workspace",
    ]);
    // local times: the page turns them into UTC in its own time zone
    const since = preloaded((await page("/timeline?since=2026-11-20T10:00")).body);
    expect(Object.keys(since)).toEqual(["/api/workspace"]);
    expect(Object.keys(preloaded((await page("/runs")).body))).toEqual(["/api/workspace"]);
    // an invalid filter: no answer in the page (the view asks, and shows the error)
    expect(Object.keys(preloaded((await page("/timeline?kind=nope")).body))).toEqual([
      "/api/workspace",
    ]);
  });
});
