import { request } from "node:http";

/**
 * One request to a dashboard server, on a connection of its own: the tests run the CLI with
 * spawnSync between requests, which blocks this process longer than the server keeps an idle
 * connection, so a reused one (fetch's keep-alive) could be reset under the next request.
 */
export function uiCall(
  origin: string,
  path: string,
  options: { token: string; body?: unknown; origin?: string },
): Promise<{ status: number; json: Record<string, unknown> }> {
  const body = options.body === undefined ? undefined : JSON.stringify(options.body);
  const headers: Record<string, string> = { authorization: `Bearer ${options.token}` };
  if (body !== undefined) {
    headers["content-type"] = "application/json";
    headers.origin = options.origin ?? origin;
  }
  return new Promise((resolve, reject) => {
    const req = request(
      `${origin}${path}`,
      { method: body === undefined ? "GET" : "POST", headers, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => {
          try {
            resolve({
              status: res.statusCode ?? 0,
              json: JSON.parse(Buffer.concat(chunks).toString("utf8")),
            });
          } catch (error) {
            reject(error);
          }
        });
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

/** A GET to a dashboard server with its token: the status, the body's text, and its JSON. */
export async function uiGet(
  server: { origin: string; token: string },
  path: string,
  // biome-ignore lint/suspicious/noExplicitAny: the tests read the API's JSON documents freely
): Promise<{ status: number; body: string; json: () => any }> {
  const res = await fetch(`${server.origin}${path}`, {
    headers: { authorization: `Bearer ${server.token}` },
  });
  const body = await res.text();
  return { status: res.status, body, json: () => JSON.parse(body) };
}
