/**
 * timewarp as a library. Each capability is one namespace (and one subpath export,
 * `timewarp/<capability>`), the same doors the CLI, the MCP server and the hooks use:
 *
 * ```ts
 * import { timemachine, ledger } from "timewarp";
 * const { snapshot_id } = await timemachine.startSession({ root: "/work/app", sessionId: "s1" });
 * await ledger.applyEditBlock({ root: "/work/app" }, { path: "src/a.ts", searchBlock: "x", replaceBlock: "y" });
 * ```
 */
export * as core from "./core/index.ts";
export { ErrorCode, isTimewarpError, TimewarpError } from "./core/index.ts";
export * as diff from "./diff/index.ts";
export * as hooks from "./hooks/index.ts";
export * as ledger from "./ledger/index.ts";
export * as memory from "./memory/index.ts";
export * as runs from "./runs/index.ts";
export * as store from "./store/index.ts";
export * as timemachine from "./timemachine/index.ts";
