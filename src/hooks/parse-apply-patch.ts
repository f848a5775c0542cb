/** One file a Codex `apply_patch` touches. `moveTo` is set when an update also renames. */
export interface PatchTarget {
  action: "add" | "update" | "delete";
  path: string;
  moveTo?: string;
}

const HEADER = /^\*\*\* (Add|Update|Delete) File: (.+)$/;
const MOVE = /^\*\*\* Move to: (.+)$/;

/**
 * The files named by a Codex patch (`*** Begin Patch` … `*** End Patch`, with `*** Add File:`,
 * `*** Update File:` [+ `*** Move to:`] and `*** Delete File:` headers). Only the headers matter
 * here: the hook captures whole pre-images and lets Codex apply the hunks itself. Text before
 * `*** Begin Patch` (a shell heredoc around it) is ignored. Pure.
 */
export function parseApplyPatch(text: string): PatchTarget[] {
  const targets: PatchTarget[] = [];
  let inside = !text.includes("*** Begin Patch");
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trimEnd();
    if (line === "*** Begin Patch") {
      inside = true;
      continue;
    }
    if (line === "*** End Patch") {
      inside = false;
      continue;
    }
    if (!inside) continue;
    const header = HEADER.exec(line);
    if (header) {
      const kind = header[1];
      const path = header[2]?.trim() ?? "";
      if (path === "") continue;
      targets.push({
        action: kind === "Add" ? "add" : kind === "Delete" ? "delete" : "update",
        path,
      });
      continue;
    }
    const move = MOVE.exec(line);
    const last = targets[targets.length - 1];
    if (move && last?.action === "update") last.moveTo = move[1]?.trim();
  }
  return targets;
}
