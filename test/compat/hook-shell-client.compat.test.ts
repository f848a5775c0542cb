import { describeShellClient } from "../helpers/hook-shell-suite.ts";

// bin/timewarp-hook under busybox's sh and awk (Alpine's) and dash with the one true awk (the
// BSDs' and macOS's): the suite that test/hook-shell-client.test.ts runs under Debian's own
// shells and awks (`npm run test:compat`; .ci/run installs busybox and original-awk).
describeShellClient(["busybox sh and awk", "dash with original-awk"]);
