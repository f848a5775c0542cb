import { defineConfig } from "vitest/config";

// The real-scheduler suite (`npm run test:slurm`): one munged + slurmctld + slurmd on localhost,
// started once by global-setup.ts; the node has one CPU, so the files run one at a time.
export default defineConfig({
  test: {
    include: ["test/slurm/**/*.slurm.test.ts"],
    globalSetup: ["test/helpers/test-run-dir.ts", "test/slurm/global-setup.ts"],
    testTimeout: 180_000,
    hookTimeout: 60_000,
    pool: "forks",
    fileParallelism: false,
    env: { TIMEWARP_WATCH: "0" },
  },
});
