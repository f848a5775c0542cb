import { type Command, InvalidArgumentError } from "commander";
import { ErrorCode, readInputFile, TimewarpError } from "../../core/index.ts";
import type { CommandContext } from "../context.ts";
import { helpExamples } from "../help-examples.ts";
import { style } from "../output.ts";
import { action } from "../run.ts";

/**
 * The edit ledger: `edit block|whole|range|patch|delete|mkdir`, `history [show|prune|repair]`,
 * `revert`, `milestone create|list|propose|accept|signal|revert`. JSON output uses the v2
 * schemas' camelCase names.
 */
const FORCE_HELP = "write inside a version-control folder (.git, .hg, .svn, .jj, .bzr) anyway";

interface EditFlagOptions {
  description?: string;
  dryRun?: boolean;
  force?: boolean;
}

/** What an edit command passes on from its flags (`--description`, `--dry-run`, `--force`). */
function editFlags(o: EditFlagOptions): {
  description?: string;
  dryRun: boolean;
  force: boolean;
} {
  return {
    description: o.description,
    dryRun: o.dryRun === true,
    force: o.force === true,
  };
}

export function registerLedgerCommands(program: Command): void {
  const collect = (value: string, previous: string[]) => [...previous, value];
  const int = (name: string) => (value: string) => {
    const n = Number(value);
    if (!Number.isInteger(n))
      throw new InvalidArgumentError(`${name} must be an integer, got ${JSON.stringify(value)}`);
    return n;
  };
  const ledger = () => import("../../ledger/index.ts");
  const lctx = (ctx: CommandContext) => ({ root: ctx.root, clock: ctx.clock, random: ctx.random });
  /** Read a file argument relative to the invocation directory; "-" is stdin. Coded errors. */
  const readInput = (path: string, what: string): Buffer => readInputFile(path, { what });

  const edit = program
    .command("edit")
    .addHelpText(
      "after",
      helpExamples([
        "replace one block, previewing first",
        "timewarp edit block src/app.ts --search 'retries = 3' --replace 'retries = 5' --dry-run",
      ]),
    )
    .description("edit files through the ledger (each edit is recorded; --dry-run previews)");
  /** `edit <name>` with the flags `editFlags` reads (`described: false`: no --description). */
  const editCommand = (name: string, options: { described?: boolean } = {}) => {
    const cmd = edit.command(name);
    if (options.described !== false) cmd.option("--description <text>", "what the edit does");
    return cmd.option("--dry-run", "preview the diff, write nothing").option("--force", FORCE_HELP);
  };
  const editHuman = (r: {
    message: string;
    snapshotId?: string;
    previewDiff: string;
    dryRun: boolean;
  }) =>
    [
      r.dryRun
        ? style.yellow(r.message)
        : `${r.message}${r.snapshotId ? ` ${style.dim(`(operation ${r.snapshotId})`)}` : ""}`,
      r.dryRun ? r.previewDiff : "",
    ]
      .filter((s) => s !== "")
      .join("\n");

  editCommand("block <file>")
    .addHelpText(
      "after",
      helpExamples(
        [
          "replace one exact block of a file",
          "timewarp edit block src/app.ts --search 'retries = 3' --replace 'retries = 5'",
        ],
        [
          "take the blocks from files, and say why",
          "timewarp edit block src/app.ts --search-file old.txt --replace-file new.txt --description 'raise retries'",
        ],
      ),
    )
    .description("replace the one exact occurrence of a block (ApplyEditBlock)")
    .option("--search <text>", "the block to find (must match exactly once)")
    .option("--search-file <path>", "read the search block from a file")
    .option("--replace <text>", "the replacement")
    .option("--replace-file <path>", "read the replacement from a file")
    .action(
      action(
        async (
          ctx,
          file: string,
          o: {
            search?: string;
            searchFile?: string;
            replace?: string;
            replaceFile?: string;
          } & EditFlagOptions,
        ) => {
          const { applyEditBlock } = await ledger();
          const searchBlock =
            o.searchFile !== undefined
              ? readInput(o.searchFile, "--search-file").toString("utf8")
              : o.search;
          const replaceBlock =
            o.replaceFile !== undefined
              ? readInput(o.replaceFile, "--replace-file").toString("utf8")
              : o.replace;
          if (searchBlock === undefined || replaceBlock === undefined) {
            throw new TimewarpError(
              ErrorCode.INVALID_INPUT,
              "edit block needs --search (or --search-file) and --replace (or --replace-file)",
            );
          }
          const r = await applyEditBlock(lctx(ctx), {
            path: ctx.workspacePath(file),
            searchBlock,
            replaceBlock,
            ...editFlags(o),
          });
          return { json: r, human: editHuman(r) };
        },
      ),
    );

  editCommand("whole <file>")
    .addHelpText(
      "after",
      helpExamples(
        [
          "write a file's whole content from another file",
          "timewarp edit whole README.md --content-file draft.md",
        ],
        [
          "from stdin, previewing the diff only",
          "cat draft.md | timewarp edit whole README.md --content-file - --dry-run",
        ],
      ),
    )
    .description("replace a file's whole content, or create it (ApplyWholeFileEdit)")
    .requiredOption("--content-file <path>", "the new content (bytes, binary allowed; - for stdin)")
    .action(
      action(async (ctx, file: string, o: { contentFile: string } & EditFlagOptions) => {
        const { applyWholeFileEdit } = await ledger();
        const r = await applyWholeFileEdit(lctx(ctx), {
          path: ctx.workspacePath(file),
          content: readInput(o.contentFile, "--content-file"),
          ...editFlags(o),
        });
        return { json: r, human: editHuman(r) };
      }),
    );

  editCommand("range <file>")
    .addHelpText(
      "after",
      helpExamples(
        [
          "replace lines 10 to 14 with the lines of a file",
          "timewarp edit range src/app.ts --start 10 --end 14 --content-file lines.txt",
        ],
        [
          "insert before line 10 (END is START-1)",
          "timewarp edit range src/app.ts --start 10 --end 9 --content-file lines.txt",
        ],
      ),
    )
    .description("replace lines START..END (1-based, inclusive) (ApplyRangedEdit)")
    .requiredOption("--start <n>", "first line", int("--start"))
    .requiredOption("--end <n>", "last line (START-1 inserts)", int("--end"))
    .requiredOption("--content-file <path>", "the replacement lines (- for stdin)")
    .action(
      action(
        async (
          ctx,
          file: string,
          o: {
            start: number;
            end: number;
            contentFile: string;
          } & EditFlagOptions,
        ) => {
          const { applyRangedEdit } = await ledger();
          const r = await applyRangedEdit(lctx(ctx), {
            path: ctx.workspacePath(file),
            startLine: o.start,
            endLine: o.end,
            content: readInput(o.contentFile, "--content-file").toString("utf8"),
            ...editFlags(o),
          });
          return { json: r, human: editHuman(r) };
        },
      ),
    );

  editCommand("patch <patchFile>")
    .addHelpText(
      "after",
      helpExamples(
        [
          "apply a git diff to several files, all or nothing",
          "timewarp edit patch fix.diff --description 'fix the parser'",
        ],
        ["check that it applies, change nothing", "timewarp edit patch fix.diff --dry-run"],
      ),
    )
    .description("apply a unified or git diff, multi-file, all or nothing (ApplyUnifiedDiff)")
    .action(
      action(async (ctx, patchFile: string, o: EditFlagOptions) => {
        const { applyUnifiedDiff } = await ledger();
        const r = await applyUnifiedDiff(lctx(ctx), {
          diff: readInput(patchFile, "patch file").toString("utf8"),
          ...editFlags(o),
        });
        return { json: r, human: editHuman(r) };
      }),
    );

  editCommand("delete <path>", { described: false })
    .addHelpText(
      "after",
      helpExamples(
        [
          "delete a file through the ledger (revert brings it back)",
          "timewarp edit delete tmp/scratch.txt",
        ],
        ["preview deleting a whole directory", "timewarp edit delete build --dry-run"],
      ),
    )
    .description("delete a file or a directory with its contents (Delete)")
    .action(
      action(async (ctx, path: string, o: EditFlagOptions) => {
        const { deletePath } = await ledger();
        const r = await deletePath(lctx(ctx), {
          path: ctx.workspacePath(path),
          ...editFlags(o),
        });
        return { json: r, human: editHuman(r) };
      }),
    );

  editCommand("mkdir <path>", { described: false })
    .addHelpText(
      "after",
      helpExamples(["create a directory and its parents", "timewarp edit mkdir src/feature/parts"]),
    )
    .description("create a directory and its parents (CreateDirectory)")
    .action(
      action(async (ctx, path: string, o: EditFlagOptions) => {
        const { createDirectory } = await ledger();
        const r = await createDirectory(lctx(ctx), {
          path: ctx.workspacePath(path),
          ...editFlags(o),
        });
        return { json: r, human: editHuman(r) };
      }),
    );

  const history = program
    .command("history")
    .addHelpText(
      "after",
      helpExamples(
        ["the last 20 edits, newest first", "timewarp history"],
        [
          "the edits that touched TypeScript files since a time, with diffs",
          "timewarp history --file '**/*.ts' --since 2025-01-01T10:00:00Z --include-diffs",
        ],
      ),
    )
    .description("the edit history, newest first (GetEditHistory)")
    .option("--limit <n>", "operations per page, 1..100 (default 20)", int("--limit"))
    .option("--include-diffs", "include each operation's diff")
    .option("--since <time>", "only operations at or after this ISO time")
    .option("--until <time>", "only operations at or before this ISO time")
    .option("--tool <name>", "only this tool (repeatable)", collect, [])
    .option("--file <glob>", "only operations touching a file matching this glob")
    .option("--cursor <cursor>", "continue from a previous page's nextCursor")
    .action(
      action(
        async (
          ctx,
          o: {
            limit?: number;
            includeDiffs?: boolean;
            since?: string;
            until?: string;
            tool: string[];
            file?: string;
            cursor?: string;
          },
        ) => {
          const { getEditHistory } = await ledger();
          const r = getEditHistory(lctx(ctx), {
            limit: o.limit,
            includeDiffs: o.includeDiffs === true,
            since: o.since,
            until: o.until,
            ...(o.tool.length === 0 ? {} : { toolFilter: o.tool }),
            fileFilter: o.file,
            cursor: o.cursor,
          });
          const rows = r.history.map(
            (h) =>
              `${style.bold(h.id)} ${style.dim(h.timestamp)} ${h.tool.padEnd(18)} ${h.affectedFiles.join(", ")}  ${style.dim(h.description)}` +
              `${h.timeline === "past" ? style.yellow(`  (in the past, at ${h.travel?.snapshotId ?? "?"})`) : ""}${h.diff ? `\n${h.diff}` : ""}`,
          );
          const footer = `${r.history.length} of ${r.pagination.total}${r.pagination.nextCursor ? ` — next page: --cursor ${r.pagination.nextCursor}` : ""}`;
          return { json: r, human: [...rows, style.dim(footer)].join("\n") };
        },
      ),
    );

  history
    .command("show <id>")
    .addHelpText(
      "after",
      helpExamples([
        "one operation's diff in git format",
        "timewarp history show k3v9q2m1xa --format git",
      ]),
    )
    .description("one operation's diff (ReadSnapshotDiff)")
    .option("--format <format>", "unified | context | git", "unified")
    .action(
      action(async (ctx, id: string, o: { format: string }) => {
        const { readSnapshotDiff } = await ledger();
        if (o.format !== "unified" && o.format !== "context" && o.format !== "git") {
          throw new TimewarpError(
            ErrorCode.INVALID_INPUT,
            `--format must be unified, context or git, got ${JSON.stringify(o.format)}`,
          );
        }
        const r = readSnapshotDiff(lctx(ctx), { snapshotId: id, format: o.format });
        const s = r.snapshot;
        return {
          json: r,
          human: `${style.bold(s.id)} ${s.timestamp} ${s.tool}: ${s.description}\n${r.diff}`,
        };
      }),
    );

  history
    .command("prune")
    .addHelpText(
      "after",
      helpExamples([
        "see what retention would drop, then drop it",
        "timewarp history prune --max-age-days 30 --dry-run && timewarp history prune --max-age-days 30",
      ]),
    )
    .description(
      "retention: drop old operations by age and count (never one a milestone references)",
    )
    .option(
      "--max-age-days <n>",
      "default: config retention.history_max_age_days",
      int("--max-age-days"),
    )
    .option(
      "--max-operations <n>",
      "default: config retention.history_max_operations",
      int("--max-operations"),
    )
    .option("--dry-run", "list what would go, remove nothing")
    .action(
      action(async (ctx, o: { maxAgeDays?: number; maxOperations?: number; dryRun?: boolean }) => {
        const { applyRetention } = await ledger();
        const r = await applyRetention(lctx(ctx), {
          maxAgeDays: o.maxAgeDays,
          maxOperations: o.maxOperations,
          dryRun: o.dryRun === true,
        });
        return {
          json: r,
          human: `${r.dryRun ? "would remove" : "removed"} ${r.removed.length} operation(s); ${r.remaining} remain (${r.keptForMilestones} kept for milestones)`,
        };
      }),
    );

  history
    .command("repair")
    .addHelpText(
      "after",
      helpExamples(["re-index records whose index line was lost", "timewarp history repair"]),
    )
    .description(
      "re-index records whose index line was lost, drop index lines whose record is gone",
    )
    .action(
      action(async (ctx) => {
        const { repairIndex } = await ledger();
        const r = await repairIndex(lctx(ctx));
        return { json: r, human: `adopted ${r.adopted.length}, dropped ${r.dropped.length}` };
      }),
    );

  const revertAction = async (
    ctx: CommandContext,
    id: string,
    o: { to?: string; dryRun?: boolean; force?: boolean },
  ) => {
    const { revertOperation } = await ledger();
    const r = await revertOperation(lctx(ctx), {
      snapshotId: id,
      targetSnapshot: o.to,
      dryRun: o.dryRun === true,
      force: o.force === true,
    });
    return {
      json: r,
      human: `${r.dryRun ? style.yellow(r.message) : r.message}${r.newSnapshotId ? ` ${style.dim(`(operation ${r.newSnapshotId})`)}` : ""}${r.dryRun && r.reversedDiff ? `\n${r.reversedDiff}` : ""}`,
    };
  };

  program
    .command("revert <id>")
    .addHelpText(
      "after",
      helpExamples(
        ["undo one operation", "timewarp revert k3v9q2m1xa"],
        [
          "undo everything recorded after an operation, previewing first",
          "timewarp revert k3v9q2m1xa --to k3v9q2m1xa --dry-run",
        ],
      ),
    )
    .description(
      "undo an operation (or a milestone) by the rollback ladder; conflicts change nothing (ReverseOp)",
    )
    .option(
      "--to <id>",
      "revert every operation recorded after this one, newest first, all or nothing",
    )
    .option("--dry-run", "plan and show, write nothing")
    .option("--force", "overwrite later changes with the stored pre-image")
    .action(action(revertAction));

  const milestone = program
    .command("milestone")
    .addHelpText(
      "after",
      helpExamples([
        "propose milestones, then accept the first",
        "timewarp milestone propose && timewarp milestone accept p1",
      ]),
    )
    .description("milestones: named groups of operations");

  milestone
    .command("create")
    .addHelpText(
      "after",
      helpExamples([
        "group two operations under a title",
        "timewarp milestone create --title 'parser fix' --ops k3v9q2m1xa 7bq0c4d2ze --tag fix",
      ]),
    )
    .description("group operations under a title (CreateMilestone)")
    .requiredOption("--title <text>", "title")
    .option("--description <text>", "description", "")
    .requiredOption("--ops <ids...>", "operation ids")
    .option("--tag <tag>", "tag (repeatable)", collect, [])
    .action(
      action(
        async (ctx, o: { title: string; description: string; ops: string[]; tag: string[] }) => {
          const { createMilestone } = await ledger();
          const r = await createMilestone(lctx(ctx), {
            title: o.title,
            description: o.description,
            snapshotIds: o.ops,
            tags: o.tag,
          });
          const s = r.summary;
          return {
            json: r,
            human: `${style.bold(r.milestoneId)}: ${s.totalOperations} operation(s), ${s.affectedFiles.length} file(s), +${s.linesAdded} -${s.linesRemoved}`,
          };
        },
      ),
    );

  milestone
    .command("list")
    .addHelpText(
      "after",
      helpExamples([
        "milestones tagged fix, with their combined diffs",
        "timewarp milestone list --tag fix --include-diffs",
      ]),
    )
    .description("milestones, oldest first (GetMilestones)")
    .option("--include-diffs", "include each milestone's combined diff")
    .option("--tag <tag>", "only milestones with this tag (repeatable: any of them)", collect, [])
    .action(
      action(async (ctx, o: { includeDiffs?: boolean; tag: string[] }) => {
        const { getMilestones } = await ledger();
        const r = getMilestones(lctx(ctx), {
          includeDiffs: o.includeDiffs === true,
          ...(o.tag.length === 0 ? {} : { tags: o.tag }),
        });
        const rows = r.milestones.map(
          (m) =>
            `${style.bold(m.id)} ${m.title} ${style.dim(`${m.summary.totalOperations} ops, +${m.summary.linesAdded} -${m.summary.linesRemoved}${m.tags.length ? ` [${m.tags.join(", ")}]` : ""}`)}${m.combinedDiff ? `\n${m.combinedDiff}` : ""}`,
        );
        if (rows.length === 0) rows.push("no milestones");
        // One damaged milestone file is flagged, not a reason to hide the others (issue 16).
        for (const c of r.corrupt) {
          rows.push(style.yellow(`warning: ${c.id} does not read (${c.code}): ${c.file}`));
        }
        return { json: r, human: rows.join("\n") };
      }),
    );

  milestone
    .command("propose")
    .addHelpText(
      "after",
      helpExamples([
        "suggested milestones, with pauses of 10 minutes ending a group",
        "timewarp milestone propose --pause-minutes 10",
      ]),
    )
    .description(
      "suggested milestones over operations not yet in one (tests passed, pauses, module switches, signals)",
    )
    .option(
      "--pause-minutes <n>",
      "a gap this long ends a group (default 30)",
      int("--pause-minutes"),
    )
    .action(
      action(async (ctx, o: { pauseMinutes?: number }) => {
        const { listMilestoneProposals } = await ledger();
        const proposals = listMilestoneProposals(
          lctx(ctx),
          o.pauseMinutes === undefined ? {} : { pauseMs: o.pauseMinutes * 60_000 },
        );
        const rows = proposals.map(
          (p) =>
            `${style.bold(p.id)} ${p.suggestedTitle} ${style.dim(`(${p.reason}; ${p.snapshotIds.length} ops)`)}`,
        );
        return {
          json: { success: true, proposals },
          human: rows.length === 0 ? "no proposals" : rows.join("\n"),
        };
      }),
    );

  milestone
    .command("accept <proposalId>")
    .addHelpText(
      "after",
      helpExamples([
        "accept a proposal under your own title",
        "timewarp milestone accept p1 --title 'parser fix'",
      ]),
    )
    .description("create the milestone a proposal suggests")
    .option("--title <text>", "title (default: the suggestion)")
    .option("--description <text>", "description")
    .option("--tag <tag>", "tag (repeatable)", collect, [])
    .action(
      action(
        async (
          ctx,
          proposalId: string,
          o: { title?: string; description?: string; tag: string[] },
        ) => {
          const { acceptMilestoneProposal } = await ledger();
          const r = await acceptMilestoneProposal(lctx(ctx), {
            proposalId,
            title: o.title,
            description: o.description,
            ...(o.tag.length === 0 ? {} : { tags: o.tag }),
          });
          return {
            json: r,
            human: `${style.bold(r.milestoneId)}: ${r.summary.totalOperations} operation(s)`,
          };
        },
      ),
    );

  milestone
    .command("signal <kind>")
    .addHelpText(
      "after",
      helpExamples([
        "mark that the tests just passed",
        "timewarp milestone signal tests-passed --note 'npm test green'",
      ]),
    )
    .description("mark a boundary for proposals: tests-passed | explicit")
    .option("--note <text>", "what happened")
    .action(
      action(async (ctx, kind: string, o: { note?: string }) => {
        const { recordMilestoneSignal } = await ledger();
        const k = kind.replace("-", "_");
        if (k !== "tests_passed" && k !== "explicit") {
          throw new TimewarpError(
            ErrorCode.INVALID_INPUT,
            `signal kind must be tests-passed or explicit, got ${JSON.stringify(kind)}`,
          );
        }
        recordMilestoneSignal(lctx(ctx), {
          kind: k,
          note: o.note,
        });
        return { json: { success: true, kind: k }, human: `signal ${k} recorded` };
      }),
    );

  milestone
    .command("revert <milestoneId>")
    .addHelpText(
      "after",
      helpExamples([
        "undo a milestone's operations, previewing first",
        "timewarp milestone revert m_1a2b3c --dry-run",
      ]),
    )
    .description("undo every operation of a milestone, newest first, all or nothing")
    .option("--dry-run", "plan and show, write nothing")
    .option("--force", "overwrite later changes with the stored pre-images")
    .action(action(async (ctx, id: string, o: EditFlagOptions) => revertAction(ctx, id, o)));
}
