// The page's one door to the server: JSON in, JSON out, errors as { code, message }.

/** An error the server answered with ({"error": {code, message}}), or the network's. */
export class ApiError extends Error {
  constructor(code, message, status, data) {
    super(message);
    this.code = code;
    this.status = status;
    this.data = data;
  }
}

async function request(method, path, body) {
  let res;
  try {
    res = await fetch(path, {
      method,
      headers: body === undefined ? {} : { "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: "same-origin",
    });
  } catch (e) {
    throw new ApiError(
      "NETWORK",
      `the dashboard server did not answer (${e.message}); is \`timewarp ui\` still running?`,
      0,
    );
  }
  const text = await res.text();
  let doc;
  try {
    doc = text === "" ? {} : JSON.parse(text);
  } catch {
    throw new ApiError(
      "BAD_RESPONSE",
      `the server answered ${res.status} with no JSON`,
      res.status,
    );
  }
  if (!res.ok || doc.error !== undefined) {
    const err = doc.error ?? { code: `HTTP_${res.status}`, message: res.statusText };
    throw new ApiError(err.code, err.message, res.status, err.data);
  }
  return doc;
}

/** GET `path` with `query` (undefined and "" values left out). */
export function getJSON(path, query = {}) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== "") q.set(k, String(v));
  const s = q.toString();
  return request("GET", s === "" ? path : `${path}?${s}`);
}

export function postJSON(path, body = {}) {
  return request("POST", path, body);
}

let preloaded;

/** The answers the server put into the page (`<script type="application/json" id="tw-preload">`). */
function readPreloaded() {
  const block = document.getElementById("tw-preload");
  const text = block?.textContent;
  block?.remove();
  try {
    return new Map(Object.entries(text ? JSON.parse(text) : {}));
  } catch {
    return new Map();
  }
}

/**
 * The answer to GET `path` with `query` that came with the page, or undefined. Each is taken
 * once: a later request for the same thing asks the server. The key is the request with its
 * query keys sorted, as the server writes it.
 */
export function takePreloaded(path, query = {}) {
  preloaded ??= readPreloaded();
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== "") q.set(k, String(v));
  q.sort();
  const key = `${path}?${q}`.replace(/\?$/, "");
  const answer = preloaded.get(key);
  preloaded.delete(key);
  return answer;
}
