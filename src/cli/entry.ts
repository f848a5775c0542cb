import { parseHookArgv, runHookCommand } from "./commands/hooks.ts";

// No top-level await: the bin runs this as one CommonJS bundle (see scripts/bundle-cli.ts).
// A plain hook call skips building the program (commander and every command group): agents
// start one on every tool call.
const hook = parseHookArgv(process.argv.slice(2));
const done =
  hook !== null ? runHookCommand(hook) : import("./main.ts").then((m) => m.main(process.argv));
done.catch((error: unknown) => {
  // Both paths print their own errors; reaching here is a bug in the error path.
  console.error(error);
  process.exitCode = 1;
});
