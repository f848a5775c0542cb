import { defineConfig } from "vitest/config";

// The browser suite (`npm run test:ui`): the demo's workspace made once by global-setup.ts, served
// by real `timewarp ui` processes and walked by Debian's Chromium. One file at a time: each
// launches its own browser, and two Chromiums on a 2-core machine only slow each other down.
export default defineConfig({
  test: {
    include: ["test/ui/**/*.ui.test.ts"],
    globalSetup: ["test/helpers/test-run-dir.ts", "test/ui/global-setup.ts"],
    testTimeout: 120_000,
    hookTimeout: 300_000,
    pool: "forks",
    fileParallelism: false,
    env: { TIMEWARP_WATCH: "0" },
  },
});
