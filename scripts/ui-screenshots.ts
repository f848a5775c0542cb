/**
 * `npm run ui:screenshots`: the README's screenshots of the dashboard, one per main view, taken
 * by Debian's Chromium from the demo's data.
 *
 *   npm run ui:screenshots                      # runs the demo in a temp dir first (~1 min)
 *   npm run ui:screenshots -- --from DIR        # a directory `npm run demo -- DIR` filled
 *   npm run ui:screenshots -- --out DIR         # where the PNGs go (default: docs/screenshots)
 *
 * Nothing is written outside the temp dir and the output folder.
 */
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import {
  chromiumUnavailable,
  demoIds,
  launchChromium,
  REPO,
  runDemo,
  startUi,
  viewUrls,
  waitForView,
} from "./ui-harness.ts";

/** The file name of each main view's screenshot (what the README links to). */
const FILE_OF: Record<string, string> = {
  timeline: "timeline",
  edit: "edit",
  snapshot: "snapshot",
  issue: "issue",
  run: "run",
  "memory-run": "memory",
};

const { values } = parseArgs({
  options: { from: { type: "string" }, out: { type: "string" } },
});
const out = resolve(values.out ?? join(REPO, "docs", "screenshots"));
const why = chromiumUnavailable();
if (why !== undefined) {
  console.error(`ui:screenshots: ${why}`);
  process.exit(1);
}

const tmp = values.from === undefined ? mkdtempSync(join(tmpdir(), "tw-shots-")) : undefined;
const demoDir = values.from === undefined ? join(tmp ?? "", "demo") : resolve(values.from);
try {
  if (tmp !== undefined) {
    console.log(`running the demo in ${demoDir} …`);
    await runDemo(demoDir);
  }
  const project = join(demoDir, "project");
  const server = await startUi(project);
  const browser = await launchChromium();
  try {
    const context = await browser.newContext({
      viewport: { width: 1280, height: 800 },
      colorScheme: "light",
    });
    const page = await context.newPage();
    await page.goto(server.url);
    await waitForView(page, "timeline");
    mkdirSync(out, { recursive: true });
    for (const { view, path } of viewUrls(demoIds(project))) {
      const name = FILE_OF[view];
      if (name === undefined) continue;
      await page.goto(`${server.origin}${path}`);
      await waitForView(page, view);
      const file = join(out, `${name}.png`);
      await page.screenshot({ path: file });
      console.log(`${file}  (${path})`);
    }
  } finally {
    await browser.close();
    await server.stop();
  }
} finally {
  if (tmp !== undefined) rmSync(tmp, { recursive: true, force: true, maxRetries: 5 });
}
