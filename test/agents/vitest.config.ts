import { defineConfig } from "vitest/config";

// The real-client suite (`npm run test:agents`): each file drives one pinned agent client
// against a scripted model server; files run side by side, one client each.
export default defineConfig({
  test: {
    include: ["test/agents/**/*.e2e.test.ts"],
    testTimeout: 240_000,
    hookTimeout: 120_000,
    pool: "forks",
    maxWorkers: 4,
    globalSetup: ["test/helpers/test-run-dir.ts"],
  },
});
