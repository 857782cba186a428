#!/usr/bin/env bash
# make check: the whole pipeline, stage by stage, with timings.
#
# First, one after the other: deps -> check.sh's own test
# (check-selftest.sh) -> tree -> series (apply, checkpatch) -> normal
# kernel -> guest programs.  Then three chains side by side:
#
#   the boots, each when its     the 6.1 builds (nice 19)  the 6.12 builds (nice 19)
#   kernel is built
#   boot normal, boot fresh,     debug kernel              6.12 tree (unpacked),
#     trace-check, boot stress   gki (arm64): kernel,        series (applied,
#     (the accounting loads)       guest                     checkpatch)
#   boot debug                   bisect (6.1)              6.12 PREEMPT_RT kernel,
#   boot 6.12 rt, Debian's       lint (W=1, sparse)          guest
#     stock 6.12 kernel with                               bisect (6.12)
#     the consumer tool's tests                            kernel/trace/ of 6.12,
#     and trace-check                                        normal config
#   boot gki                                               config matrix
#                                                          bench plots
#
# The KCSAN kernel and its boot (make kcsan) are not in the check: with
# them a CI run on a slow host went past its 90 minutes (stop 51).  Run
# make kcsan whenever the series' kernel code changes.
#
# The committed bench plots are those of docs/bench/results.csv.  The
# chains of builds share no tree: the 6.1 bisect checks out the prefixes
# in the 6.1 tree, which the 6.1 kernels before and after it build from,
# the 6.12 bisect in the 6.12 tree, and the matrix has its own work tree.
# The check is bound by the CPUs: moving stages between chains gains only
# what a core would have left idle (fresh clones: 55m41s with three
# chains, 58m12s with two; machines of this kind differ by minutes from
# run to run, and some are slower by half).
#
# A boot keeps QEMU's threads on less than one of the two cores of a CI
# machine (0.8: 117 s of CPU in a 155 s normal boot); the builds take the
# rest.  They run at nice 19 in a session of their own, whose autogroup
# (where the scheduler has them) gets nice 19 too: otherwise the two
# sessions share the CPUs equally and a debug boot took 7m24s instead of
# 5m32s.  A normal boot beside two CPU hogs set up so took 148 s (155 s
# alone).  The bisect builds check out every prefix of the series in the
# scratch trees, so no kernel is built from a tree while its bisect runs:
# the kernels of the same chain come before or after it.
#
# make check (and CI) runs check.sh.  The last line is the total:
# "N passed, N failed, N skipped".  check.sh --builds and --builds2 are
# the chains of builds, which check.sh starts itself.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
S=$TOP/scripts
STATE=$BUILD/check-state

chain=main
case ${1:-} in
'') ;;
--builds) chain=builds ;;
--builds2) chain=builds2 ;;
*) die "usage: $0" ;;
esac

# $STATE/stages: one line per stage ended,
# "NAME<tab>SECONDS<tab>RC<tab>CHAIN<tab>CPU" (CPU: the seconds of user and
# system time of the stage's processes, QEMU's included);
# $STATE/counts: one line "passed failed skipped" per counted stage.
record() { # NAME START RC
	local f=$STATE/cpu.$BASHPID
	printf '%s\t%s\t%s\t%s\t%s\n' "$1" $(($(now_s) - $2)) "$3" "$chain" \
		"$(cat "$f" 2>/dev/null || echo '?')" >>"$STATE/stages"
	rm -f "$f"
}

# timed CMD...: run CMD in a subshell, which then writes the CPU time of
# its children (the stage's processes, each counted once reaped) into
# $STATE/cpu.PID for record().  Not the chain's own children: the main
# chain reaps the builds chains whenever they end, so its figure would
# take in theirs.
timed() {
	local f=$STATE/cpu.$BASHPID
	(
		rc=0
		"$@" || rc=$?
		times >"$f.times"
		exit $rc
	)
	local rc=$? t
	t=$(sed -n 2p "$f.times" 2>/dev/null)
	rm -f "$f.times"
	# "0m12.340s 0m3.210s": user and system, minutes, seconds and
	# milliseconds; their sum, rounded to the second (not each part cut:
	# 0.6 s of user and 0.9 s of system time are 2 s, not 0)
	if [[ $t =~ ^([0-9]+)m([0-9]+)\.([0-9]{3})s\ ([0-9]+)m([0-9]+)\.([0-9]{3})s$ ]]; then
		local ms
		ms=$(((BASH_REMATCH[1] * 60 + 10#${BASH_REMATCH[2]} + BASH_REMATCH[4] * 60 + 10#${BASH_REMATCH[5]}) * 1000 +
			10#${BASH_REMATCH[3]} + 10#${BASH_REMATCH[6]}))
		echo $(((ms + 500) / 1000)) >"$f"
	fi
	return $rc
}

report() {
	local name secs rc ch cpu total=0
	echo
	say "stage times (wall clock; CPU: user + system of the stage's processes)"
	while IFS=$'\t' read -r name secs rc ch cpu; do
		case $cpu in '' | *[!0-9]*) cpu='?' ;; *) total=$((total + cpu)) cpu=$(fmt_secs "$cpu") ;; esac
		note "$(printf '%-18s %s  CPU %s%s%s' "$name" "$(fmt_secs "$secs")" "$cpu" \
			"$(case $ch in builds*) echo '  (builds, beside the boots)' ;; esac)" \
			"$([ "$rc" = 0 ] || echo '  FAILED')")"
	done <"$STATE/stages"
	note "CPU of the stages: $(fmt_secs "$total")"
	note "total: $(fmt_secs $(($(now_s) - $(cat "$STATE/t0"))))"
}

