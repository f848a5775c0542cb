import { availableParallelism } from "node:os";
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["src/**/*.test.ts", "test/**/*.test.ts"],
    // The real agent clients, the real Slurm, the real browser and the other shells and awks run
    // in their own suites: `npm run test:agents`, `test:slurm`, `test:ui`, `test:compat`.
    exclude: [
      "test/agents/**",
      "test/slurm/**",
      "test/ui/**",
      "test/compat/**",
      "**/node_modules/**",
    ],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: "forks",
    // Most suites wait on child processes (the CLI, tclsh, hook servers), not on the CPU: more
    // forks than cores keep a 2-core CI machine busy (vitest's default there is one fork).
    maxWorkers: Math.max(3, availableParallelism()),
    // Files share their forks instead of each loading the sources again (the imports took ~115
    // of ~400 s of CPU): `npm test` went from 7.0 to ~5.7 min on 2 cores. What a file could
    // leave behind for the next is its environment, which the setup file restores.
    isolate: false,
    setupFiles: ["test/helpers/file-env.ts"],
    globalSetup: ["test/helpers/test-run-dir.ts"],
    // No watch daemons started by the hook and CLI tests; test/watch.test.ts turns it back on.
    // The daemons of the tests that start one do not prime (their first scan walks, as they
    // expect); test/watch-prime.test.ts turns that back on.
    env: { TIMEWARP_WATCH: "0", TIMEWARP_WATCH_PRIME: "0" },
  },
});
