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
const INDEX_HTML = readFileSync(join(REPO, "src/ui/web/index.html"), "utf8");

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

const bearer = (s: UiServer) => ({ authorization: `Bearer ${s.token}` });
const errorCode = (r: RawResponse) =>
  (JSON.parse(r.body) as { error: { code: string } }).error.code;

beforeAll(async () => {
  tmp = makeTempDir("tw-ui-server-");
  root = join(tmp.dir, "ws");
  mkdirSync(join(root, ".timewarp"), { recursive: true });
  mkdirSync(join(root, ".skillpilot", "runs", "job"), { recursive: true });
  writeFileSync(join(root, ".timewarp", "events.jsonl"), "");
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
    for (const path of outside) {
      const r = await raw(readOnly, path, { headers: bearer(readOnly) });
      expect(r.body, path).not.toBe(PACKAGE_JSON);
      expect(r.body, path).not.toContain('"name": "timewarp"');
      expect(r.body, path).not.toContain("root:x:0:0");
      // refused, or answered with the page itself (an unknown path is a view URL)
      expect(
        [400, 403, 404].includes(r.status) || r.body === INDEX_HTML,
        `${path}: ${r.status}`,
      ).toBe(true);
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
      expect(r.status === 404 || r.body === INDEX_HTML, name).toBe(true);
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