totals() {
	awk '{ p += $1; f += $2; s += $3 } END { printf "%d passed, %d failed, %d skipped\n", p, f, s }' \
		"$STATE/counts"
}

# stage NAME CMD...: run a stage; a failing one ends the check (in a
# builds chain: that chain, and the boots wait for no more kernels).
stage() {
	local name=$1 start rc=0
	shift
	start=$(now_s)
	timed "$@" || rc=$?
	record "$name" "$start" "$rc"
	[ $rc = 0 ] && return
	echo "0 1 0" >>"$STATE/counts"
	if [ "$chain" != main ]; then
		echo "$name" >"$STATE/builds-failed"
		echo "check: the builds FAILED at stage '$name' (see above)"
		exit 1
	fi
	report
	echo "check: FAILED at stage '$name' (see above)"
	totals
	exit 1
}

# counted_stage NAME COUNTS CMD...: a stage whose checks add into the totals
# like a guest's (COUNTS: "passed failed skipped"); a failing run that wrote
# no counts is one failure.  Like a boot, it does not stop the check.
counted_stage() {
	local name=$1 counts=$2 start rc=0 c
	shift 2
	start=$(now_s)
	rm -f "$counts"
	timed "$@" || rc=$?
	record "$name" "$start" "$rc"
	if [ -f "$counts" ]; then
		read -r -a c <"$counts"
		echo "${c[0]} ${c[1]} ${c[2]}" >>"$STATE/counts"
	fi
	if [ $rc != 0 ] && { [ ! -f "$counts" ] || [ "${c[1]}" = 0 ]; }; then
		echo "0 1 0" >>"$STATE/counts"
	fi
	return 0
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
arm64_guest() {
	"$S/tests.sh" arm64 && "$S/initramfs.sh" arm64
}
# The 6.12 series as most build it, without PREEMPT_RT and lockdep:
# kernel/trace/ compiled with the normal config, and no warning there (the
# RT kernel is the one 6.12 kernel the check builds whole).  Not again
# when config/compile-6.12.txt holds the key of this build: the 6.12
# tree's branch main, the normal config's fragments, gcc, kernel.sh,
# lib.sh and these functions; a build that passes writes it.
compile_612_key() {
	{
		env SERIES=6.12 bash -c ". '$S/lib.sh' && sgit rev-parse 'refs/heads/main^{tree}'"
		cat "$TOP"/config/{base,tracing,x86_64}.config
		gcc --version | head -n 1
		cat "$S/kernel.sh" "$S/lib.sh"
		declare -f compile_612 compile_612_key
	} | sha256sum | cut -c1-16
}
compile_612() {
	local log=$BUILD/logs-6.12/build-trace.log stamp=$TOP/config/compile-6.12.txt key
	key=$(compile_612_key) || return
	! stamp_holds compile-6.12 "$stamp" "$key" || return 0
	# Every object again: one left from an earlier build is not compiled
	# and would show none of its warnings.
	find "$BUILD/obj-6.12/trace/kernel/trace" -name '*.o' -delete 2>/dev/null || true
	SERIES=6.12 "$S/kernel.sh" normal trace kernel/trace/ || return
	if grep -E 'kernel/trace/[^ ]*: warning:' "$log"; then
		echo "check: warnings in kernel/trace/ of the 6.12 series, normal config (see $log)"
		return 1
	fi
	stamp_write "$stamp" "$key" "6.12/: kernel/trace/ builds with the normal config, no warning"
}

# The kernels the boots wait for: $STATE/ready-NAME once built.
ready() { touch "$STATE/ready-$1"; }

if [ "$chain" = builds ]; then
	trap 'touch "$STATE/builds-done"' EXIT
	# the scheduler's group of this session (CONFIG_SCHED_AUTOGROUP)
	[ ! -w /proc/self/autogroup ] || echo 19 >/proc/self/autogroup
	stage kernel-debug "$S/kernel.sh" debug
	ready debug
	# arm64 as Android's GKI builds it: clang, CFI, shadow call stacks,
	# ThinLTO, full preemption, hardening (config/gki.config); Debian's
	# arm64 config, built with gcc, is in the matrix
	stage kernel-gki "$S/kernel.sh" gki
	stage guest-arm64 arm64_guest
	ready gki
	# The bisect gives the tree back as it was (checkout_back): lint
	# builds the series' head.  --if-changed: not again for a queue whose
	# key config/bisect/6.1.txt holds (see bisect.sh)
	stage bisect "$S/bisect.sh" --skip-head --if-changed
	# --if-changed: not again for a head whose key config/lint/6.1.txt
	# holds (see lint.sh)
	stage lint "$S/lint.sh" --if-changed
	exit 0
fi
if [ "$chain" = builds2 ]; then
	trap 'touch "$STATE/builds2-done"' EXIT
	[ ! -w /proc/self/autogroup ] || echo 19 >/proc/self/autogroup
	# beside the debug kernel: unpacking and checkpatch use one core
	stage tree-6.12 env SERIES=6.12 "$S/tree.sh" --sync
	stage series-6.12 series_612
	# The mainline series' kernel: PREEMPT_RT with lockdep
	# (config/rt.config), its one build in the check.  A normal 6.12 build
	# booted the same tests: it went, to keep the check in its time.  The
	# 6.12 bisect starts from this kernel's objects, and Debian's stock
	# 6.12 kernel runs the tool's tests on mainline without RT.  Here, not
	# in the chain of the 6.1 kernels, so that neither chain is alone at
	# the end: the 6.1 kernels and their bisect are most of the check.
	stage kernel-6.12-rt env SERIES=6.12 "$S/kernel.sh" rt
	stage tests-6.12 tests_612
	ready 6.12
	# bisect-6.12 checks out the prefixes in the 6.12 tree: after its
	# kernel, whose objects it starts from
	stage bisect-6.12 env SERIES=6.12 BISECT_FLAVOUR=rt "$S/bisect.sh" --skip-head --if-changed
	stage compile-6.12 compile_612
	# its own work tree of the 6.1 repository (build/matrix/src)
	# --if-changed: not again for the run whose key config/matrix-base/head.txt
	# holds (see matrix.sh)
	stage matrix "$S/matrix.sh" --if-changed
	stage bench-plots python3 "$S/bench-report.py" --check "$TOP/docs/bench"
	exit 0
fi

rm -rf "$STATE"
mkdir -p "$STATE"
now_s >"$STATE/t0"
: >"$STATE/stages"
: >"$STATE/counts"

stage deps "$S/deps.sh"
# this script's own plumbing, with stub stages (scripts/check-selftest.sh)
stage check-selftest "$S/check-selftest.sh"
stage tree "$S/tree.sh" --sync
stage series-apply "$S/series-apply.sh"
stage checkpatch "$S/checkpatch.sh"
stage kernel "$S/kernel.sh" normal
stage tests "$S/tests.sh"
stage initramfs "$S/initramfs.sh"

# The two chains of builds, each in a session of its own (stopped with the
# check), their lines marked.
setsid nice -n 19 "$0" --builds </dev/null > >(sed -u 's/^/[builds] /') 2>&1 &
builds=$!
setsid nice -n 19 "$0" --builds2 </dev/null > >(sed -u 's/^/[builds2] /') 2>&1 &
builds2=$!
trap 'kill -TERM -- -$builds -$builds2 2>/dev/null || true' EXIT
trap 'exit 130' INT TERM
ready normal

# The consumer tool on mainline's own mapping: Debian's stock 6.12 kernel
# (linux-image-6.12.*-cloud-amd64, fetched with apt) boots the 6.12
# guest and runs the tool's tests (user/tests/ftmmap_test.sh) alone.
stock_612_boot() {
	local kernel
	kernel=$(stock_612_kernel) || return
	SERIES=6.12 KERNEL=$kernel RUN_NAME=stock ONLY=tests/ftmmap ALLOW_NO_TESTS=1 \
		"$S/boot.sh" normal check
}

# The boots, "KERNEL:NAME", in this order when their kernels are built;
# boot_NAME runs one.
boot_normal() { boot_stage normal; }
# A kernel nothing traced with yet: the top level buffer's first use.  One
# of its 4 CPUs is left offline (maxcpus=3), for tests/hotadd_cpu: the
# first online of a CPU, which gets its buffers then, while mapped.
boot_fresh() {
	counted_stage "boot fresh" "$LOGS/fresh-check.counts" env RUN_NAME=fresh ONLY=fresh_,hotadd_ \
		BOOT_EVENTS=0 APPEND=maxcpus=3 ONLINE_CPUS=3 "$S/boot.sh" normal check
}
# The consumer tool against Debian's trace-cmd report (scripts/trace-check.sh)
boot_trace_check() {
	counted_stage trace-check "$LOGS/trace-check.counts" "$S/trace-check.sh"
}
# The accounting loads (one writer and one consumer per CPU, GET_READER
# alone for 30 s, then alternating read() and GET_READER for a minute,
# then consumers that never nap for 20 s) on 4 vCPUs: every event produced
# is consumed or reported lost, per CPU and page.
boot_stress() {
	counted_stage "boot stress" "$LOGS/stress-check.counts" env RUN_NAME=stress \
		ONLY=tests/rb_accounting \
		APPEND="RB_LOAD_MS=${STRESS_LOAD_MS:-30000} RB_MIX_MS=${STRESS_MIX_MS:-60000} RB_KEEP_UP_MS=${STRESS_KEEP_UP_MS:-20000}" \
		"$S/boot.sh" normal check
}
# The debug kernel runs the kernel's tests: the kselftests and the rb_*
# programs, which drive every path of the mapping (map, GET_READER, reset,
# resize and rmdir refused, poll, splice, hotplug, losses).  The consumer
# tool's own tests (ftmmap_test.sh) were 472 s of its 835 s of guest time
# under KASAN and lockdep, and map_test again as a 32-bit program 84 s:
# they run on the normal kernel (and the tool's on the GKI and stock ones).
boot_debug() { SKIP=tests/ftmmap_test,compat_map_test boot_stage debug; }
boot_stock() { counted_stage "boot stock 6.12" "$BUILD/logs-6.12/stock-check.counts" stock_612_boot; }
# and trace-check.sh's comparison with trace-cmd report on that kernel
boot_trace_check_stock() {
	counted_stage "trace-check stock" "$LOGS/trace-check-stock.counts" "$S/trace-check.sh" --stock
}
# The GKI (arm64) kernel runs the consumer tool's tests that the kernel
# takes part in (FTMMAP_TESTS=core: 45 of ftmmap_test.sh's 63): all of them
# were 240 s of its 356 s of guest time, and the rest (the tool's handling
# of bad input and its ways out, 59% of the script's time on the normal
# kernel) is the same code on x86_64, where the normal and stock kernels
# run it.
boot_gki() { APPEND="FTMMAP_TESTS=core${APPEND:+ $APPEND}" boot_stage gki; }
# The 6.12 kernel boots with a trace instance in reserved memory (the
# persistent ring buffer), for tests/rb_boot_map.sh
boot_rt() {
	APPEND="reserve_mem=8M:4096:trace trace_instance=boot_map@trace${APPEND:+ $APPEND}" \
		boot_stage rt 6.12
}

pending=(normal:normal normal:fresh normal:trace_check normal:stress debug:debug
	6.12:rt 6.12:stock 6.12:trace_check_stock gki:gki)
while [ ${#pending[@]} != 0 ]; do
	# the chains' ends first: once both are there, no more kernels come
	done=0
	[ ! -e "$STATE/builds-done" ] || [ ! -e "$STATE/builds2-done" ] || done=1
	next=''
	for i in "${!pending[@]}"; do
		if [ -e "$STATE/ready-${pending[$i]%%:*}" ]; then
			next=${pending[$i]#*:}
			unset "pending[$i]"
			pending=("${pending[@]}")
			break
		fi
	done
	if [ -n "$next" ]; then
		"boot_$next"
	elif [ $done = 1 ]; then
		warn "not booted, the builds stopped before their kernels: ${pending[*]#*:}"
		echo "0 ${#pending[@]} 0" >>"$STATE/counts"
		break
	else
		sleep 2
	fi
done

rc=0 verdict=FAILED
wait "$builds" || rc=$?
wait "$builds2" || rc=$?
trap - EXIT
report
echo
if [ -e "$STATE/builds-failed" ]; then
	verdict="FAILED at stage '$(cat "$STATE/builds-failed")' (see above)"
elif [ $rc != 0 ]; then
	verdict="FAILED: the builds ended with status $rc"
	echo "0 1 0" >>"$STATE/counts"
fi
summary=$(totals)
case $summary in *" 0 failed,"*) verdict=PASSED ;; esac
echo "check: $verdict"
echo "$summary"
[ "$verdict" = PASSED ]
