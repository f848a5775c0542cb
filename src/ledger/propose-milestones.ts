/** What proposals need to know of an operation (all of it is in the index). */
export interface OperationSummary {
  id: string;
  ts: number;
  tool: string;
  files: string[];
}

/** A boundary hint from outside the ledger: tests passed, or the user said a stage is done. */
export interface MilestoneSignal {
  kind: "tests_passed" | "explicit";
  ts: number;
  note?: string;
}

export type BoundaryReason = "tests_passed" | "explicit" | "pause" | "module_switch" | "end";

/** A group of consecutive operations the ledger suggests turning into a milestone. */
export interface MilestoneProposal {
  /** Stable while the history does not change: `p_<first op>_<last op>`. */
  id: string;
  snapshotIds: string[];
  /** Why the group ends where it ends. */
  reason: BoundaryReason;
  suggestedTitle: string;
  affectedFiles: string[];
  startedAt: string;
  endedAt: string;
}

export interface ProposeOptions {
  /** A gap longer than this between two operations ends a group (default 30 minutes). */
  pauseMs?: number;
  /** Path segments that name a module (default 2: `src/auth/x.ts` → `src/auth`). */
  moduleDepth?: number;
}

function moduleOf(path: string, depth: number): string {
  const parts = path.split("/");
  return parts.length <= 1 ? "." : parts.slice(0, Math.min(depth, parts.length - 1)).join("/");
}

/**
 * The seed's automatic milestone boundaries, as proposals (pure): a group of operations ends
 * when tests pass or the user signals a stage is done after it, when the next operation comes
 * after a long pause, or when the next operation works on different modules only. Operations
 * must be in recording order; those already in a milestone should be left out by the caller.
 * The last open group is proposed too, with reason "end".
 */
export function proposeMilestones(
  operations: readonly OperationSummary[],
  signals: readonly MilestoneSignal[],
  options: ProposeOptions = {},
): MilestoneProposal[] {
  const pauseMs = options.pauseMs ?? 30 * 60_000;
  const depth = options.moduleDepth ?? 2;
  const sortedSignals = [...signals].sort((a, b) => a.ts - b.ts);
  const proposals: MilestoneProposal[] = [];
  let group: OperationSummary[] = [];
  let modules = new Set<string>();
  let s = 0;
  const close = (reason: BoundaryReason) => {
    const firstOp = group[0];
    const lastOp = group[group.length - 1];
    if (firstOp === undefined || lastOp === undefined) return;
    const files = [...new Set(group.flatMap((o) => o.files))];
    const mods = [...new Set(files.map((f) => moduleOf(f, depth)))];
    proposals.push({
      id: `p_${firstOp.id}_${lastOp.id}`,
      snapshotIds: group.map((o) => o.id),
      reason,
      suggestedTitle: `${group.length} edit${group.length === 1 ? "" : "s"} in ${mods.slice(0, 3).join(", ")}${mods.length > 3 ? ", …" : ""}`,
      affectedFiles: files,
      startedAt: new Date(firstOp.ts).toISOString(),
      endedAt: new Date(lastOp.ts).toISOString(),
    });
    group = [];
    modules = new Set();
  };
  for (let i = 0; i < operations.length; i++) {
    const op = operations[i];
    if (op === undefined) continue;
    const prev = group[group.length - 1];
    if (prev !== undefined) {
      // A signal between the previous operation and this one closes the group with its kind.
      let signalled: MilestoneSignal | undefined;
      while (s < sortedSignals.length && (sortedSignals[s]?.ts ?? 0) <= op.ts) {
        if ((sortedSignals[s]?.ts ?? 0) >= prev.ts) signalled = sortedSignals[s];
        s++;
      }
      const opModules = op.files.map((f) => moduleOf(f, depth));
      if (signalled) close(signalled.kind);
      else if (op.ts - prev.ts > pauseMs) close("pause");
      else if (opModules.length > 0 && opModules.every((m) => !modules.has(m)))
        close("module_switch");
    } else {
      while (s < sortedSignals.length && (sortedSignals[s]?.ts ?? 0) <= op.ts) s++;
    }
    group.push(op);
    for (const f of op.files) modules.add(moduleOf(f, depth));
  }
  if (group.length > 0) {
    const trailing = sortedSignals
      .slice(s)
      .find((sig) => sig.ts >= (group[group.length - 1]?.ts ?? 0));
    close(trailing ? trailing.kind : "end");
  }
  return proposals;
}
