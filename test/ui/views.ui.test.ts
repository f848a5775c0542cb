import { join } from "node:path";
import type { Browser, BrowserContext } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchChromium, viewUrls } from "../../scripts/ui-harness.ts";
import { ARTIFACTS, openView, signedIn, ui } from "./browser.ts";

const views = ui.ids === undefined ? [] : viewUrls(ui.ids);

describe.skipIf(ui.skip !== undefined)("every view on the demo's data", () => {
  let browser: Browser;
  let light: BrowserContext;
  let dark: BrowserContext;
  beforeAll(async () => {
    browser = await launchChromium();
    light = await signedIn(browser, ui.read!, { colorScheme: "light" });
    dark = await signedIn(browser, ui.read!, { colorScheme: "dark" });
  });
  afterAll(async () => {
    await browser?.close();
  });

  it.each(views)("$path renders [data-view=$view] with no error", async ({ view, path }) => {
    const { page, problems } = await openView(light, ui.read!, path, view);
    // a late answer's error shows up after the first paint
    await page.waitForTimeout(300);
    expect(problems).toEqual([]);
    expect(await page.locator("main h1").count(), "one h1 per view").toBe(1);
    expect(await page.title()).not.toBe("");
    await page.screenshot({ path: join(ARTIFACTS, `${view}.png`), fullPage: true });
    await page.close();
  });

  it.each(views.filter((v) => v.main))("$path in the dark color scheme", async ({ view, path }) => {
    const { page, problems } = await openView(dark, ui.read!, path, view);
    await page.waitForTimeout(300);
    expect(problems).toEqual([]);
    const bg = await page.evaluate("getComputedStyle(document.body).backgroundColor");
    expect(bg, "the dark scheme's background").not.toBe("rgb(255, 255, 255)");
    await page.screenshot({ path: join(ARTIFACTS, `${view}-dark.png`), fullPage: true });
    await page.close();
  });

  it.each([
    ["snapshot-list", "/snapshots", `/snapshots/${ui.ids?.snapshot}`],
    ["issue-list", "/issues", `/issues/${ui.ids?.issue}`],
    ["run-list", "/runs", `/runs/${ui.ids?.job}`],
    ["memory-list", "/memory", `/memory/${ui.ids?.memoryRun}`],
    ["timeline", "/timeline", `/edits/${ui.ids?.operation}`],
  ])("%s links to its items by their stable URL (%s → %s)", async (view, path, target) => {
    const { page, problems } = await openView(light, ui.read!, path, view);
    const link = page.locator(`main a[href="${target}"]`).first();
    await link.click();
    await page.waitForURL(`**${target}`);
    expect(problems).toEqual([]);
    await page.close();
  });
});
