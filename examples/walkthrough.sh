#!/usr/bin/env bash
# The Timewarp optimization protocol (seed §8), all 7 steps, on a copy of examples/demo-project.
#
#   bash examples/walkthrough.sh            # uses bin/timewarp.cjs of this checkout
#   TIMEWARP=timewarp bash examples/walkthrough.sh   # or an installed timewarp
#
# An agent fixing a slug bug hits friction and records it (issue report) without stopping its
# main task. Later, in an optimization cycle, it picks the issue, travels to the session's
# snapshot, reproduces, fixes, validates, writes what it learned into experiment.md, returns to
# the present (keeping the experiment as a patch: memory, never applied by itself), re-applies
# the fix in the present, validates again and marks the issue fixed.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(dirname "$HERE")"
TIMEWARP="${TIMEWARP:-node $REPO/bin/timewarp.cjs}"
WS="${1:-$(mktemp -d "${TMPDIR:-/tmp}/timewarp-walkthrough-XXXXXX")}"
tw() { $TIMEWARP -C "$WS" "$@"; }
field() { node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{let v=JSON.parse(s);for(const k of process.argv[1].split("."))v=v[k];console.log(v)})' "$1"; }
say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
fix_slugify() { # the minimal fix the experiment finds: strip diacritics before slugging
  node -e 'const fs=require("fs");const f=process.argv[1];fs.writeFileSync(f,fs.readFileSync(f,"utf8").replace(".toLowerCase()", ".toLowerCase()\n    .normalize(\"NFD\")\n    .replace(/[\\u0300-\\u036f]/g, \"\")"))' "$WS/src/slugify.js"
}

cp -R "$REPO/examples/demo-project/." "$WS/"
echo "workspace: $WS"

say "session start (the SessionStart hook does this): snapshot + cleanup"
tw session start --session-id demo-session --task-hint "fix slugify for accented titles" \
  --transcript "$REPO/examples/transcripts/claude-session.jsonl"

say "the agent hits friction and records it, then carries on with the user's task"
tw issue report \
  --task-context "User asked to fix slugify so accented titles keep their letters" \
  --symptom "Three regex attempts; 'Crème brûlée' never became 'creme-brulee'; the test kept failing" \
  --success-criteria "node --test passes 'accented titles keep their letters' on the first attempt, with no other test failing" \
  --suspected-cause "The regex strips non-ASCII letters; diacritics must be removed first (Unicode NFD)" \
  --chat-summary "The agent retried regexes instead of normalizing Unicode."
printf '\nMore usage notes.\n' >> "$WS/docs/usage.md" # the present moves on

say "1. pick an issue (timewarp_issue_list + timewarp_issue_get)"
tw issue list
ISSUE="$(tw --json issue list | field issues.0.issue_id)"
SNAPSHOT="$(tw --json issue get "$ISSUE" | field snapshot_id)"
tw issue get "$ISSUE"

say "2. travel to the issue's snapshot"
tw travel "$SNAPSHOT"
tw status

say "3. reproduce the friction (the test fails, as in chat.md)"
if (cd "$WS" && node --test >/dev/null 2>&1); then echo "expected a failing test" >&2; exit 1; fi
echo "reproduced: 'accented titles keep their letters' fails"

say "4. propose a minimal fix: normalize to NFD and drop combining marks"
fix_slugify

say "5. iterate: implement -> validate; record what worked in experiment.md"
(cd "$WS" && node --test 2>&1 | grep -E '^# (pass|fail)')
EXPERIMENT="$(tw --json issue get "$ISSUE" | field experiment_path)"
node -e 'const fs=require("fs");const f=process.argv[1];let s=fs.readFileSync(f,"utf8");
s=s.replace("<what the experiment changed>","src/slugify.js: after .toLowerCase(), add .normalize(\"NFD\").replace(/[\\u0300-\\u036f]/g, \"\")");
s=s.replace("<how to tell success from failure: commands, steps, criteria>","node --test: 3 pass, 0 fail");
s=s.replace("<success/failure + evidence>","success: accented titles keep their letters passes");
fs.writeFileSync(f,s)' "$EXPERIMENT"

say "6. return to the present (the experiment's workspace changes are discarded; a patch is kept as memory)"
tw return --save-patch "$ISSUE"
grep -q "More usage notes" "$WS/docs/usage.md" && echo "the present's own changes are back"
grep -q normalize "$WS/src/slugify.js" && { echo "the experiment leaked into the present" >&2; exit 1; }

say "7. re-apply from experiment.md in the present, validate, mark fixed"
fix_slugify
(cd "$WS" && node --test 2>&1 | grep -E '^# (pass|fail)')
(cd "$WS" && node --test >/dev/null 2>&1)
tw issue fix "$ISSUE"
tw issue list --status all
echo
echo "walkthrough complete: $WS"
