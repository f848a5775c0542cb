import { ErrorCode, TimewarpError } from "../core/index.ts";
import type { LedgerContext } from "./ledger-context.ts";
import { type ReverseOpParams, type ReverseOpResult, reverseOp } from "./reverse-op.ts";

/**
 * The revert of the CLI (`timewarp revert`, `milestone revert`) and of the dashboard: ReverseOp,
 * with a revert that cannot be made (a conflict, nothing changed) thrown as REVERT_CONFLICT whose
 * `data` carries the structured conflicts (`conflicts`), their one-line forms (`messages`) and
 * the ids it would have reverted (`revertedIds`). One home, so both surfaces give the same
 * document; the MCP tool keeps the seed's form (`success: false` as a value).
 */
export async function revertOperation(
  ctx: LedgerContext,
  params: ReverseOpParams,
): Promise<ReverseOpResult> {
  const r = await reverseOp(ctx, params);
  if (!r.success) {
    throw new TimewarpError(
      ErrorCode.REVERT_CONFLICT,
      `${r.message}:\n  ${(r.conflicts ?? []).join("\n  ")}`,
      {
        data: {
          conflicts: r.conflictDetails ?? [],
          messages: r.conflicts ?? [],
          revertedIds: r.revertedIds,
        },
      },
    );
  }
  return r;
}
