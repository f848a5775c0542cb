import { cpSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import {
  chromiumUnavailable,
  type DemoIds,
  demoIds,
  runDemo,
  startUi,
  type UiLaunch,
} from "../../scripts/ui-harness.ts";

/** A dashboard server as the tests reach it. */
export interface ServerProvided {
  url: string;
  origin: string;
  token: string;
}

/** What the tests learn: the demo's workspace and its servers, or why there are none. */
export interface UiProvided {
  skip?: string;
  /** What `npm run demo` printed. */
  demoOutput?: string;
  /** The demo's project, served read-only by `read`. */
  project?: string;
  /** Two copies of it, made before any action: the CLI acts on one, the page on the other. */
  cliTwin?: string;
  uiTwin?: string;
  read?: ServerProvided;
  /** `--allow-actions`, on uiTwin. */
  actions?: ServerProvided;
  ids?: DemoIds;
}

declare module "vitest" {
  export interface ProvidedContext {
    ui: UiProvided;
  }
}

let tmp: string | undefined;
const servers: UiLaunch[] = [];

export async function setup(project: TestProject): Promise<void> {
  const skip = chromiumUnavailable();
  if (skip !== undefined) {
    // said once here; every test is then skipped and the suite exits 0
    console.log(`test:ui skipped: ${skip}`);
    project.provide("ui", { skip });
    return;
  }
  tmp = mkdtempSync(join(tmpdir(), "tw-ui-"));
  const demoDir = join(tmp, "demo");
  const demoOutput = await runDemo(demoDir);
  const demoProject = join(demoDir, "project");
  const cliTwin = join(tmp, "cli-twin", "project");
  const uiTwin = join(tmp, "ui-twin", "project");
  for (const twin of [cliTwin, uiTwin])
    cpSync(demoProject, twin, {
      recursive: true,
      verbatimSymlinks: true,
      preserveTimestamps: true,
    });
  const read = await startUi(demoProject);
  servers.push(read);
  const actions = await startUi(uiTwin, { allowActions: true });
  servers.push(actions);
  const served = (s: UiLaunch): ServerProvided => ({
    url: s.url,
    origin: s.origin,
    token: s.token,
  });
  project.provide("ui", {
    demoOutput,
    project: demoProject,
    cliTwin,
    uiTwin,
    read: served(read),
    actions: served(actions),
    ids: demoIds(demoProject),
  });
}

export async function teardown(): Promise<void> {
  await Promise.all(servers.map((s) => s.stop()));
  if (tmp !== undefined && process.env.TIMEWARP_KEEP_UI !== "1")
    rmSync(tmp, { recursive: true, force: true, maxRetries: 5, retryDelay: 50 });
  else if (tmp !== undefined) console.log(`test:ui kept its workspace: ${tmp}`);
}
