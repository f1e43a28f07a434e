#!/usr/bin/env bash
# Heap bytes per idle session, by part (valgrind --tool=dhat): the sessions bench's server child
# (serving as `mcpd serve -s --no-file-tools` does) is run under dhat twice, once with no session
# and once with N sessions opened by `initialize` (scripts/perf/open_sessions.py); the heap at its
# peak in the second run less the first, divided by N, is one idle session, grouped by where it
# was allocated (scripts/perf/dhat_parts.py).
#
# usage: scripts/perf/session-bytes.sh [N]   (default 20000; the profiles stay in a temp directory)
# Uses the bench binary of `cargo bench --bench sessions --no-run` (or SESSIONS_BENCH=PATH).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
n=${1:-20000}
bin=${SESSIONS_BENCH:-$(cd "$here/../.." && cargo bench --bench sessions --no-run 2>&1 |
    sed -n 's/.*Executable .*(\(.*sessions-[0-9a-f]*\))$/\1/p' | tail -n 1)}
[ -x "$bin" ] || { echo "session-bytes.sh: no sessions bench binary ($bin)" >&2; exit 1; }
work=$(mktemp -d)
echo "session-bytes.sh: profiles in $work" >&2

# Runs the server under dhat with COUNT sessions opened; the profile goes to OUT.
profile() { # COUNT OUT
    local count=$1 out=$2 line port
    coproc SERVER { exec valgrind --tool=dhat --dhat-out-file="$out" "$bin" --serve-child 1 $((count + 1000)) 2>>"$work/valgrind.log"; }
    read -r line <&"${SERVER[0]}"
    port=${line#listening }
    python3 "$here/open_sessions.py" "$port" "$count" >/dev/null
    exec {SERVER[1]}>&-
    wait "$SERVER_PID" || true
}
profile 0 "$work/none.json"
profile "$n" "$work/sessions.json"
python3 "$here/dhat_parts.py" "$work/none.json" "$work/sessions.json" "$n"
