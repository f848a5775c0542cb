import { getEditHistory, type HistoryItem } from "../ledger/index.ts";
import type { DraftEvent } from "./phases.ts";

export interface LedgerExtraction {
  events: DraftEvent[];
  warnings: string[];
}

const clip = (s: string, n = 4000) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);

/**
 * Edit events from the ledger's own operations (`.timewarp/history/`, read through the ledger's
 * history query), oldest first: one event per affected file, exact, with the operation id so a
 * rollback can be `timewarp revert <op>` and the operation's diff as evidence. `since` (ISO)
 * limits it to a run's time window.
 */
export async function extractLedgerEvents(
  root: string,
  options: { since?: string } = {},
): Promise<LedgerExtraction> {
  const items: HistoryItem[] = [];
  let cursor: string | undefined;
  do {
    const page = getEditHistory(
      { root },
      {
        limit: 100,
        includeDiffs: true,
        ...(cursor !== undefined ? { cursor } : {}),
        ...(options.since !== undefined ? { since: options.since } : {}),
      },
    );
    items.push(...page.history);
    cursor = page.pagination.hasMore ? page.pagination.nextCursor : undefined;
  } while (cursor !== undefined);
  items.reverse();
  const events: DraftEvent[] = [];
  const warnings: string[] = [];
  for (const op of items) {
    if (op.recordPresent === false)
      warnings.push(`ledger operation ${op.id}: record file missing, described from the index`);
    for (const file of op.affectedFiles) {
      events.push({
        tool: "edit",
        where: file,
        why: `${op.tool}: ${op.description} (${op.timestamp})`,
        confidence: 1,
        source: "ledger",
        op_id: op.id,
        ...(op.diff !== undefined ? { evidence: clip(op.diff) } : {}),
      });
    }
  }
  return { events, warnings };
}
