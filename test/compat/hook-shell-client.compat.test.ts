import { describeShellClient } from "../helpers/hook-shell-suite.ts";

// bin/timewarp-hook under busybox's sh and awk (Alpine's), dash with the one true awk (the BSDs'
// and macOS's) and bash with gawk: the suite that test/hook-shell-client.test.ts runs whole under
// Debian's dash with mawk, and only its first tests under bash with gawk (`npm run test:compat`;
// .ci/run installs busybox and original-awk).
describeShellClient(["busybox sh and awk", "dash with original-awk", "bash with gawk"]);
