#!/usr/bin/env bash
# The KCSAN stage: the data race detector on the ring buffer and the mapping.
#
#   kcsan.sh          build the kcsan kernel of the series, check that
#                     kernel/trace/ is instrumented, boot it on $SMP vCPUs
#                     with the mapping tests and the accounting load, and
#                     fail on any KCSAN report that names a function the
#                     series changes, or that config/kcsan-known-races does
#                     not list and has a function of kernel/trace/ in its
#                     stacks (one with no tracing code at all is a note)
#   kcsan.sh --build  all of that but the boot (make check: beside other boots)
#   kcsan.sh --boot   the boot alone, after --build
#   kcsan.sh --base   the same load on the unpatched base kernel, in
#                     KCSAN_BASE_RUNS boots (3): (re)write
#                     config/kcsan-known-races from their reports, keeping the
#                     reason of every entry already there; a new entry gets
#                     "TODO", which fails the stage until a person writes
#                     why the race is the base kernel's and harmless
#
# The kcsan flavour (config/kcsan.config) turns the function tracer off:
# kernel/trace/Makefile leaves the folder uninstrumented otherwise.
# Environment: SMP (4), KCSAN_SKIP_WATCH (500), KCSAN_LOAD_MS (40000: how
# long tests/kcsan_load runs), KCSAN_RB_LOAD_MS (10000: rb_accounting's
# loads), APPEND (more kernel command line), KCSAN_ONLY (the guest programs,
# as boot.sh's ONLY; default: the mapping tests, the accounting load,
# tests/kcsan_load, tests/kcsan_stats and tests/kcsan_swap on the series,
# the last three alone on the base, which cannot map).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

base=0 build=1 boot=1
case ${1:-} in
--base) base=1 ;;
--build) boot=0 ;;
--boot) build=0 ;;
'') ;;
*) die "usage: $0 [--base|--build|--boot]" ;;
esac
need_tree
export SMP=${SMP:-4}
# KCSAN sets a watchpoint on one access in kcsan.skip_watch (4000 by
# default): one in 500 finds in a minute of load the races that the default
# finds in some runs only.  The loads run longer than in make check's boots.
# KCSAN watches the tests only (guest/init: ftmmap.kcsan=tests), not
# the boot or the power-off, whose races are no tracing code's.
export APPEND="kcsan.early_enable=0 ftmmap.kcsan=tests kcsan.skip_watch=${KCSAN_SKIP_WATCH:-500} KCSAN_LOAD_MS=${KCSAN_LOAD_MS:-40000} RB_LOAD_MS=${KCSAN_RB_LOAD_MS:-10000}${APPEND:+ $APPEND}"
# The loads both kernels run (user/tests/kcsan_load.c: writers, read()ers,
# resizes; user/tests/kcsan_stats.c: stats read and trace_pipe_raw polled
# while writers move pages; user/tests/kcsan_swap.c: the reader page
# swapped by every read() while writers move pages);
# the series adds its mapping tests beside them.
only=${KCSAN_ONLY:-ring-buffer/map_test,ring-buffer/load_test,tests/rb_accounting,tests/kcsan_load,tests/kcsan_stats,tests/kcsan_swap}
[ $base = 0 ] || only=${KCSAN_ONLY:-tests/kcsan_load,tests/kcsan_stats,tests/kcsan_swap}
known=$TOP/config/kcsan-known-races

obj=$OBJ/kcsan
[ $base = 0 ] || obj=$OBJ/kcsan-base
touched=$LOGS/kcsan-touched.txt
tracing=$LOGS/kcsan-tracing.txt
if [ $build = 0 ]; then
	for f in "$obj/$KIMAGE" "$touched" "$tracing"; do
		[ -s "$f" ] || die "no $f: run $0 --build first"
	done
elif [ $base = 1 ]; then
	wt=$(base_worktree)
	WORKTREE=$wt "$TOP/scripts/kernel.sh" kcsan kcsan-base
else
	"$TOP/scripts/kernel.sh" kcsan
fi

# KCSAN must see the ring buffer: __tsan_ calls in ring_buffer.o
if [ $build = 1 ]; then
	n=$(objdump -dr "$obj/kernel/trace/ring_buffer.o" | grep -cE 'R_X86_64_(PLT32|PC32)[[:space:]]+__tsan_' || true)
	[ "$n" -gt 0 ] || die "kernel/trace/ring_buffer.o has no __tsan_ call: KCSAN does not instrument the ring buffer"
	note "kernel/trace/ring_buffer.o: $n calls into KCSAN"
