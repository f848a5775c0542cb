import { afterAll } from "vitest";

/**
 * Run before every test file (vitest.config.ts `setupFiles`). The files share their worker
 * processes (`isolate: false`), so each starts from the environment the config gives (no watch
 * daemons) and leaves the environment as it found it, whatever its tests changed.
 */
const atStart = { ...process.env, TIMEWARP_WATCH: "0", TIMEWARP_WATCH_PRIME: "0" };
process.env.TIMEWARP_WATCH = "0";
process.env.TIMEWARP_WATCH_PRIME = "0";
afterAll(() => {
  for (const key of Object.keys(process.env)) if (!(key in atStart)) delete process.env[key];
  Object.assign(process.env, atStart);
});
