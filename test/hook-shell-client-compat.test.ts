import { describeShellClient } from "./helpers/hook-shell-suite.ts";

// bin/timewarp-hook under busybox's sh and awk (Alpine's) and dash with the one true awk (the
// BSDs' and macOS's): the suite of hook-shell-client.test.ts, in a file of its own so that
// vitest runs the two halves side by side.
describeShellClient(["busybox sh and awk", "dash with original-awk"]);
