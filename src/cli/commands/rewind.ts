import type { Command } from "commander";
import { ErrorCode, TimewarpError } from "../../core/index.ts";
import { helpExamples } from "../help-examples.ts";
import { style } from "../output.ts";
import { action } from "../run.ts";

const lazy = () => import("../../timemachine/index.ts");

type PathChange = import("../../timemachine/index.ts").PathChange;

const MARK: Record<PathChange["change"], string> = {
  added: "A",
  deleted: "D",
  modified: "M",
  mode: "m",
  type: "T",
};

/** "M src/a.ts, A src/b.ts, … (+3)" for a line of the listing. */
function formatChanges(changes: PathChange[], count: number, room = 4): string {
  if (count === 0) return style.dim("no change");
  const shown = changes.slice(0, room).map((c) => `${MARK[c.change]} ${c.path}`);
  return `${count} file${count === 1 ? "" : "s"}: ${shown.join(", ")}${count > room ? style.dim(` (+${count - room})`) : ""}`;
}

/**
 * `timewarp rewind`: list the turns (a checkpoint per user prompt), put the code back to before
 * one (one ledger operation, verified), or take the last rewind back (`--undo`).
 */
export function registerRewindCommand(program: Command): void {
  program
    .command("rewind")
    .addHelpText(
      "after",
      helpExamples(
        ["list the turns of the last session", "timewarp rewind"],
        [
          "preview putting the code back to before turn 3, then do it",
          "timewarp rewind 3 --dry-run && timewarp rewind 3",
        ],
        ["take the last rewind back", "timewarp rewind --undo"],
      ),
    )
    .description(
      "list the turns (one checkpoint per user prompt), or put the code back to before turn N, shell edits included",
    )
    .argument("[turn]", "a turn number of the session (1, 2, …) or a turn id (t_…)")
    .option(
      "--session <id>",
      "the session whose turns to list or rewind (default: the last to prompt)",
    )
    .option("--dry-run", "show what the rewind (or --undo) would change; change nothing")
    .option("--undo", "take the last rewind back (its files as they were before it)")
    .option("--force", "with --undo: overwrite changes made since the rewind")
    .action(
      action(
        async (
          ctx,
          turn: string | undefined,
          opts: { session?: string; dryRun?: boolean; undo?: boolean; force?: boolean },
        ) => {
          const tm = await lazy();
          if (opts.undo === true) {
            if (turn !== undefined)
              throw new TimewarpError(
                ErrorCode.INVALID_INPUT,
                `--undo takes no turn (got ${JSON.stringify(turn)}): it takes the last rewind back`,
              );
            const r = await tm.undoRewind({
              root: ctx.root,
              dryRun: opts.dryRun === true,
              force: opts.force === true,
              clock: ctx.clock,
              random: ctx.random,
            });
            return {
              json: r,
              human: r.dry_run
                ? `dry run: would take back ${r.rewind_operation_id} (${r.description}): ${r.affected_files.length} path(s)`
                : `${style.green("undone")}: ${r.description} (${r.rewind_operation_id}), ${r.affected_files.length} path(s) back as they were; recorded as ${r.operation_id}`,
            };
          }
          if (opts.force === true)
            throw new TimewarpError(ErrorCode.INVALID_INPUT, "--force goes with --undo only");
          if (turn === undefined) {
            const l = tm.listTurns({
              root: ctx.root,
              sessionId: opts.session,
            });
            if (l.session_id === null) {
              return {
                json: l,
                human: style.dim(
                  "no turns recorded: each user prompt is checkpointed once the agent's hooks are installed (timewarp install <agent>)",
                ),
              };
            }
            const others = l.sessions.length - 1;
            const lines = [
              `${style.bold("session")} ${l.session_id}: ${l.turns.length} turn(s)${others > 0 ? style.dim(` (${others} other session(s): --session ID)`) : ""}`,
              ...l.turns.map((t) => {
                const when = t.created_at.replace("T", " ").replace(/\.\d+Z$|Z$/, "");
                const what = t.missing
                  ? style.red(`checkpoint gone: ${t.missing}`)
                  : formatChanges(t.files_changed, t.files_changed_count);
                return `  ${String(t.turn).padStart(3)}  ${when}  ${t.prompt === "" ? style.dim("(no prompt text)") : t.prompt}\n       ${what}${t.until === "now" ? style.dim(" (until now)") : ""}`;
              }),
              ...l.corrupt.map((c) => style.yellow(`warning: ${c.file} does not read (${c.code})`)),
              style.dim("timewarp rewind N puts the code back to before turn N (--dry-run first)"),
            ];
            return { json: l, human: lines.join("\n") };
          }
          const r = tm.rewind({
            root: ctx.root,
            turn,
            sessionId: opts.session,
            dryRun: opts.dryRun === true,
            clock: ctx.clock,
            random: ctx.random,
            onProgress: ctx.progress,
          });
          const head = `turn ${r.turn} of ${r.session_id} (${r.prompt === "" ? "no prompt text" : r.prompt})`;
          const plan = r.changes.map((c) => `  ${MARK[c.change]} ${c.path}`);
          const alone = r.left_alone.map((l) => style.dim(`  left alone: ${l.path} (${l.reason})`));
          const human = r.dry_run
            ? [
                `dry run: rewinding to before ${head} would change ${r.changes.length} path(s)`,
                ...plan,
                ...alone,
              ]
            : [
                r.operation_id === null
                  ? `${style.green("nothing to do")}: the code is already as before ${head}`
                  : `${style.green("rewound")} to before ${head}: ${r.changes.length} path(s), verified (${r.verified?.checked ?? 0} paths checked); recorded as ${r.operation_id}`,
                ...plan,
                ...alone,
                ...(r.undo === null ? [] : [style.dim(`take it back: ${r.undo}`)]),
              ];
          return { json: r, human: human.join("\n") };
        },
      ),
    );
}
