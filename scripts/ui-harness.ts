/**
 * The dashboard as a person meets it, for the browser suite (`npm run test:ui`, test/ui/) and the
 * README screenshots (`npm run ui:screenshots`): the demo's workspace, `timewarp ui` as a real
 * child process of the built bin, and Debian's Chromium driven by playwright-core (no browser
 * download: the one the system package manager installed).
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, lstatSync, readdirSync, readFileSync, readlinkSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { type Browser, chromium, type Page } from "playwright-core";

export const REPO = resolve(import.meta.dirname, "..");
const BIN = join(REPO, "bin", "timewarp.cjs");

/** Debian's package puts it here; TIMEWARP_CHROMIUM names another build. */
export const CHROMIUM = process.env.TIMEWARP_CHROMIUM ?? "/usr/bin/chromium";

/** Why no browser test can run here, or undefined when Chromium is installed. */
export function chromiumUnavailable(): string | undefined {
  if (!existsSync(CHROMIUM))
    return `Chromium is not installed at ${CHROMIUM} (apt-get install chromium, as .ci/run does; or set TIMEWARP_CHROMIUM)`;
  if (!existsSync(join(REPO, "dist", "bin", "timewarp.cjs")))
    return "the CLI is not built (npm run build)";
  return undefined;
}

/**
 * Chromium headless, quiet (no update, sync or background traffic that a test would see as a
 * request). Playwright gives every launch a fresh temporary --user-data-dir of its own and
 * removes it on close.
 */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--no-first-run",
    ],
  });
}

/** A running `timewarp ui`: the URL it printed (token included), and how to stop it. */
export interface UiLaunch {
  url: string;
  origin: string;
  token: string;
  pid: number;
  stop(): Promise<void>;
}

/** `timewarp -C PROJECT ui --json [--allow-actions]` as a child process; resolves once it printed its URL. */
export function startUi(
  project: string,
  options: { allowActions?: boolean } = {},
): Promise<UiLaunch> {
  const args = [BIN, "-C", project, "ui", "--json"];
  if (options.allowActions === true) args.push("--allow-actions");
  const child = spawn(process.execPath, args, {
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, NO_COLOR: "1", TIMEWARP_WATCH: "0" },
  });
  let out = "";
  let err = "";
  child.stderr?.on("data", (d: Buffer) => {
    err += d.toString();
  });
  return new Promise((resolvePromise, reject) => {
    const onExit = (code: number | null) =>
      reject(new Error(`timewarp ui exited (${code}) before printing its URL: ${out}${err}`));
    child.once("exit", onExit);
    child.stdout?.on("data", (d: Buffer) => {
      out += d.toString();
      const line = out.split("\n")[0];
      if (!out.includes("\n") || line === undefined) return;
      child.off("exit", onExit);
      const doc = JSON.parse(line) as { url: string };
      const url = new URL(doc.url);
      resolvePromise({
        url: doc.url,
        origin: url.origin,
        token: url.searchParams.get("token") ?? "",
        pid: child.pid ?? 0,
        stop: () => stopChild(child),
      });
    });
  });
}

function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((done) => {
    child.once("exit", () => done());
    child.kill("SIGTERM");
  });
}

/** `npm run demo -- DIR`: the demo's real data in DIR (which must not exist or be empty); its stdout. */
export function runDemo(dir: string): Promise<string> {
  const child = spawn("npm", ["run", "--silent", "demo", "--", dir], {
    cwd: REPO,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, NO_COLOR: "1" },
  });
  let out = "";
  let err = "";
  child.stdout?.on("data", (d: Buffer) => {
    out += d.toString();
  });
  child.stderr?.on("data", (d: Buffer) => {
    err += d.toString();
  });
  return new Promise((done, reject) => {
    child.once("exit", (code) =>
      code === 0 ? done(out) : reject(new Error(`npm run demo exited ${code}:\n${out}${err}`)),
    );
  });
}

/** The built CLI in PROJECT with `--json`: its document (throws on a non-zero exit). */
export function timewarpJson(project: string, args: string[]): Record<string, unknown> {
  const r = spawnSync(process.execPath, [BIN, "-C", project, ...args, "--json"], {
    encoding: "utf8",
    env: { ...process.env, NO_COLOR: "1", TIMEWARP_WATCH: "0" },
    timeout: 120_000,
  });
  if (r.status !== 0)
    throw new Error(`timewarp ${args.join(" ")} exited ${r.status}: ${r.stdout}${r.stderr}`);
  return JSON.parse(r.stdout) as Record<string, unknown>;
}

