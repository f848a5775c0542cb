import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchChromium, waitForView } from "../../scripts/ui-harness.ts";
import { ui, VIEWPORT } from "./browser.ts";

describe.skipIf(ui.skip !== undefined)("the launch token", () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
  });

  it("is required: a browser without it gets 401, the printed URL lets it in", async () => {
    const context = await browser.newContext({ viewport: VIEWPORT });
    const page = await context.newPage();
    const server = ui.read!;
    const refused = await page.goto(`${server.origin}/timeline`);
    expect(refused?.status()).toBe(401);
    expect(await page.locator("[data-view]").count()).toBe(0);
    const api = await page.goto(`${server.origin}/api/workspace`);
    expect(api?.status()).toBe(401);
    expect(JSON.parse(await page.locator("body").innerText())).toMatchObject({
      error: { code: "UNAUTHORIZED" },
    });
    const wrong = await page.goto(`${server.origin}/?token=${server.token.slice(1)}x`);
    expect(wrong?.status()).toBe(401);

    // the URL as `timewarp ui` printed it: the token moves into a cookie and out of the address bar
    const opened = await page.goto(server.url);
    expect(opened?.status()).toBe(200);
    await waitForView(page, "timeline");
    expect(page.url()).not.toContain(server.token);
    const cookies = await context.cookies(server.origin);
    expect(cookies.find((c) => c.name.startsWith("tw_token_"))).toMatchObject({
      httpOnly: true,
      sameSite: "Strict",
    });
    const after = await page.goto(`${server.origin}/runs`);
    expect(after?.status()).toBe(200);
    await waitForView(page, "run-list");
    const workspace = await page.evaluate(async () => (await fetch("/api/workspace")).json());
    expect(workspace).toMatchObject({ root: ui.project, allow_actions: false });
    await context.close();
  });

  it("is per launch: the cookie of one server does not open another", async () => {
    const context = await browser.newContext({ viewport: VIEWPORT });
    const page = await context.newPage();
    // signed in on the read-only server, then the actions server (another port, another token)
    await page.goto(ui.read!.url);
    await waitForView(page, "timeline");
    const other = await page.goto(`${ui.actions!.origin}/timeline`);
    expect(other?.status()).toBe(401);
    await context.close();
  });

  it("refuses an action from a read-only dashboard (403 ACTIONS_DISABLED)", async () => {
    const context = await browser.newContext({ viewport: VIEWPORT });
    const page = await context.newPage();
    await page.goto(ui.read!.url);
    await waitForView(page, "timeline");
    const answer = await page.evaluate(async (op) => {
      const r = await fetch(`/api/edits/${op}/revert`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ dry_run: true }),
      });
      return { status: r.status, body: await r.json() };
    }, ui.ids!.operation);
    expect(answer).toMatchObject({ status: 403, body: { error: { code: "ACTIONS_DISABLED" } } });
    await context.close();
  });
});
