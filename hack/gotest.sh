#!/usr/bin/env bash
# Runs go test with the arguments given: its output shows as it comes and is kept in
# .slipway/test.log (SLIPWAY_TEST_LOG). When the run fails it ends with the failures alone: each
# failed test with its messages, each panic or fatal error with its first frames, each failed
# package. A long run's controller logs would otherwise bury them far above the end.
set -uo pipefail
log=${SLIPWAY_TEST_LOG:-.slipway/test.log}
mkdir -p "$(dirname "$log")"
"${GO:-go}" test "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
if [ "$status" -ne 0 ]; then
	echo "==> go test failed (exit $status); its failures follow, the whole output is in $log"
	awk '
		# A failed test and the lines indented under it: its messages (at most 40 lines each).
		/^ *--- FAIL: / { match($0, /^ */); indent = RLENGTH; fail = 40; print; next }
		fail > 0 { match($0, /^ */); if (RLENGTH > indent && fail-- > 0) { print; next } fail = 0 }
		# A panic, a fatal error (a concurrent map write, a timeout) or a data race, with the frames
		# that say where.
		/^(panic: |fatal error: |WARNING: DATA RACE)/ { frames = 16 }
		frames > 0 { print; frames--; next }
		/^FAIL\t/ { print }
	' "$log"
fi
exit "$status"