fi

if [ $base = 0 ]; then
	if [ $build = 1 ]; then
		# The functions the series changes: the function of every
		# hunk (git's hunk header) and every function it adds.
		mkdir -p "$LOGS"
		sgit diff -U0 base HEAD -- '*.c' '*.h' |
			sed -n -e 's/^@@ [^@]* @@.*[^[:alnum:]_]\([[:alpha:]_][[:alnum:]_]*\)(.*/\1/p' \
				-e 's/^+[[:alpha:]].*[^[:alnum:]_]\([[:alpha:]_][[:alnum:]_]*\)(.*/\1/p' |
			sort -u >"$touched"
		note "$(wc -l <"$touched") functions changed by the series (${touched#"$TOP"/})"
		# The functions of kernel/trace/: a report with none of them
		# (nor one the series changes) in its stacks is a race of the
		# rest of the kernel, which the tests only happen to run into
		# (the scheduler's load balancer, the TLB flush of a
		# madvise()): noted, not failed.
		nm --defined-only "$obj"/kernel/trace/*.o 2>/dev/null |
			awk '$2 ~ /^[tTwW]$/ { sub(/\..*/, "", $3); print $3 }' | sort -u >"$tracing"
		[ -s "$tracing" ] || die "no function found in $obj/kernel/trace/*.o"
		note "$(wc -l <"$tracing") functions in kernel/trace/ (${tracing#"$TOP"/})"
	fi
	[ $boot = 1 ] || exit 0
	RUN_NAME=kcsan ONLY=$only KERNEL="$obj/$KIMAGE" \
		VERDICT_ARGS="--kcsan-selftest --known-races $known --touched $touched --tracing $tracing" \
		"$TOP/scripts/boot.sh" kcsan check
	exit
fi

# The base runs (KCSAN_BASE_RUNS, 3: KCSAN samples, and a race one run
# misses another finds): the verdict fails on their reports, which are what
# they are for; the load must have run in each.
base_logs=()
for i in $(seq 1 "${KCSAN_BASE_RUNS:-3}"); do
	log=$LOGS/kcsan-base-$i-check.log
	RUN_NAME=kcsan-base-$i ONLY=$only KERNEL="$obj/$KIMAGE" ALLOW_NO_TESTS=1 \
		"$TOP/scripts/boot.sh" kcsan check >/dev/null || true
	grep -q 'kcsan: selftest: \([0-9]*\)/\1 tests passed' "$log" ||
		die "the base kernel's KCSAN selftest did not pass (see $log)"
	grep -q '^ok 1 - [0-9]* markers written' "$log" ||
		die "the load did not run on the base kernel (see $log)"
	note "base run $i: $(grep -c 'BUG: KCSAN' "$log" || true) reports (${log#"$TOP"/})"
	base_logs+=("$log")
done
python3 - "$known" "${base_logs[@]}" <<'EOF'
import os, re, sys
known, logs = sys.argv[1], sys.argv[2:]
sys.path.insert(0, os.path.join(os.path.dirname(known), "..", "scripts"))
from verdict import KCSAN, race_key, read_known_races
UNSEEN = " (not seen in the last base runs)"
old = read_known_races(known) if os.path.exists(known) else {}
seen = {}
for log in logs:
    for line in open(log, errors="replace"):
        m = KCSAN.search(line)
        if m:
            key = race_key(m.group(2))
            seen[key] = seen.get(key, 0) + 1
with open(known, "w") as f:
    f.write("# Data races KCSAN reports on the unpatched base kernel (scripts/kcsan.sh\n"
            "# --base writes the list from its runs; the reasons are a person's).  A\n"
            "# report of one of these on the series is not a failure, unless it names\n"
            "# a function the series changes.  Format: \"a / b   # why\".\n")
    for key in sorted(set(seen) | set(old)):
        why = old.get(key, ("TODO: why is this the base kernel's and harmless?",))[0]
        why = why.replace(UNSEEN, "") + ("" if key in seen else UNSEEN)
        f.write(f"{' / '.join(key):<60}  # {why}\n")
for key, n in sorted(seen.items()):
    print(f"    {n:4d}  {' / '.join(key)}")
EOF
note "wrote ${known#"$TOP"/}: write the reason of every TODO entry"
