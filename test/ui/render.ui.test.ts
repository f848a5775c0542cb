import { appendFileSync } from "node:fs";
import { join } from "node:path";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchChromium, waitForView } from "../../scripts/ui-harness.ts";
import { signedIn, ui, watchProblems } from "./browser.ts";

/**
 * What a visit of the timeline costs the server: the page comes with the first answers its view
 * needs, and the page's files are kept by the browser under a version (`/v/<hash>/…`), so a
 * second visit asks for the page alone; live rows still arrive on top of the preloaded ones.
 */
describe.skipIf(ui.skip !== undefined)("the timeline's first render", () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
  });

  it("asks for nothing but the page on a second visit: files from the cache, data in the page", async () => {
    const context = await signedIn(browser, ui.read!);
    const page = await context.newPage();
    const problems = watchProblems(page);
    await page.goto(`${ui.read!.origin}/timeline`);
    await waitForView(page, "timeline");
    await page.goto(`${ui.read!.origin}/timeline`);
    await waitForView(page, "timeline");
    expect(await page.locator('[data-view="timeline"] .tl-row').count()).toBeGreaterThan(0);
    const entries = await page.evaluate(() =>
      performance.getEntriesByType("resource").map((e) => ({
        path: new URL(e.name).pathname,
        bytes: (e as unknown as { transferSize: number }).transferSize,
      })),
    );
    // the live streams open once the view is up; nothing else goes to the API
    const api = entries.filter((e) => e.path.startsWith("/api/") && !e.path.endsWith("/stream"));
    expect(api).toEqual([]);
    const files = entries.filter((e) => e.path.startsWith("/v/"));
    expect(files.map((f) => f.path)).toContainEqual(expect.stringMatching(/\/assets\/app\.js$/));
    for (const f of files) expect(f.bytes, `${f.path} from the cache`).toBe(0);
    expect(problems).toEqual([]);
    await context.close();
  });

  it("still puts live rows on top of the preloaded page", async () => {
    const context = await signedIn(browser, ui.actions!);
    const page = await context.newPage();
    const problems = watchProblems(page);
    await page.goto(`${ui.actions!.origin}/timeline`);
    await waitForView(page, "timeline");
    await page.getByText("Live: on").waitFor({ timeout: 30_000 });
    const before = await page.locator('[data-view="timeline"] .tl-row').count();
    const prompt = `a prompt after the page loaded ${Date.now()}`;
    const turn = {
      type: "turn.checkpointed",
      ts: new Date().toISOString(),
      data: { session_id: "render-test", turn: 1, snapshot_id: "s_none", stored: false, prompt },
    };
    appendFileSync(join(ui.uiTwin!, ".timewarp", "events.jsonl"), `${JSON.stringify(turn)}\n`);
    const group = page.locator(".tl-group").first();
    await group.getByText(prompt).waitFor({ timeout: 30_000 });
    // the preloaded rows stay below it
    expect(await page.locator('[data-view="timeline"] .tl-row').count()).toBe(before);
    expect(problems).toEqual([]);
    await context.close();
  });
});
