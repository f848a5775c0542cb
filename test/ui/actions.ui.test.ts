import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Browser, BrowserContext, Page, Response } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hashTree, launchChromium, timewarpJson } from "../../scripts/ui-harness.ts";
import { describeFocus, openView, signedIn, ui } from "./browser.ts";

/**
 * The page's actions against the CLI's. The button names are the contract the views match:
 * "Revert" on an edit, "Travel here" on a snapshot, "Return to present" once in the past; each
 * opens a confirmation dialog whose confirming button says the action again (or "Confirm").
 */
const CONFIRM = {
  revert: /^(Revert|Confirm)$/,
  travel: /^(Travel here|Travel|Confirm)$/,
  return: /^(Return to present|Return|Confirm)$/,
};

function isRealAction(r: Response): boolean {
  const req = r.request();
  if (req.method() !== "POST") return false;
  const body = req.postDataJSON() as { dry_run?: boolean } | null;
  return body?.dry_run !== true;
}

/** Press `button`, wait for the confirmation, confirm, and give back the action's JSON. */
async function confirmAction(page: Page, button: string, confirm: RegExp): Promise<unknown> {
  await page.getByRole("button", { name: button, exact: true }).click();
  const dialog = page.getByRole("dialog");
  await dialog.waitFor({ state: "visible", timeout: 60_000 });
  const [response] = await Promise.all([
    page.waitForResponse(isRealAction, { timeout: 90_000 }),
    dialog.getByRole("button", { name: confirm }).click(),
  ]);
  expect(response.status(), await response.text()).toBe(200);
  await dialog.waitFor({ state: "hidden", timeout: 60_000 });
  return response.json();
}

/** The JSON with what differs between two runs of the same action blanked: new ids, times, roots. */
function normalize(doc: unknown, root: string): unknown {
  const text = JSON.stringify(doc)
    .replaceAll(root, "<root>")
    .replace(/\d{4}-\d\d-\d\dT[\d:.]+Z/g, "<time>");
  return JSON.parse(text, (key, value) =>
    /^(newSnapshotId|.*_ms|.*Ms|duration.*)$/.test(key) ? "<varies>" : value,
  );
}

describe.skipIf(ui.skip !== undefined)("actions through the page (--allow-actions)", () => {
  let browser: Browser;
  let context: BrowserContext;
  beforeAll(async () => {
    browser = await launchChromium();
    context = await signedIn(browser, ui.actions!);
  });
  afterAll(async () => {
    await browser?.close();
  });

  it("revert: Escape cancels with nothing changed, then the confirmed revert equals the CLI's", async () => {
    const op = ui.ids!.operation;
    const before = hashTree(ui.uiTwin!);
    expect(hashTree(ui.cliTwin!)).toEqual(before);
    const { page, problems } = await openView(context, ui.actions!, `/edits/${op}`, "edit");

    // the preview, then Escape: the dialog closes, focus is back on the button, the tree is as it was
    const revert = page.getByRole("button", { name: "Revert", exact: true });
    const [preview] = await Promise.all([
      page.waitForResponse((r) => r.request().method() === "POST", { timeout: 60_000 }),
      revert.click(),
    ]);
    expect(preview.request().postDataJSON()).toMatchObject({ dry_run: true });
    const dialog = page.getByRole("dialog");
    await dialog.waitFor({ state: "visible" });
    await page.keyboard.press("Escape");
    await dialog.waitFor({ state: "hidden" });
    expect(await describeFocus(page)).toMatchObject({ tag: "button", text: "Revert" });
    expect(hashTree(ui.uiTwin!)).toEqual(before);

    const fromPage = await confirmAction(page, "Revert", CONFIRM.revert);
    const fromCli = timewarpJson(ui.cliTwin!, ["revert", op]);
    expect(fromCli).toMatchObject({ success: true, revertedIds: [op] });
    expect(normalize(fromPage, ui.uiTwin!)).toEqual(normalize(fromCli, ui.cliTwin!));
    const after = hashTree(ui.uiTwin!);
    expect(after).not.toEqual(before);
    expect(after).toEqual(hashTree(ui.cliTwin!));
    // and the two ledgers recorded the same revert
    const latest = (root: string) =>
      normalize(
        (timewarpJson(root, ["history", "--limit", "1"]) as { history: unknown[] }).history,
        root,
      );
    const strip = (h: unknown) =>
      JSON.parse(JSON.stringify(h).replace(/"id":"[0-9a-z]{10}"/g, '"id":"<id>"'));
    expect(strip(latest(ui.uiTwin!))).toEqual(strip(latest(ui.cliTwin!)));
    expect(problems).toEqual([]);
    await page.close();
  });

  it("travel and return through the page leave the tree exact", async () => {
    const snapshot = ui.ids!.snapshot;
    const root = ui.uiTwin!;
    const before = hashTree(root);
    const slugify = readFileSync(join(root, "src", "slugify.js"), "utf8");
    const { page, problems } = await openView(
      context,
      ui.actions!,
      `/snapshots/${snapshot}`,
      "snapshot",
    );

    await confirmAction(page, "Travel here", CONFIRM.travel);
    expect(timewarpJson(root, ["status"])).toMatchObject({
      mode: "past",
      current_snapshot_id: snapshot,
    });
    expect(hashTree(root)).not.toEqual(before);
    expect(readFileSync(join(root, "src", "slugify.js"), "utf8")).not.toBe(slugify);

    await confirmAction(page, "Return to present", CONFIRM.return);
    expect(timewarpJson(root, ["status"])).toMatchObject({ mode: "present" });
    expect(hashTree(root)).toEqual(before);
    expect(problems).toEqual([]);
    await page.close();
  });
});
