import { readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchChromium, REPO, viewUrls } from "../../scripts/ui-harness.ts";
import { ARTIFACTS, openView, signedIn, ui } from "./browser.ts";

const AXE_SOURCE = readFileSync(
  createRequire(join(REPO, "package.json")).resolve("axe-core/axe.min.js"),
  "utf8",
);

interface AxeViolation {
  id: string;
  impact: "minor" | "moderate" | "serious" | "critical" | null;
  help: string;
  helpUrl: string;
  nodes: { target: string[]; failureSummary?: string }[];
}

/** What axe finds on the page: WCAG 2.x A and AA, and its best practices. */
async function runAxe(page: Page): Promise<AxeViolation[]> {
  const result = (await page.evaluate(`axe.run(document, {
    runOnly: { type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa", "best-practice"] },
    resultTypes: ["violations"],
  })`)) as { violations: AxeViolation[] };
  return result.violations;
}

const findings: Record<string, AxeViolation[]> = {};
const schemes = ["light", "dark"] as const;
const cases = (ui.ids === undefined ? [] : viewUrls(ui.ids)).flatMap((v) =>
  schemes.map((scheme) => ({ ...v, scheme })),
);

describe.skipIf(ui.skip !== undefined)("accessibility (axe-core) of every view", () => {
  let browser: Browser;
  const contexts: Partial<Record<(typeof schemes)[number], BrowserContext>> = {};
  beforeAll(async () => {
    browser = await launchChromium();
    for (const scheme of schemes) {
      // axe goes in as an init script (the page's CSP allows no inline script, and needs no
      // bypass for this: init scripts are the browser's, not the page's)
      const context = await signedIn(browser, ui.read!, { colorScheme: scheme });
      await context.addInitScript({ content: AXE_SOURCE });
      contexts[scheme] = context;
    }
  });
  afterAll(async () => {
    await browser?.close();
    writeFileSync(join(ARTIFACTS, "axe.json"), `${JSON.stringify(findings, null, 2)}\n`);
    writeFileSync(join(ARTIFACTS, "axe.md"), summary(findings));
  });

  it.each(cases)("$path ($scheme): no serious or critical violation", async (c) => {
    const { page } = await openView(contexts[c.scheme]!, ui.read!, c.path, c.view);
    const violations = await runAxe(page);
    findings[`${c.view} (${c.scheme})`] = violations;
    const grave = violations.filter((v) => v.impact === "serious" || v.impact === "critical");
    expect(
      grave.map(
        (v) => `${v.id}: ${v.help} at ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`,
      ),
    ).toEqual([]);
    await page.close();
  });

  it("is live: it finds what the test breaks (an image without a text alternative)", async () => {
    const { page } = await openView(contexts.light!, ui.read!, "/timeline", "timeline");
    await page.evaluate(`document.querySelector("main").append(document.createElement("img"))`);
    const violations = await runAxe(page);
    expect(violations.map((v) => v.id)).toContain("image-alt");
    await page.close();
  });

  it("a dialog open over a view passes too (the keyboard shortcuts)", async () => {
    const { page } = await openView(contexts.light!, ui.read!, "/timeline", "timeline");
    await page.keyboard.press("?");
    await page.getByRole("dialog", { name: "Keyboard shortcuts" }).waitFor();
    const violations = await runAxe(page);
    findings["shortcuts dialog (light)"] = violations;
    expect(violations.filter((v) => v.impact === "serious" || v.impact === "critical")).toEqual([]);
    await page.close();
  });
});

/** The findings as a table a person reads: view, rule, impact, how many elements. */
function summary(all: Record<string, AxeViolation[]>): string {
  const rows = Object.entries(all).flatMap(([view, vs]) =>
    vs.length === 0
      ? [`| ${view} | — | — | 0 | no violation |`]
      : vs.map((v) => `| ${view} | ${v.id} | ${v.impact ?? ""} | ${v.nodes.length} | ${v.help} |`),
  );
  return `# axe-core findings\n\n| view | rule | impact | elements | what |\n|---|---|---|---|---|\n${rows.join("\n")}\n`;
}
