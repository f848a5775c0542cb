import type { FilePatch } from "./types.ts";

/** Lines added and removed (binary diffs count 0). */
export function patchStats(patch: FilePatch): { added: number; removed: number } {
  let added = 0;
  let removed = 0;
  for (const h of patch.hunks) {
    for (const l of h.lines) {
      if (l[0] === "+") added++;
      else if (l[0] === "-") removed++;
    }
  }
  return { added, removed };
}
