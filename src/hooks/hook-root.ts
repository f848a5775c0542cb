/**
 * The workspace a hook works on: the one rule the CLI and the MCP server use too, which lives in
 * core (`resolveWorkspaceRoot`). Kept under its hook name for the hooks' callers.
 */
export {
  findWorkspaceRoot,
  resolveWorkspaceRoot as resolveRoot,
} from "../core/index.ts";
