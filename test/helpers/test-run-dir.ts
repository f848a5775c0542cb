import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/**
 * vitest's global setup (vitest.config.ts `globalSetup`): one temp folder for the whole run,
 * named to the test processes by TIMEWARP_TEST_RUN_DIR, for what they keep across files (the
 * bundled child scripts of `helpers/bundle.ts`) and removed when the run ends. A fork's own exit
 * hook does not run: vitest stops its forks with a signal.
 */
export default function setup(): () => void {
  const dir = mkdtempSync(join(tmpdir(), "tw-run-"));
  process.env.TIMEWARP_TEST_RUN_DIR = dir;
  return () => rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 50 });
}
