import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/**
 * A real, tiny tmpfs for disk-full tests (ENOSPC from the kernel, not a mock). Needs mount
 * rights (root in CI and on the dev machines); returns null where mounting is not permitted,
 * so callers can `it.skipIf` honestly rather than pretend.
 */
export function mountSmallTmpfs(sizeKiB: number): { dir: string; unmount: () => void } | null {
  const dir = mkdtempSync(join(tmpdir(), "tw-smallfs-"));
  const r = spawnSync("mount", ["-t", "tmpfs", "-o", `size=${sizeKiB}k`, "tmpfs", dir], {
    encoding: "utf8",
  });
  if (r.status !== 0) {
    rmSync(dir, { recursive: true, force: true });
    return null;
  }
  return {
    dir,
    unmount: () => {
      spawnSync("umount", ["-l", dir]);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Whether this machine lets the tests mount a tmpfs. */
export const canMountTmpfs: boolean = (() => {
  const fs = mountSmallTmpfs(16);
  fs?.unmount();
  return fs !== null;
})();
