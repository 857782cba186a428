#!/usr/bin/env bash
# make bench: the benchmark suite.  Figures, a results file and plots.
#
#   bench.sh
#
# Four kernels, booted with the same guest (initramfs, programs, workload):
#   ours      6.1 + this series (patches/6.1/)
#   base      the unpatched 6.1 it applies to (no mapping, no sub-buffer size)
#   6.12+ours Debian's 6.12 + our mainline series (patches/6.12/)
#   mainline  Debian's own 6.12 kernel (mainline's mapping, unchanged)
# Every boot has one vCPU under "-icount shift=0,sleep=off": the guest clock
# counts instructions, so a figure repeats to the instruction on the same
# kernel whatever the host does, and two boots run at once (BENCH_JOBS).
# Each figure comes from its own boot (user/bench.c, ftmmap-bench):
#   drain    per kernel, sub-buffer size (4 8 16 64 512 KiB; base: 4) and
#            method (read, splice-null, splice-file, mmap): the cost of
#            draining a full buffer, per event and per sub-buffer; the read
#            boot also times the walk of the events with libtraceevent
#            ("parse"), what any method adds on top
#   writer   per kernel, trace_marker and a syscall event, with the buffer
#            mapped and without (base: without)
#   setup    per kernel with the mapping and buffer size (1 16 128 MiB):
#            open+mmap and munmap+close
#   tools    scripts/bench-tools.sh: ftmmap against trace-cmd record and
#            stream on our kernel, one boot a workload (markers, pingpong)
# The results go to docs/bench/results.csv (kernel,measure,variant,size,
# figure,value; sorted) and the plots to docs/bench/*.svg, drawn with
# gnuplot by scripts/bench-report.py, which also prints the figures that
# changed against the results file as it was, and fails when:
#   mapping drain > MAX_DRAIN (0.85) x read() at 4 KiB, on ours and 6.12+ours
#   writer cost   > MAX_WRITER (1.02) x base's, on ours (mapped or not)
#
# Environment: BENCH_JOBS (2), BENCH_ONLY (a regex: only the boots whose tag
# matches, for trying things out; the results file is then not written),
# MAINLINE_KERNEL (a bzImage instead of Debian's 6.12), MAX_DRAIN, MAX_WRITER.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

JOBS_AT_ONCE=${BENCH_JOBS:-2}
OUT=$TOP/docs/bench
res=$BUILD/bench
# The guest clock counts instructions and starts at the same date, and the
# kernel does not randomize its layout or stack offsets: what a boot does
# depends on nothing outside the guest.
rtc="-rtc base=2026-01-01T00:00:00,clock=vm"
icount="-icount shift=0,sleep=off $rtc"
append="nokaslr randomize_kstack_offset=off"
SIZES=(4 8 16 64 512)
METHODS=(read splice-null splice-file mmap)
start_all=$(now_s)

# The unpatched base: a worktree of the scratch tree at "base", built with
# the same config as ours into $OBJ/base.
base_kernel() {
	local wt
	wt=$(base_worktree)
	WORKTREE=$wt "$(dirname "$0")/kernel.sh" normal base >&2
	echo "$OBJ/base/arch/x86/boot/bzImage"
}

mkdir -p "$LOGS" "$OUT"
"$(dirname "$0")/kernel.sh" normal
"$(dirname "$0")/tests.sh"
"$(dirname "$0")/initramfs.sh"
# bench-tools.sh's guest, built now: nothing is rebuilt while guests run
"$(dirname "$0")/trace.sh" --ensure
declare -A kernel
kernel[ours]=$OBJ/normal/arch/x86/boot/bzImage
kernel[base]=$(base_kernel)
SERIES=6.12 "$(dirname "$0")/tree.sh" --keep-work
SERIES=6.12 "$(dirname "$0")/kernel.sh" normal
kernel[6.12+ours]=$BUILD/obj-6.12/normal/arch/x86/boot/bzImage
kernel[mainline]=$(stock_612_kernel)