/** One real id per detail view, from the demo's workspace (the CLI's answers: the same library calls). */
export interface DemoIds {
  /** The latest ledger operation (the demo's re-applied fix: revertable exactly). */
  operation: string;
  /** The session snapshot (the issue's, and travel's target). */
  snapshot: string;
  issue: string;
  /** The PASS job of summary_health. */
  job: string;
  memoryRun: string;
}

export function demoIds(project: string): DemoIds {
  const history = timewarpJson(project, ["history", "--limit", "1"]) as {
    history: { id: string }[];
  };
  const snapshots = timewarpJson(project, ["snapshot", "list"]) as {
    snapshots: { snapshot_id: string; origin: string }[];
  };
  const issues = timewarpJson(project, ["issue", "list", "--status", "all"]) as {
    issues: { issue_id: string }[];
  };
  const jobs = timewarpJson(project, ["skill", "runs"]) as {
    jobs: { job_id: string; status: string }[];
  };
  const runs = readdirSync(join(project, ".timewarp", "memory", "runs"));
  const pick = <T>(what: string, value: T | undefined): T => {
    if (value === undefined) throw new Error(`the demo's workspace has no ${what}`);
    return value;
  };
  return {
    operation: pick("ledger operation", history.history[0]?.id),
    snapshot: pick(
      "session snapshot",
      (snapshots.snapshots.find((s) => s.origin === "session") ?? snapshots.snapshots[0])
        ?.snapshot_id,
    ),
    issue: pick("issue", issues.issues[0]?.issue_id),
    job: pick("job", (jobs.jobs.find((j) => j.status === "PASS") ?? jobs.jobs[0])?.job_id),
    memoryRun: pick("memory run", runs[0]),
  };
}

/** A view of the dashboard: its `data-view` name, its stable URL, whether it is a main view. */
export interface ViewUrl {
  view: string;
  path: string;
  main: boolean;
}

/** Every view of the contract (src/ui/web/routes.js), each at a URL with a real id. */
export function viewUrls(ids: DemoIds): ViewUrl[] {
  const e = encodeURIComponent;
  return [
    { view: "timeline", path: "/timeline", main: true },
    { view: "edit", path: `/edits/${e(ids.operation)}`, main: true },
    { view: "snapshot-list", path: "/snapshots", main: false },
    { view: "snapshot", path: `/snapshots/${e(ids.snapshot)}`, main: true },
    { view: "issue-list", path: "/issues", main: false },
    { view: "issue", path: `/issues/${e(ids.issue)}`, main: true },
    { view: "run-list", path: "/runs", main: false },
    { view: "run", path: `/runs/${e(ids.job)}`, main: true },
    { view: "memory-list", path: "/memory", main: false },
    { view: "memory-run", path: `/memory/${e(ids.memoryRun)}`, main: true },
  ];
}

/**
 * Wait until the view `name` is on the page and done loading: its root element is there and no
 * loading line or busy region is left in it.
 */
export async function waitForView(page: Page, name: string): Promise<void> {
  await page
    .locator(`[data-view="${name}"]`)
    .first()
    .waitFor({ state: "visible", timeout: 30_000 });
  // Locators, not waitForFunction: a predicate given as a string is evaluated by the page, which
  // its Content-Security-Policy (no unsafe-eval) refuses.
  const main = page.locator("main");
  await main.locator('[aria-busy="true"]').first().waitFor({ state: "detached", timeout: 30_000 });
  await main.getByText("Loading…").first().waitFor({ state: "detached", timeout: 30_000 });
}

/**
 * Every entry of the workspace (not .timewarp/ nor .skillpilot/) → its mode and sha256 (a
 * symlink: its target): two equal maps are two identical trees.
 */
export function hashTree(root: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const abs = join(dir, entry.name);
      const rel = relative(root, abs);
      if (rel === ".timewarp" || rel === ".skillpilot") continue;
      const mode = (lstatSync(abs).mode & 0o7777).toString(8);
      if (entry.isDirectory()) {
        out[`${rel}/`] = `dir ${mode}`;
        walk(abs);
      } else if (entry.isSymbolicLink()) out[rel] = `link -> ${readlinkSync(abs)}`;
      else out[rel] = `${mode} ${createHash("sha256").update(readFileSync(abs)).digest("hex")}`;
    }
  };
  walk(root);
  return Object.fromEntries(Object.entries(out).sort(([a], [b]) => a.localeCompare(b)));
}
