import type { TestProject } from "vitest/node";
import { type SlurmCluster, slurmUnavailable, startSlurmCluster } from "./cluster.ts";

/** What the tests learn about the cluster: its config, or why there is none. */
export interface SlurmProvided {
  conf?: string;
  node?: string;
  skip?: string;
}

declare module "vitest" {
  export interface ProvidedContext {
    slurm: SlurmProvided;
  }
}

let cluster: SlurmCluster | undefined;

export async function setup(project: TestProject): Promise<void> {
  let skip = slurmUnavailable();
  if (!skip) {
    try {
      cluster = await startSlurmCluster();
    } catch (error) {
      skip = `the Slurm daemons did not start: ${error instanceof Error ? error.message : String(error)}`;
    }
  }
  if (skip) {
    // said once here; every test is then skipped and the suite exits 0
    console.log(`test:slurm skipped: ${skip}`);
    project.provide("slurm", { skip });
    return;
  }
  project.provide("slurm", { conf: cluster?.conf, node: cluster?.node });
}

export async function teardown(): Promise<void> {
  await cluster?.stop();
}
