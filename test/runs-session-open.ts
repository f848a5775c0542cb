import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createSeededRandom, systemClock } from "../src/core/index.ts";
import {
  createRunDir,
  defaultProtocolIo,
  type SessionTimings,
  type StartSessionOptions,
  startToolSession,
  type ToolSession,
} from "../src/runs/index.ts";
import { FAST, settings } from "./runs-helpers.ts";

/** A tclsh session in a fresh run dir under `tmpDir`, for the liveness, audit and queue tests. */
export async function openTclshSession(
  tmpDir: string,
  o: {
    timings?: Partial<SessionTimings>;
    heartbeatMode?: StartSessionOptions["heartbeatMode"];
    env?: NodeJS.ProcessEnv;
  } = {},
): Promise<{ session: ToolSession; runDir: string; jobId: string }> {
  const cwd = join(tmpDir, "cwd");
  mkdirSync(cwd, { recursive: true });
  const { jobId, paths } = createRunDir({
    cwd,
    clock: systemClock,
    random: createSeededRandom(Math.floor(Math.random() * 1e9)),
  });
  const session = await startToolSession({
    runDir: paths.runDir,
    jobId,
    adapter: "tclsh",
    settings: settings(),
    timings: { ...FAST, ...o.timings },
    clock: systemClock,
    io: defaultProtocolIo,
    ...(o.env ? { env: o.env } : {}),
    ...(o.heartbeatMode ? { heartbeatMode: o.heartbeatMode } : {}),
  });
  return { session, runDir: paths.runDir, jobId };
}

/** Write `scripts/<name>` in the run dir and return its request path. */
export function writeScript(runDir: string, name: string, body: string): string {
  writeFileSync(join(runDir, "scripts", name), body);
  return `scripts/${name}`;
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Poll `cond` every 10 ms, up to `ms` (generous: the machine is shared); its last value. */
export async function waitFor(cond: () => boolean, ms = 10_000): Promise<boolean> {
  for (let waited = 0; waited < ms; waited += 10) {
    if (cond()) return true;
    await sleep(10);
  }
  return cond();
}
