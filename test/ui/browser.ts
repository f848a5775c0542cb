import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { Browser, BrowserContext, BrowserContextOptions, Page } from "playwright-core";
import { inject } from "vitest";
import { REPO, waitForView } from "../../scripts/ui-harness.ts";
import type { ServerProvided } from "./global-setup.ts";

/** The demo's workspace and servers global-setup.ts started, or why there are none. */
export const ui = inject("ui");

/** Screenshots and accessibility findings land here (gitignored): the suite's artifacts. */
export const ARTIFACTS = join(REPO, "test-artifacts", "ui");
mkdirSync(ARTIFACTS, { recursive: true });

export const VIEWPORT = { width: 1280, height: 800 };

/**
 * A browser context signed in as a user is: by opening the URL `timewarp ui` printed (the token
 * moves into the page's cookie). The page it used is closed.
 */
export async function signedIn(
  browser: Browser,
  server: ServerProvided,
  options: BrowserContextOptions = {},
): Promise<BrowserContext> {
  const context = await browser.newContext({ viewport: VIEWPORT, ...options });
  const page = await context.newPage();
  await page.goto(server.url);
  // the shell, not a view: a broken timeline fails its own tests, not every test's sign-in
  await page.getByRole("navigation", { name: "Views" }).waitFor({ timeout: 30_000 });
  if (!(await context.cookies(server.origin)).some((c) => c.name.startsWith("tw_token_")))
    throw new Error(`opening ${server.url} set no token cookie`);
  await page.close();
  return context;
}

/**
 * What went wrong on a page while a test looked at it: console errors, uncaught exceptions,
 * requests that failed or were answered with an error status. A request the page itself
 * abandoned (net::ERR_ABORTED: a stream closed, a fetch superseded) is not a failure.
 */
export function watchProblems(page: Page): string[] {
  const problems: string[] = [];
  page.on("console", (m) => {
    if (m.type() === "error") problems.push(`console error: ${m.text()}`);
  });
  page.on("pageerror", (e) => problems.push(`uncaught: ${e.message}`));
  page.on("requestfailed", (r) => {
    const why = r.failure()?.errorText ?? "";
    if (!why.includes("ERR_ABORTED")) problems.push(`request failed: ${r.url()} (${why})`);
  });
  page.on("response", (r) => {
    if (r.status() >= 400) problems.push(`HTTP ${r.status()}: ${r.url()}`);
  });
  return problems;
}

/** Open PATH on SERVER in CONTEXT and wait for VIEW to be rendered and loaded. */
export async function openView(
  context: BrowserContext,
  server: ServerProvided,
  path: string,
  view: string,
): Promise<{ page: Page; problems: string[] }> {
  const page = await context.newPage();
  const problems = watchProblems(page);
  await page.goto(`${server.origin}${path}`);
  await waitForView(page, view);
  return { page, problems };
}

/** What has focus, described for an assertion message. */
export function describeFocus(page: Page): Promise<{
  tag: string;
  id: string;
  text: string;
  inNav: boolean;
  inMain: boolean;
}> {
  // a string: the page's DOM is not in this program's types
  return page.evaluate(`(() => {
    const el = document.activeElement;
    return {
      tag: el ? el.tagName.toLowerCase() : "",
      id: el ? el.id : "",
      text: ((el && el.textContent) || "").trim().slice(0, 60),
      inNav: !!(el && el.closest("header nav")),
      inMain: !!(el && el.closest("main")),
    };
  })()`);
}
