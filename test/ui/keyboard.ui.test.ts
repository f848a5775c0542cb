import { join } from "node:path";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchChromium, waitForView } from "../../scripts/ui-harness.ts";
import { ARTIFACTS, describeFocus, openView, signedIn, ui } from "./browser.ts";

const NAV = ["Timeline", "Snapshots", "Issues", "Runs", "Memory"];

describe.skipIf(ui.skip !== undefined)("keyboard navigation", () => {
  let browser: Browser;
  let context: BrowserContext;
  beforeAll(async () => {
    browser = await launchChromium();
    context = await signedIn(browser, ui.read!);
  });
  afterAll(async () => {
    await browser?.close();
  });
  const timeline = () => openView(context, ui.read!, "/timeline", "timeline");

  it("Tab starts at the skip link, walks the nav in order, then reaches the main content", async () => {
    const { page, problems } = await timeline();
    const walk: Awaited<ReturnType<typeof describeFocus>>[] = [];
    for (let i = 0; i < 30; i++) {
      await page.keyboard.press("Tab");
      const f = await describeFocus(page);
      walk.push(f);
      if (f.inMain) break;
    }
    expect(walk[0]).toMatchObject({ tag: "a", text: "Skip to content" });
    expect(walk.filter((f) => f.inNav).map((f) => f.text)).toEqual(NAV);
    expect(walk.at(-1)?.inMain, `never reached main: ${JSON.stringify(walk)}`).toBe(true);
    // every stop shows where it is
    const ring = (await page.evaluate(`(() => {
      const s = getComputedStyle(document.activeElement);
      return { style: s.outlineStyle, width: Number.parseFloat(s.outlineWidth) };
    })()`)) as { style: string; width: number };
    expect(ring.style).not.toBe("none");
    expect(ring.width).toBeGreaterThanOrEqual(2);
    expect(problems).toEqual([]);
    await page.close();
  });

  it("the skip link moves focus to the main region, and Tab goes on inside it", async () => {
    const { page } = await timeline();
    await page.keyboard.press("Tab");
    const skip = page.getByRole("link", { name: "Skip to content" });
    expect(await skip.isVisible()).toBe(true);
    await page.keyboard.press("Enter");
    expect(await describeFocus(page)).toMatchObject({ tag: "main", id: "main" });
    expect(new URL(page.url()).pathname).toBe("/timeline");
    await page.keyboard.press("Tab");
    expect((await describeFocus(page)).inMain).toBe(true);
    await page.close();
  });

  it("Enter on a nav link navigates, marks it current and moves focus to main", async () => {
    const { page, problems } = await timeline();
    const runs = page
      .getByRole("navigation", { name: "Views" })
      .getByRole("link", { name: "Runs" });
    await runs.focus();
    await page.keyboard.press("Enter");
    await page.waitForURL("**/runs");
    await waitForView(page, "run-list");
    expect(await describeFocus(page)).toMatchObject({ tag: "main", id: "main" });
    expect(await runs.getAttribute("aria-current")).toBe("page");
    // Back returns to the timeline
    await page.goBack();
    await waitForView(page, "timeline");
    expect(problems).toEqual([]);
    await page.close();
  });

  it("? opens the shortcuts, Escape closes them and focus returns", async () => {
    const { page } = await timeline();
    await page.keyboard.press("Tab");
    await page.keyboard.press("Tab");
    const before = await describeFocus(page);
    await page.keyboard.press("?");
    const dialog = page.getByRole("dialog", { name: "Keyboard shortcuts" });
    await dialog.waitFor({ state: "visible" });
    expect(await page.evaluate(`!!document.activeElement?.closest("dialog")`)).toBe(true);
    await page.screenshot({ path: join(ARTIFACTS, "shortcuts.png") });
    for (const key of ["g", "t", "s", "i", "r", "m"])
      expect(
        await dialog.locator("kbd", { hasText: new RegExp(`^${key}$`) }).count(),
      ).toBeGreaterThan(0);
    await page.keyboard.press("Escape");
    await dialog.waitFor({ state: "hidden" });
    expect(await describeFocus(page)).toEqual(before);
    // the header's button opens the same list
    await page.getByRole("button", { name: "Keyboard shortcuts" }).click();
    await dialog.waitFor({ state: "visible" });
    await dialog.getByRole("button", { name: "Close" }).click();
    await dialog.waitFor({ state: "hidden" });
    await page.close();
  });

  it("g then a letter goes to each view", async () => {
    const { page, problems } = await timeline();
    const go: [string, string, string][] = [
      ["s", "/snapshots", "snapshot-list"],
      ["i", "/issues", "issue-list"],
      ["r", "/runs", "run-list"],
      ["m", "/memory", "memory-list"],
      ["t", "/timeline", "timeline"],
    ];
    for (const [key, path, view] of go) {
      await page.keyboard.press("g");
      await page.keyboard.press(key);
      await page.waitForURL(`**${path}`);
      await waitForView(page, view);
      expect(await describeFocus(page)).toMatchObject({ id: "main" });
    }
    expect(problems).toEqual([]);
    await page.close();
  });

  it("tabs move with the arrow keys and live in the query string (the edit's diff)", async () => {
    const path = `/edits/${ui.ids!.operation}`;
    const { page, problems } = await openView(context, ui.read!, path, "edit");
    const selected = () =>
      page.getByRole("tablist").first().locator('[role="tab"][aria-selected="true"]');
    const before = (await selected().textContent())?.trim();
    const search = new URL(page.url()).search;
    await selected().focus();
    await page.keyboard.press("ArrowRight");
    // (vitest's poll gives up after 1 s by default: a loaded machine's browser may take longer)
    await expect
      .poll(async () => (await selected().textContent())?.trim(), { timeout: 30_000 })
      .not.toBe(before);
    const after = (await selected().textContent())?.trim();
    expect((await describeFocus(page)).text).toBe(after);
    expect(new URL(page.url()).search, "the tab is in the URL").not.toBe(search);
    await page.reload();
    await waitForView(page, "edit");
    expect((await selected().textContent())?.trim(), "a reload keeps the tab").toBe(after);
    expect(problems).toEqual([]);
    await page.close();
  });

  it("shortcuts are ignored while typing in a field", async () => {
    const { page } = await timeline();
    await typeInField(page, "g r?");
    expect(new URL(page.url()).pathname).toBe("/timeline");
    expect(await page.getByRole("dialog", { name: "Keyboard shortcuts" }).isVisible()).toBe(false);
    await page.close();
  });
});

/** Type into the view's first text field, or one the test adds when the view has none. */
async function typeInField(page: Page, text: string): Promise<void> {
  const field = page.locator(
    'main input[type="text"], main input[type="search"], main input:not([type])',
  );
  if ((await field.count()) === 0)
    await page.evaluate(`(() => {
      const input = document.createElement("input");
      input.setAttribute("aria-label", "test field");
      document.querySelector("main").append(input);
    })()`);
  const target = (await field.count()) > 0 ? field.first() : page.getByLabel("test field");
  await target.focus();
  await page.keyboard.type(text);
  expect(await target.inputValue()).toContain(text);
}
