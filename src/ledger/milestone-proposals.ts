import { appendEvent, ErrorCode, readEvents, systemClock, TimewarpError } from "../core/index.ts";
import { filesAt, idAt, loadIndex, toolAt } from "./history-index.ts";
import type { LedgerContext } from "./ledger-context.ts";
import { ledgerPaths } from "./ledger-paths.ts";
import { listMilestones } from "./milestone-store.ts";
import { type CreateMilestoneResult, createMilestone } from "./milestones.ts";
import {
  type MilestoneProposal,
  type MilestoneSignal,
  type OperationSummary,
  type ProposeOptions,
  proposeMilestones,
} from "./propose-milestones.ts";

/** Record a boundary hint on the event bus (`milestone.signal`), for proposals to use. */
export function recordMilestoneSignal(
  ctx: LedgerContext,
  signal: { kind: MilestoneSignal["kind"]; note?: string },
): void {
  appendEvent(
    ledgerPaths(ctx.root).events,
    "milestone.signal",
    { kind: signal.kind, note: signal.note },
    ctx.clock ?? systemClock,
  );
}

/** Proposals over the operations not yet in any milestone, with the bus's signals. */
export function listMilestoneProposals(
  ctx: LedgerContext,
  options: ProposeOptions = {},
): MilestoneProposal[] {
  const paths = ledgerPaths(ctx.root);
  const taken = new Set(listMilestones(paths).flatMap((m) => m.snapshotIds));
  const index = loadIndex(paths.index);
  const ops: OperationSummary[] = [];
  for (let i = 0; i < index.count; i++) {
    const id = idAt(index, i);
    if (taken.has(id)) continue;
    ops.push({ id, ts: index.ts[i] ?? 0, tool: toolAt(index, i), files: filesAt(index, i) });
  }
  const signals: MilestoneSignal[] = [];
  for (const e of readEvents(paths.events).events) {
    if (e.type !== "milestone.signal") continue;
    const kind = e.data.kind;
    if (kind !== "tests_passed" && kind !== "explicit") continue;
    signals.push({
      kind,
      ts: Date.parse(e.ts),
      note: e.data.note,
    });
  }
  return proposeMilestones(ops, signals, options);
}

/** Turn a proposal into a milestone (title defaults to the suggestion). */
export async function acceptMilestoneProposal(
  ctx: LedgerContext,
  params: { proposalId: string; title?: string; description?: string; tags?: string[] },
): Promise<CreateMilestoneResult> {
  const proposals = listMilestoneProposals(ctx);
  const p = proposals.find((x) => x.id === params.proposalId);
  if (!p) {
    throw new TimewarpError(
      ErrorCode.INVALID_INPUT,
      `no current milestone proposal ${JSON.stringify(params.proposalId)} (have: ${proposals.map((x) => x.id).join(", ") || "none"})`,
    );
  }
  return createMilestone(ctx, {
    title: params.title ?? p.suggestedTitle,
    description:
      params.description ?? `Proposed (${p.reason}): ${p.affectedFiles.slice(0, 5).join(", ")}`,
    snapshotIds: p.snapshotIds,
    tags: params.tags ?? ["proposed", p.reason],
  });
}
