import { cpSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createFixedClock } from "../src/core/index.ts";
import { type LabContext, runE2E, viewCard } from "../src/memory/index.ts";
import { startUiServer, type UiServer } from "../src/ui/index.ts";
import { makeTempDir, REPO_ROOT } from "./helpers/cli.ts";
import { uiGet } from "./helpers/ui-call.ts";

const FIXTURES = resolve(REPO_ROOT, "test/fixtures/memory/runs");
const OK_RUN = "r01-doc-only-ok";
const DRIFT_RUN = "r02-doc-requirements-rollback";

let tmp: { dir: string; cleanup: () => void };
let ctx: LabContext;
let server: UiServer;
const e2e: Record<string, Awaited<ReturnType<typeof runE2E>>> = {};

/** A GET of the API with the server's token. */
const api = (path: string) => uiGet(server, path);

const runsDir = () => join(ctx.root, ".timewarp/memory/runs");

beforeAll(async () => {
  tmp = makeTempDir("tw-ui-memory-");
  ctx = { root: tmp.dir, clock: createFixedClock(new Date("2026-01-01T00:00:00Z")) };
  for (const run of [OK_RUN, DRIFT_RUN])
    cpSync(join(FIXTURES, run), join(runsDir(), run), { recursive: true });
  e2e[OK_RUN] = await runE2E(ctx, OK_RUN);
  e2e[DRIFT_RUN] = await runE2E(ctx, DRIFT_RUN);
  mkdirSync(join(ctx.root, ".timewarp/memory/profiles"), { recursive: true });
  writeFileSync(
    join(ctx.root, ".timewarp/memory/profiles/nina.json"),
    JSON.stringify({ user_id: "nina", self_report: "novice" }),
  );
  server = await startUiServer({ root: ctx.root, token: "m".repeat(32) });
}, 60_000);

afterAll(async () => {
  await server?.close();
  tmp?.cleanup();
});

const jsonl = (run: string, file: string) =>
  readFileSync(join(runsDir(), run, file), "utf8")
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => JSON.parse(l));

describe("the memory API over runs made by the library", () => {
  it("lists the runs with their objective and guard counts, paged", async () => {
    const doc = (await api("/api/memory")).json();
    expect(doc.total).toBe(2);
    const byId = new Map(doc.items.map((r: { run_id: string }) => [r.run_id, r]));
    expect(byId.get(DRIFT_RUN)).toMatchObject({
      events: e2e[DRIFT_RUN]?.events,
      rollback: e2e[DRIFT_RUN]?.guards.rollback,
      warn: e2e[DRIFT_RUN]?.guards.warn,
      max_drift: e2e[DRIFT_RUN]?.guards.max_drift,
    });
    const first = (await api("/api/memory?limit=1")).json();
    expect(first.items).toHaveLength(1);
    const second = (await api(`/api/memory?limit=1&cursor=${first.next}`)).json();
    expect([first.items[0].run_id, second.items[0].run_id].sort()).toEqual([OK_RUN, DRIFT_RUN]);
  });

  it("gives every guard record (the drift chart's points), the thresholds and the summary", async () => {
    const doc = (await api(`/api/memory/${DRIFT_RUN}`)).json();
    expect(doc.guards).toEqual(jsonl(DRIFT_RUN, "guards.jsonl"));
    expect(doc.guards.map((g: { action: string }) => g.action)).toContain("rollback");
    expect(doc.thresholds).toEqual({ warn: 0.5, rollback: 0.8 });
    expect(doc.summary).toEqual(e2e[DRIFT_RUN]?.guards);
  });

  it("pages the events and filters them by kind", async () => {
    const all = jsonl(DRIFT_RUN, "events.jsonl");
    const doc = (await api(`/api/memory/${DRIFT_RUN}`)).json();
    expect(doc.events.items).toEqual(all);
    expect(doc.events.all).toBe(all.length);
    const edits = (await api(`/api/memory/${DRIFT_RUN}?kind=edit`)).json().events;
    expect(edits.items).toEqual(all.filter((e) => e.tool === "edit"));
    expect(edits.total).toBe(edits.items.length);
    const one = (await api(`/api/memory/${DRIFT_RUN}?limit=1`)).json().events;
    expect(one.items).toEqual(all.slice(0, 1));
    expect(one.next).toBe(all.length > 1 ? "1" : null);
    expect((await api(`/api/memory/${DRIFT_RUN}?kind=nope`)).status).toBe(400);
  });

  it("shows the run's cards with their provenance, rendered as `memory view` renders them", async () => {
    const id = e2e[OK_RUN]?.card?.pattern_id;
    expect(id).toBeDefined();
    const terse = (await api(`/api/memory/${OK_RUN}`)).json();
    expect(terse.users).toEqual(["nina"]);
    expect(terse.cards.map((c: { card: { pattern_id: string } }) => c.card.pattern_id)).toEqual([
      id,
    ]);
    const card = terse.cards[0];
    expect(card.card.provenance.source_runs).toContain(OK_RUN);
    expect(card.event_steps.length).toBeGreaterThan(0);
    expect(terse.route.view).toBe("terse");
    expect(card.text).toBe(viewCard(ctx, id as string, { user: "default" }).text);
    const guided = (await api(`/api/memory/${OK_RUN}?user=nina`)).json();
    expect(guided.route).toEqual(viewCard(ctx, id as string, { user: "nina" }).route);
    expect(guided.route.view).toBe("guided");
    expect(guided.cards[0].text).toBe(viewCard(ctx, id as string, { user: "nina" }).text);
    // the run that rolled back left its drift in place: no card names it
    expect((await api(`/api/memory/${DRIFT_RUN}`)).json().cards).toEqual([]);
  });

  it("answers a run that is not one of .timewarp/memory/runs/ with NOT_FOUND", async () => {
    const missing = await api("/api/memory/no-such-run");
    expect(missing.status).toBe(404);
    expect(missing.json().error.code).toBe("NOT_FOUND");
    expect((await api("/api/memory/..%2F..%2Fissues")).status).toBe(404);
    expect((await api(`/api/memory/${OK_RUN}?user=..%2Fx`)).status).toBe(400);
  });
});
