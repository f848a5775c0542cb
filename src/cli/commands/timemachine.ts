import { type Command, Option } from "commander";
import { ErrorCode, TimewarpError } from "../../core/index.ts";
import { helpExamples } from "../help-examples.ts";
import { style } from "../output.ts";
import { scanProgress } from "../progress.ts";
import { action } from "../run.ts";

const lazy = () => import("../../timemachine/index.ts");

function parseWindow(
  value: string | undefined,
): "all" | { before: number; after: number } | undefined {
  if (value === undefined) return undefined;
  if (value === "all") return "all";
  const m = /^(\d+),(\d+)$/.exec(value);
  if (!m) {
    throw new TimewarpError(
      ErrorCode.INVALID_INPUT,
      `--chat-window: expected "all" or BEFORE,AFTER (e.g. 6,2), got ${JSON.stringify(value)}`,
    );
  }
  return { before: Number(m[1]), after: Number(m[2]) };
}

/**
 * The time machine: `session start`, `travel`, `return`, `recover`, `issue report|list|get|fix`.
 * JSON results use the seed's field names (`snapshot_id`, `issue_id`, `backup_path`, …).
 */
export function registerTimemachineCommands(program: Command): void {
  const session = program
    .command("session")
    .description("agent sessions (on_session_start)")
    .addHelpText(
      "after",
      helpExamples(
        [
          "start a session by hand (the hooks do this for agents)",
          "timewarp session start --session-id s1",
        ],
        ["the sessions the workspace remembers", "timewarp session list"],
      ),
    );
  session
    .command("start")
    .addHelpText(
      "after",
      helpExamples(
        [
          "start a session with the user's goal, snapshotting the workspace",
          "timewarp session start --session-id s1 --task-hint 'fix the login bug'",
        ],
        [
          "remember its transcript for issue reports",
          "timewarp session start --session-id s1 --transcript ~/.claude/projects/app/s1.jsonl",
        ],
      ),
    )
    .description("on_session_start: snapshot the workspace, record the session, clean up")
    .option("--session-id <id>", "the agent's session id (default: a new sess_…)")
    .option("--task-hint <text>", "the user's goal at session start (initial_task_hint)")
    .option("--transcript <file>", "the session transcript, remembered for issue report")
    .action(
      action(async (ctx, opts: { sessionId?: string; taskHint?: string; transcript?: string }) => {
        const { startSession } = await lazy();
        let r: Awaited<ReturnType<typeof startSession>>;
        try {
          r = await startSession({
            root: ctx.root,
            clock: ctx.clock,
            random: ctx.random,
            sessionId: opts.sessionId,
            taskHint: opts.taskHint,
            transcriptPath: opts.transcript,
            onProgress: (p) => ctx.progress(scanProgress(p)),
          });
        } finally {
          ctx.progress("");
        }
        const c = r.cleanup;
        const lines = [
          `${style.bold("snapshot")} ${r.snapshot_id}  ${r.files} files, ${r.bytes} bytes${r.partial ? style.yellow(` (partial: ${r.skipped.length} skipped)`) : ""}`,
          `${style.bold("session")}  ${r.session_id}${r.resumed ? " (resumed: its own snapshot, none taken)" : ""}`,
          c.skipped
            ? style.dim(`cleanup skipped: ${c.skipped}`)
            : style.dim(
                `cleanup: ${c.deleted_snapshots.length} snapshot(s), ${c.deleted_backups.length} backup(s) deleted, ${c.removed_objects} object(s) freed`,
              ),
        ];
        return { json: r, human: lines.join("\n") };
      }),
    );
  session
    .command("list")
    .addHelpText(
      "after",
      helpExamples(["the sessions the workspace remembers", "timewarp session list"]),
    )
    .description("the sessions the workspace remembers: agent, live or ended, snapshot")
    .action(
      action(async (ctx) => {
        const { listSessionStatus } = await lazy();
        const sessions = listSessionStatus(ctx.root, ctx.clock);
        const lines =
          sessions.length === 0
            ? [style.dim("no sessions")]
            : sessions.map(
                (s) =>
                  `${s.session_id}  ${s.agent ?? "-"}  ${s.live ? style.green("live ") : s.ended_at ? "ended" : style.dim("gone ")}  ${s.started_at}  ${s.snapshot_id ?? "-"}`,
              );
        return { json: { sessions }, human: lines.join("\n") };
      }),
    );

  program
    .command("travel")
    .addHelpText(
      "after",
      helpExamples([
        "go back to an issue's snapshot (the present is backed up first)",
        "timewarp travel s_1a2b3c4d",
      ]),
    )
    .description("go to the past: back up the present, then restore SNAPSHOT_ID")
    .argument("<snapshot_id>", "the snapshot to travel to (e.g. an issue's snapshot_id)")
    .action(
      action(async (ctx, snapshotId: string) => {
        const { travel } = await lazy();
        const r = travel({
          root: ctx.root,
          snapshotId,
          clock: ctx.clock,
          random: ctx.random,
          onProgress: ctx.progress,
        });
        return {
          json: r,
          human:
            `${style.yellow("past")}: workspace at ${r.snapshot_id} (${r.written} written, ${r.deleted} deleted, ${r.unchanged} unchanged)\n` +
            `present backed up in ${r.backup_path}; \`timewarp return\` brings it back`,
        };
      }),
    );

  program
    .command("return")
    .addHelpText(
      "after",
      helpExamples(
        ["come back to the present", "timewarp return"],
        [
          "come back, keeping what you changed in the past as a patch in the issue",
          "timewarp return --save-patch i_1a2b3c",
        ],
      ),
    )
    .description("back to the present, verified against the backup")
    .option(
      "--save-patch <issue_id>",
      "keep the experiment's changes as a patch in that issue's folder",
    )
    .action(
      action(async (ctx, opts: { savePatch?: string }) => {
        const { returnToPresent } = await lazy();
        const r = returnToPresent({
          root: ctx.root,
          clock: ctx.clock,
          savePatch: opts.savePatch,
          onProgress: ctx.progress,
        });
        return {
          json: r,
          human:
            `${style.green("present")}: restored and verified (${r.verified.checked} paths, ${r.verified.files} files, ${r.verified.bytes} bytes)` +
            (r.patch_path
              ? `\nexperiment patch (${r.patch_files} files): ${r.patch_path}`
              : r.past_work_path
                ? `\nwork done in the past kept (${r.past_work_files} files): ${r.past_work_path} (git apply brings it here)`
                : ""),
        };
      }),
    );

  program
    .command("recover")
    .addHelpText(
      "after",
      helpExamples(["finish or undo what a crash interrupted", "timewarp recover"]),
    )
    .description("finish or undo a travel/return or ledger edit that was interrupted")
    .action(
      action(async (ctx) => {
        const { recover } = await lazy();
        const r = recover({ root: ctx.root, clock: ctx.clock });
        const l = r.ledger;
        const ledger =
          l.outcome === "none"
            ? ""
            : `\nledger: ${l.outcome.replace(/_/g, " ")}${l.operationId ? ` (operation ${l.operationId}, ${l.tool})` : ""}${l.kept && l.kept.length > 0 ? `; left as they are: ${l.kept.join(", ")}` : ""}`;
        const main =
          r.outcome === "ledger_only"
            ? `no travel or return was interrupted: now ${r.mode}`
            : `${r.outcome.replace(/_/g, " ")}: now ${r.mode}`;
        const kept = r.kept_path
          ? `\nkept first what no record held (${r.kept_files} files): ${r.kept_path} (git apply in the present brings it back)`
          : "";
        return { json: r, human: main + kept + ledger };
      }),
    );

  const issue = program
    .command("issue")
    .description("friction issues tied to a session snapshot")
    .addHelpText(
      "after",
      helpExamples([
        "report a friction point, then list the open issues",
        "timewarp issue report --task-context 'add login' --symptom 'tests hang' --success-criteria 'npm test passes' && timewarp issue list",
      ]),
    );
  issue
    .command("report")
    .addHelpText(
      "after",
      helpExamples(
        [
          "record a friction point with the session's snapshot and chat",
          "timewarp issue report --task-context 'add login' --symptom 'tests hang' --success-criteria 'npm test passes'",
        ],
        [
          "with a guess at the cause and the whole chat",
          "timewarp issue report --task-context 'add login' --symptom 'tests hang' --success-criteria 'npm test passes' --suspected-cause 'a leaked timer' --chat-window all",
        ],
      ),
    )
    .description("issue_report: record a friction point with its snapshot, chat and experiment log")
    .requiredOption("--task-context <text>", "what the user asked the agent to do")
    .requiredOption("--symptom <text>", "the friction observed")
    .requiredOption("--success-criteria <text>", "verifiable acceptance criteria")
    .option("--suspected-cause <text>", "what may cause it")
    .option("--chat-summary <text>", "1-3 sentences on the conversation")
    .option("--transcript <file>", "the transcript to export (default: the session's)")
    .option("--session-id <id>", "the reporting session (default: the most recent)")
    .option("--chat-window <spec>", "chat.md selection: BEFORE,AFTER messages (default 6,2) or all")
    .action(
      action(
        async (
          ctx,
          opts: {
            taskContext: string;
            symptom: string;
            successCriteria: string;
            suspectedCause?: string;
            chatSummary?: string;
            transcript?: string;
            sessionId?: string;
            chatWindow?: string;
          },
        ) => {
          const { reportIssue } = await lazy();
          const chatWindow = parseWindow(opts.chatWindow);
          const r = await reportIssue({
            root: ctx.root,
            clock: ctx.clock,
            random: ctx.random,
            task_context: opts.taskContext,
            symptom: opts.symptom,
            success_criteria: opts.successCriteria,
            suspected_cause: opts.suspectedCause,
            chat_summary: opts.chatSummary,
            transcriptPath: opts.transcript,
            sessionId: opts.sessionId,
            chatWindow,
          });
          return {
            json: r,
            human: `${style.bold(r.issue_id)} recorded on snapshot ${r.snapshot_id}\n${r.path}`,
          };
        },
      ),
    );
  issue
    .command("list")
    .addHelpText(
      "after",
      helpExamples(
        ["the open issues", "timewarp issue list"],
        ["every issue, fixed ones too", "timewarp issue list --status all"],
      ),
    )
    .description("timewarp_issue_list: open issues (or --status fixed|all)")
    .addOption(
      new Option("--status <status>", "which issues")
        .choices(["open", "fixed", "all"])
        .default("open"),
    )
    .action(
      action(async (ctx, opts: { status: "open" | "fixed" | "all" }) => {
        const { listIssuesChecked } = await lazy();
        // One damaged issue.json is flagged, not a reason to hide the others (issue 16).
        const { issues, corrupt } = listIssuesChecked({ root: ctx.root, status: opts.status });
        const lines =
          issues.length === 0
            ? [style.dim(`no ${opts.status === "all" ? "" : `${opts.status} `}issues`)]
            : issues.map(
                (i) =>
                  `${i.issue_id}  ${i.status === "open" ? style.yellow("open ") : style.green("fixed")}  ${i.snapshot_id}  ${i.symptom}`,
              );
        for (const c of corrupt) {
          lines.push(
            style.yellow(`warning: issue ${c.issue_id} does not read (${c.code}): ${c.file}`),
          );
        }
        return { json: { status: opts.status, issues, corrupt }, human: lines.join("\n") };
      }),
    );
  issue
    .command("get")
    .addHelpText(
      "after",
      helpExamples(["an issue's details and file paths", "timewarp issue get i_1a2b3c"]),
    )
    .description("timewarp_issue_get: an issue's details and file paths")
    .argument("<issue_id>")
    .action(
      action(async (ctx, issueId: string) => {
        const { getIssue } = await lazy();
        const i = getIssue({ root: ctx.root, issueId });
        return {
          json: i,
          human: [
            `${style.bold(i.issue_id)} (${i.status}) on snapshot ${i.snapshot_id}`,
            `task:     ${i.task_context}`,
            `symptom:  ${i.symptom}`,
            `criteria: ${i.success_criteria}`,
            ...(i.suspected_cause ? [`cause:    ${i.suspected_cause}`] : []),
            ...(i.chat_summary ? [`summary:  ${i.chat_summary}`] : []),
            `files:    ${i.issue_path}\n          ${i.chat_path}\n          ${i.experiment_path}`,
          ].join("\n"),
        };
      }),
    );
  issue
    .command("fix")
    .addHelpText("after", helpExamples(["mark an issue fixed", "timewarp issue fix i_1a2b3c"]))
    .description("mark an issue fixed (step 7 of the protocol)")
    .argument("<issue_id>")
    .action(
      action(async (ctx, issueId: string) => {
        const { fixIssue } = await lazy();
        const i = fixIssue({ root: ctx.root, issueId, clock: ctx.clock });
        return { json: i, human: `${i.issue_id} ${style.green("fixed")}` };
      }),
    );
}
