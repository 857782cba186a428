#!/usr/bin/env bash
# make check: the whole pipeline, stage by stage, with timings.
#   deps -> tree -> series (apply, checkpatch) -> normal kernel -> bisect
#   -> lint (W=1, sparse) -> config matrix (W=1) -> bench plots (the
#   committed plots are those of docs/bench/results.csv) -> guest programs
#   -> boot normal -> boot fresh -> trace-check -> boot stress (the
#   accounting loads for minutes) -> the 6.12 series: tree, apply,
#   checkpatch, kernel, bisect, guest, boot, Debian's stock 6.12 kernel
#   with the consumer tool's tests and trace-check, PREEMPT_RT kernel and
#   boot
#   -> arm64 kernel, guest programs, boot -> debug kernel -> boot debug
#   -> KCSAN kernel and boot (scripts/kcsan.sh) -> verdict
#
# make check (and CI) runs check.sh.  The last line is the total:
# "N passed, N failed, N skipped".
set -euo pipefail
. "$(dirname "$0")/lib.sh"
S=$TOP/scripts

[ $# = 0 ] || die "usage: $0"

stages=()
t0=$(now_s)
passed=0 failed=0 skipped=0

report() {
	local s
	echo
	say "stage times"
	for s in "${stages[@]}"; do note "$s"; done
	note "total: $(fmt_secs $(($(now_s) - t0)))"
}

# stage NAME CMD...: run a stage; a failing stage ends the check.
stage() {
	local name=$1 start rc=0
	shift
	start=$(now_s)
	"$@" || rc=$?
	stages+=("$(printf '%-16s %s%s' "$name" "$(fmt_secs $(($(now_s) - start)))" "$([ $rc = 0 ] || echo '  FAILED')")")
	if [ $rc != 0 ]; then
		report
		echo "check: FAILED at stage '$name' (see above)"
		echo "$passed passed, $((failed + 1)) failed, $skipped skipped"
		exit 1
	fi
}

# counted_stage NAME COUNTS CMD...: a stage whose checks add into the totals
# like a guest's (COUNTS: "passed failed skipped"); a failing run that wrote
# no counts is one failure.  Like a boot, it does not stop the check.
counted_stage() {
	local name=$1 counts=$2 start rc=0 c
	shift 2
	start=$(now_s)
	rm -f "$counts"
	"$@" || rc=$?
	stages+=("$(printf '%-16s %s%s' "$name" "$(fmt_secs $(($(now_s) - start)))" "$([ $rc = 0 ] || echo '  FAILED')")")
	if [ -f "$counts" ]; then
		read -r -a c <"$counts"
		passed=$((passed + c[0])) failed=$((failed + c[1])) skipped=$((skipped + c[2]))
	fi
	if [ $rc != 0 ] && { [ ! -f "$counts" ] || [ "${c[1]}" = 0 ]; }; then
		failed=$((failed + 1))
	fi
}

# boot_stage FLAVOUR [SERIES]: boot and add the guest's counts; a failing
# guest does not stop the check, the other flavours still run.  SERIES 6.12
# boots the kernel of the mainline series (its logs are in logs-6.12/).
boot_stage() {
	local flavour=$1 series=${2:-6.1} counts label
	counts=$LOGS/$flavour-check.counts label="boot $flavour"
	if [ "$series" != 6.1 ]; then
		counts=$BUILD/logs-$series/$flavour-check.counts label="boot $series"
		[ "$flavour" = normal ] || label+=" $flavour"
	fi
	counted_stage "$label" "$counts" env SERIES="$series" "$S/boot.sh" "$flavour" check
}

# The mainline series (patches/6.12/ on linux-source-6.12): the same checks
# of the queue, its kernel and every prefix, and a boot with mainline's
# map_test (with our additions) and our 6.1 selftests that are not 6.1-only.
series_612() {
	SERIES=6.12 "$S/series-apply.sh" && SERIES=6.12 "$S/checkpatch.sh"
}
tests_612() {
	SERIES=6.12 "$S/tests.sh" && "$S/tests-6.1-on-6.12.sh" && SERIES=6.12 "$S/initramfs.sh"
}

stage deps "$S/deps.sh"
stage tree "$S/tree.sh" --sync
stage series-apply "$S/series-apply.sh"
stage checkpatch "$S/checkpatch.sh"
stage kernel "$S/kernel.sh" normal
stage bisect "$S/bisect.sh" --skip-head
stage lint "$S/lint.sh"
stage matrix "$S/matrix.sh"
stage bench-plots python3 "$S/bench-report.py" --check "$TOP/docs/bench"
stage tests "$S/tests.sh"
stage initramfs "$S/initramfs.sh"
boot_stage normal
# A kernel nothing traced with yet: the top level buffer's first use.
counted_stage "boot fresh" "$LOGS/fresh-check.counts" env RUN_NAME=fresh ONLY=fresh_ \
	BOOT_EVENTS=0 "$S/boot.sh" normal check
# The consumer tool against Debian's trace-cmd report (scripts/trace-check.sh)
counted_stage trace-check "$LOGS/trace-check.counts" "$S/trace-check.sh"
# The accounting loads (one writer and one consumer per CPU, GET_READER
# alone for 30 s, then alternating read() and GET_READER for two minutes,
# then consumers that never nap for 20 s) on 4 vCPUs: every event produced
# is consumed or reported lost, per CPU and page.
counted_stage "boot stress" "$LOGS/stress-check.counts" env RUN_NAME=stress \
	ONLY=tests/rb_accounting \
	APPEND="RB_LOAD_MS=${STRESS_LOAD_MS:-30000} RB_MIX_MS=${STRESS_MIX_MS:-120000} RB_KEEP_UP_MS=${STRESS_KEEP_UP_MS:-20000}" \
	"$S/boot.sh" normal check
stage tree-6.12 env SERIES=6.12 "$S/tree.sh" --sync
stage series-6.12 series_612
stage kernel-6.12 env SERIES=6.12 "$S/kernel.sh" normal
stage bisect-6.12 env SERIES=6.12 "$S/bisect.sh" --skip-head
stage tests-6.12 tests_612
boot_stage normal 6.12
# The consumer tool on mainline's own mapping: Debian's stock 6.12 kernel
# (linux-image-6.12.*-cloud-amd64, fetched with apt) boots the 6.12
# guest and runs the tool's tests (user/tests/ftmmap_test.sh) alone.
stock_612_boot() {
	local kernel
	kernel=$(stock_612_kernel) || return
	SERIES=6.12 KERNEL=$kernel RUN_NAME=stock ONLY=tests/ftmmap ALLOW_NO_TESTS=1 \
		"$S/boot.sh" normal check
}
counted_stage "boot stock 6.12" "$BUILD/logs-6.12/stock-check.counts" stock_612_boot
# and trace-check.sh's comparison with trace-cmd report on that kernel
counted_stage "trace-check stock" "$LOGS/trace-check-stock.counts" "$S/trace-check.sh" --stock
# PREEMPT_RT with lockdep for the mainline series (config/rt.config)
stage kernel-6.12-rt env SERIES=6.12 "$S/kernel.sh" rt
boot_stage rt 6.12
stage kernel-arm64 "$S/kernel.sh" arm64
stage tests-arm64 "$S/tests.sh" arm64
stage initramfs-arm64 "$S/initramfs.sh" arm64
boot_stage arm64
stage kernel-debug "$S/kernel.sh" debug
boot_stage debug
# KCSAN on the ring buffer and the mapping (scripts/kcsan.sh)
counted_stage kcsan "$LOGS/kcsan-check.counts" "$S/kcsan.sh"

report
echo
[ "$failed" = 0 ] && echo "check: PASSED" || echo "check: FAILED"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
