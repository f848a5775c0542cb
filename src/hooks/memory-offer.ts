import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { z } from "zod";
import { appendEvent, readConfig, workspacePaths, writeJsonAtomic } from "../core/index.ts";
import { hookPaths, safeComponent } from "./hook-paths.ts";
import type { HookContext } from "./run-hook.ts";

/** `.timewarp/hooks/offered/<session>.json`: what the session was offered, so nothing is said twice. */
const OfferedFileSchema = z.object({
  schema_version: z.literal(1),
  goal: z.string().nullable(),
  cards: z.array(z.string()),
});
type OfferedFile = z.infer<typeof OfferedFileSchema>;

function offeredFile(root: string, sessionId: string): string {
  return join(hookPaths(root).offered, `${safeComponent(sessionId)}.json`);
}

function readOffered(file: string): OfferedFile {
  try {
    const r = OfferedFileSchema.safeParse(JSON.parse(readFileSync(file, "utf8")));
    if (r.success) return r.data;
  } catch {
    // none yet, or damaged: offer as if nothing was
  }
  return { schema_version: 1, goal: null, cards: [] };
}

/** Whether there is any memory to offer, decided without loading the memory lab. */
function hasMemory(root: string): boolean {
  const paths = workspacePaths(root);
  if (existsSync(paths.goal) || existsSync(join(paths.data, "memory", "patterns"))) return true;
  return readConfig(paths.config).memory.user_patterns_dir !== undefined;
}

/**
 * The memory offer of a session start or a prompt (issue 18): the goal line and the cards for
 * `hint` that this session has not been offered yet (memory's `offerMemory`), recorded in
 * `.timewarp/hooks/offered/<session>.json` with a `card.offered` event. `fresh` forgets what was
 * offered (a compacted conversation lost it). Never throws: any failure is a `hook.failed` event
 * and no context; the hook goes on.
 */
export async function offerContext(
  ctx: HookContext,
  hint: string | null,
  options: { fresh?: boolean } = {},
): Promise<string | undefined> {
  try {
    if (!hasMemory(ctx.root)) return undefined;
    const { offerMemory } = await import("../memory/index.ts");
    const file = offeredFile(ctx.root, ctx.payload.session_id);
    const before: OfferedFile =
      options.fresh === true ? { schema_version: 1, goal: null, cards: [] } : readOffered(file);
    const offer = offerMemory({ root: ctx.root, clock: ctx.clock, hint, offered: before });
    if (offer.text === null) return undefined;
    mkdirSync(dirname(file), { recursive: true });
    // scratch: lost in a crash, the next prompt offers again (no fsync on the hook's path)
    writeJsonAtomic(
      file,
      {
        schema_version: 1,
        goal: offer.goal ?? before.goal,
        cards: [...before.cards, ...offer.cards],
      } satisfies OfferedFile,
      { durable: false },
    );
    appendEvent(
      workspacePaths(ctx.root).events,
      "card.offered",
      {
        session_id: ctx.payload.session_id,
        pattern_ids: offer.cards,
        goal: offer.goal !== null,
        event: ctx.event,
      },
      ctx.clock,
    );
    return offer.text;
  } catch (error) {
    ctx.reportFailure(`memory offer: ${error instanceof Error ? error.message : String(error)}`);
    return undefined;
  }
}
