import type { Command } from "commander";
import { DATA_DIR, ErrorCode, TimewarpError } from "../../core/index.ts";
import { helpExamples } from "../help-examples.ts";
import { style } from "../output.ts";
import { action } from "../run.ts";

/** `timewarp init | status` (and, from the store work, `snapshot …` and `gc`). */
export function registerStoreCommands(program: Command): void {
  program
    .command("init")
    .addHelpText(
      "after",
      helpExamples(
        ["make the workspace at the nearest .git (or here)", "timewarp init"],
        ["make one in this very directory, inside another workspace", "timewarp init --here"],
      ),
    )
    .description(
      "create .timewarp/ with a config.json holding the defaults (idempotent), at the workspace " +
        "root found from here (the nearest .timewarp/, else .git, else this directory)",
    )
    .option("--here", "make a workspace in this very directory, even inside another one")
    .action(
      action(async (ctx, opts: { here?: boolean }) => {
        const { initWorkspace } = await import("../../store/index.ts");
        const { statSync } = await import("node:fs");
        const isDir = statSync(ctx.cwd, { throwIfNoEntry: false })?.isDirectory() === true;
        // not a directory: initWorkspace says NOT_A_DIRECTORY about it, whatever lies above
        const root = opts.here === true || !isDir ? ctx.cwd : ctx.root;
        if (root !== ctx.cwd) {
          const { existsSync } = await import("node:fs");
          const { join } = await import("node:path");
          // Never a nested store by accident: two `.timewarp/` would split the history.
          if (existsSync(join(root, DATA_DIR))) {
            throw new TimewarpError(
              ErrorCode.NESTED_WORKSPACE,
              `${ctx.cwd} is inside the workspace ${root} (it has ${DATA_DIR}/); commands run here ` +
                "use it already. Pass --here to make a separate workspace in this directory",
              { data: { workspace_root: root, cwd: ctx.cwd } },
            );
          }
        }
        const r = initWorkspace(root, { clock: ctx.clock });
        const where =
          root === ctx.cwd
            ? ""
            : `\n(the workspace is ${root}, found above ${ctx.cwd}; --here for this directory)`;
        return {
          json: {
            workspace_root: r.workspace_root,
            created: r.created,
            config_path: r.config_path,
          },
          human: `${r.created ? `initialized ${r.config_path}` : `already initialized (${r.config_path})`}${where}`,
        };
      }),
    );
  program
    .command("status")
    .addHelpText(
      "after",
      helpExamples(
        ["mode, session, current snapshot and lock", "timewarp status"],
        ["the same for another directory, as JSON", "timewarp -C ~/work/app status --json"],
      ),
    )
    .description("mode, session, current snapshot, lock")
    .action(
      action(async (ctx) => {
        const { readStatus } = await import("../../timemachine/index.ts");
        const status = readStatus(ctx.root);
        const lines = [
          `${style.bold("workspace")} ${status.workspace_root}${status.initialized ? "" : style.dim(" (not initialized)")}`,
          `${style.bold("mode")}      ${status.mode === "past" ? style.yellow("past") : "present"}`,
          `${style.bold("session")}   ${status.session_id ?? "-"} ${status.session_snapshot_id ? `(snapshot ${status.session_snapshot_id})` : ""}`,
        ];
        if (status.mode === "past")
          lines.push(
            `${style.bold("at")}        ${status.current_snapshot_id} since ${status.entered_at}`,
          );
        lines.push(
          `${style.bold("lock")}      ${status.lock ? `held by pid ${status.lock.pid} (${status.lock.command ?? "?"})` : "free"}`,
          `${style.bold("watcher")}   ${status.watcher ? `pid ${status.watcher.pid}, ${status.watcher.directories} directories` : style.dim("none (scans walk the tree)")}`,
        );
        if (status.transition)
          lines.push(
            style.red(
              `interrupted ${status.transition.kind} (phase ${status.transition.phase}): run \`timewarp recover\``,
            ),
          );
        for (const w of status.past_work.slice(0, 5))
          lines.push(
            `${style.bold("past work")} ${w.patch_path} (${w.files} files, made at ${w.snapshot_id}, kept ${w.saved_at})`,
          );
        if (status.past_work.length > 5)
          lines.push(
            style.dim(`  … and ${status.past_work.length - 5} more in .timewarp/past-work/`),
          );
        return { json: status, human: lines.join("\n") };
      }),
    );
}
