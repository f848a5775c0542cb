#!/bin/sh
# The shell the package ships (bin/timewarp, bin/timewarp-hook, tcl/heartbeat_sidecar.sh), through ShellCheck as POSIX sh. .ci/run
# installs ShellCheck; a machine without it is told so and not failed.
cd "$(dirname "$0")/.." || exit 1
if ! command -v shellcheck >/dev/null 2>&1; then
  echo "lint: shellcheck is not installed, bin/timewarp-hook not checked (apt-get install shellcheck)" >&2
  exit 0
fi
exec shellcheck -s sh bin/timewarp bin/timewarp-hook tcl/heartbeat_sidecar.sh scripts/lint-shell.sh
