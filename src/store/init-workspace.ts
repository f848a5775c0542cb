import { existsSync, statSync } from "node:fs";
import {
  appendEvent,
  type Clock,
  type Config,
  ErrorCode,
  ensureDataDir,
  fromSystemError,
  parseConfig,
  readConfig,
  systemClock,
  TimewarpError,
  workspacePaths,
  writeJsonAtomic,
} from "../core/index.ts";

export interface InitResult {
  workspace_root: string;
  /** False when `.timewarp/config.json` was already there (init is idempotent). */
  created: boolean;
  config_path: string;
  config: Config;
}

/**
 * Create `<root>/.timewarp/` with a `config.json` holding the defaults (default excludes,
 * size cap, …) and a `.gitignore` that keeps the store out of git. Idempotent: an existing config is validated (CONFIG_INVALID naming the field)
 * and left as it is. NOT_A_DIRECTORY when `root` is not a directory.
 */
export function initWorkspace(root: string, options: { clock?: Clock } = {}): InitResult {
  const paths = workspacePaths(root);
  assertDirectory(paths.root);
  try {
    ensureDataDir(paths.root);
  } catch (error) {
    throw fromSystemError(error, `creating ${paths.data}`);
  }
  if (existsSync(paths.config)) {
    return {
      workspace_root: paths.root,
      created: false,
      config_path: paths.config,
      config: readConfig(paths.config),
    };
  }
  const config = parseConfig({}, paths.config);
  writeJsonAtomic(paths.config, config);
  appendEvent(paths.events, "workspace.initialized", {}, options.clock ?? systemClock);
  return { workspace_root: paths.root, created: true, config_path: paths.config, config };
}

/** NOT_A_DIRECTORY unless `path` is an existing directory. */
export function assertDirectory(path: string): void {
  let ok = false;
  try {
    ok = statSync(path).isDirectory();
  } catch {
    ok = false;
  }
  if (!ok) {
    throw new TimewarpError(
      ErrorCode.NOT_A_DIRECTORY,
      `workspace root ${path} is not a directory (or does not exist)`,
      { data: { path } },
    );
  }
}
