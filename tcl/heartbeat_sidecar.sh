#!/bin/sh
# SkillPilot heartbeat sidecar: started by queue_processor.tcl on the tool's own host when the
# tool's Tcl has no Thread package. It bumps session/heartbeat while the tool's process exists and
# is not stopped (SIGSTOP, a debugger) nor a zombie, so a long command that blocks the tool's Tcl
# event loop no longer looks like a lost heartbeat, while a frozen tool still does. It exits as
# soon as the tool is gone (or its pid was reused by another process).
#
# usage: heartbeat_sidecar.sh TOOL_PID HEARTBEAT_FILE INTERVAL_SECONDS [START_COUNT [DATE_EVERY]]
#
# Only shell built-ins run per beat, besides mv and sleep (and date every DATE_EVERY beats, about
# once a second: the time in the line is for people, the counter is what the runtime reads); the
# heartbeat is written to a temp name (with the runtime's .tw-tmp- marker) and renamed, like
# every protocol file.

set -f
pid=$1
file=$2
interval=$3
n=${4:-0}
date_every=${5:-1}
if [ -z "$pid" ] || [ -z "$file" ] || [ -z "$interval" ]; then
  echo "usage: $0 TOOL_PID HEARTBEAT_FILE INTERVAL_SECONDS [START_COUNT [DATE_EVERY]]" >&2
  exit 2
fi
dir=${file%/*}
tmp="$dir/.${file##*/}.tw-tmp-$$-sidecar"

# Sets st (the one-letter process state) and born (its start time, against pid reuse).
probe() {
  st=
  born=
  if [ -r "/proc/$pid/stat" ]; then
    { IFS= read -r line <"/proc/$pid/stat"; } 2>/dev/null || return 1
    # the command name (field 2) may hold spaces: the fields after its ')' are plain
    # shellcheck disable=SC2086
    set -- ${line##*) }
    [ $# -ge 20 ] || return 1
    st=$1
    shift 19
    born=$1
    return 0
  fi
  # Linux without the pid's /proc entry: the process is gone
  [ -d /proc/self ] && return 1
  st=$(ps -o stat= -p "$pid" 2>/dev/null) || return 1
  st=${st#"${st%%[! ]*}"}
  st=${st%"${st#?}"}
  [ -n "$st" ]
}

probe || exit 0
first=$born
now=
while :; do
  probe || exit 0
  [ "$born" = "$first" ] || exit 0
  [ -d "$dir" ] || exit 0
  case $st in
  Z | X | x) exit 0 ;;
  T | t) ;; # stopped: no beat, so the runner sees the freeze
  *)
    n=$((n + 1))
    if [ -z "$now" ] || [ $((n % date_every)) -eq 0 ]; then
      now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
    fi
    printf '%s %s %s sidecar\n' "$n" "$now" "$pid" >"$tmp" &&
      mv -f "$tmp" "$file"
    ;;
  esac
  sleep "$interval" || exit 0
done