# The boots: TAG KERNEL ARGS (comma-separated ftmmap-bench arguments)
plan() {
	local k s m
	for k in ours 6.12+ours mainline base; do
		for s in "${SIZES[@]}"; do
			[ "$k" != base ] || [ "$s" = 4 ] || continue
			for m in "${METHODS[@]}"; do
				[ "$k" != base ] || [ "$m" != mmap ] || continue
				echo "$k.drain.$m.$s $k drain,-s,$s,-m,$m"
			done
		done
		echo "$k.writer $k writer"
		[ "$k" = base ] && continue
		echo "$k.writer-mapped $k writer,-M"
		for s in 1 16 128; do
			echo "$k.setup.$s $k setup,-b,$s"
		done
	done
	echo "tools.markers - -"
	echo "tools.pingpong - -"
}

# one TAG KERNEL ARGS: boot, keep the "# result:" lines in $res/TAG.res
one() {
	local tag=$1 k=$2 args=$3 log=$LOGS/bench-$1-bench.log
	if [ "${tag%%.*}" = tools ]; then
		: >"$res/$tag.csv"
		# norandmaps: the tools are large dynamic programs (trace-cmd and
		# its libraries); no address space layout depends on the guest's
		# entropy then
		if BENCH_TOOLS_CSV=$res/$tag.csv QEMU_EXTRA="$rtc" APPEND="$append norandmaps" \
			"$(dirname "$0")/bench-tools.sh" "${tag#tools.}" >"$res/$tag.out" 2>&1; then
			touch "$res/$tag.ok"
		fi
		return 0
	fi
	if KERNEL=${kernel[$k]} RUN_NAME=bench-$tag SMP=1 QEMU_EXTRA="$icount" ARGS="$args" APPEND="$append" \
		TIMEOUT=1200 "$(dirname "$0")/boot.sh" normal bench >"$res/$tag.out" 2>&1; then
		tr -d '\r' <"$log" | sed -n "s/^# result: /kernel=$k /p" >"$res/$tag.res"
		[ -s "$res/$tag.res" ] && touch "$res/$tag.ok"
	fi
	return 0
}

rm -rf "$res"
mkdir -p "$res"
only() {
	if [ -z "${BENCH_ONLY:-}" ]; then cat; else grep -E "^(${BENCH_ONLY})"; fi
}
mapfile -t boots < <(plan | only)
say "bench: ${#boots[@]} runs, $JOBS_AT_ONCE at once (one vCPU each, -icount shift=0,sleep=off)"
n=0
for b in "${boots[@]}"; do
	read -r tag k args <<<"$b"
	while [ "$(jobs -rp | wc -l)" -ge "$JOBS_AT_ONCE" ]; do
		wait -n || true
	done
	n=$((n + 1))
	note "[$n/${#boots[@]}] $tag"
	one "$tag" "$k" "$args" &
done
wait
failed=()
for b in "${boots[@]}"; do
	read -r tag _ <<<"$b"
	[ -f "$res/$tag.ok" ] || failed+=("$tag")
done
if [ ${#failed[@]} != 0 ]; then
	for tag in "${failed[@]}"; do
		warn "bench run $tag failed (see ${res#"$TOP"/}/$tag.out):"
		grep -hE 'not ok|Bail out|FAIL|ERROR' "$res/$tag.out" | head -5 >&2 || true
	done
	die "${#failed[@]} bench runs failed"
fi
note "runs done in $(fmt_secs $(($(now_s) - start_all)))"

for f in "$res"/*.res "$res"/tools.*.csv; do
	[ ! -f "$f" ] || cat "$f"
done | awk -v res="$res" '/^kernel=/ { print >(res "/all.res"); next } { print >(res "/tools.csv") }'
touch "$res/all.res" "$res/tools.csv"
args=("$res/all.res" "$res/tools.csv" "$OUT")
[ -z "${BENCH_ONLY:-}" ] || args+=(--dry-run)
MAX_DRAIN=${MAX_DRAIN:-0.85} MAX_WRITER=${MAX_WRITER:-1.02} \
	python3 "$(dirname "$0")/bench-report.py" "${args[@]}" \
	--mainline "$(basename "${kernel[mainline]}")"
note "make bench took $(fmt_secs $(($(now_s) - start_all)))"
