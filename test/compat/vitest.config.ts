import { defineConfig } from "vitest/config";

// The other shells and awks (`npm run test:compat`): the hook shell client under busybox's sh and
// awk (Alpine's) and the one true awk (the BSDs' and macOS's), which `.ci/run` installs from
// Debian's packages, and under bash + gawk. `npm test` runs the same suite under Debian's own
// dash + mawk, and its first tests under bash + gawk.
export default defineConfig({
  test: {
    include: ["test/compat/**/*.compat.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: "forks",
    globalSetup: ["test/helpers/test-run-dir.ts"],
    env: { TIMEWARP_WATCH: "0" },
  },
});
