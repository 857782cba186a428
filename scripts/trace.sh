#!/usr/bin/env bash
# make trace: run a command in the patched guest under "ftmmap record" and
# leave the trace.dat file on the host.
#
#   trace.sh                  CMD='shell command' [OUT=trace.dat]
#                             [EVENTS='SYSTEM[:EVENT] ...'] [FTMMAP_OPTS='-b 4096']
#   trace.sh --job DIR RESULTS
#                             boot the guest with the files of DIR as its job
#                             and unpack what it wrote back into RESULTS
#                             (trace-check.sh and bench-tools.sh use it)
#   trace.sh --ensure         only build what is missing (see ensure_guest)
#
# Files travel on a raw disk image, attached as a virtio-blk disk (/dev/vda):
# the host writes a tar stream of the job to it, guest/init (ftmmap.mode=trace)
# unpacks it, runs it, and writes its results back as a tar stream from the
# start of the disk, which the host unpacks.  No file system, no root.
#
# The job of make trace: cmd.sh (CMD, its output into cmd.out), events (one a
# line; default: markers and the scheduler's switch and wakeup events),
# options (FTMMAP_OPTS).  The guest runs "ftmmap record -o trace.dat -e ...
# -- sh cmd.sh" on every CPU, then saves ftmmap's per-CPU totals (ftmmap.err)
# and each CPU buffer's stats file (stats/cpuN: overrun is what the kernel
# lost).  Missing pieces (kernel, guest programs, initramfs) are built first.
#
# Environment: SMP (4 vCPUs), TIMEOUT, QEMU_EXTRA (as boot.sh), DISK_MB (size
# of the disk, 512: the results must fit), TRACE_LOG (keep the console log
# under this name in the logs folder as well), RUN_NAME and TRACE_WORK (the
# console log's name and the disk's folder, for runs at once; normal and
# build/trace).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
set_flavour normal
S=$TOP/scripts

DEFAULT_EVENTS='ftrace:print sched:sched_switch sched:sched_wakeup'

# ensure_guest: build the kernel (with the virtio disk), the guest programs
# and the initramfs if they are missing or older than what they are made of.
ensure_guest() {
	local k=$OBJ/normal/$KIMAGE
	if [ ! -f "$k" ] || ! grep -qx 'CONFIG_VIRTIO_BLK=y' "$OBJ/normal/.config" 2>/dev/null; then
		"$S/tree.sh" --if-missing
		"$S/kernel.sh" normal
	fi
	if [ ! -x "$GUEST/user/bin/ftmmap" ] || [ ! -f "$GUEST/tests.list" ] ||
		[ -n "$(find "$TOP/user" -name '*.[ch]' -newer "$GUEST/user/bin/ftmmap" 2>/dev/null)" ]; then
		"$S/tests.sh"
	fi
	[ -x "$GUEST/user/bin/ftmmap" ] || die "the guest has no ftmmap (user/ftmmap/): nothing to record with"
	if [ ! -f "$INITRD" ] || [ "$TOP/guest/init" -nt "$INITRD" ] ||
		[ "$GUEST/user/bin/ftmmap" -nt "$INITRD" ]; then
		"$S/initramfs.sh"
	fi
}

# run_job DIR RESULTS: the tar stream of DIR on a disk, a boot in trace mode,
# the guest's tar stream unpacked into RESULTS.
run_job() {
	local dir=$1 res=$2 work disk rc=0
	work=${TRACE_WORK:-$BUILD/trace}
	disk=$work/disk.img
	mkdir -p "$work" "$LOGS"
	rm -f "$disk"
	tar -cf "$disk" -C "$dir" --owner=0 --group=0 . || die "cannot write the job to $disk"
	truncate -s "${DISK_MB:-512}M" "$disk"
	DISK=$disk "$S/boot.sh" normal trace || rc=$?
	[ -z "${TRACE_LOG:-}" ] || cp "$LOGS/${RUN_NAME:-normal}-trace.log" "$LOGS/$TRACE_LOG.log"
	rm -rf "$res"
	mkdir -p "$res"
	# The guest's results start at the first byte; a disk it did not write
	# still holds the job, which has no ftmmap.rc or done file.
	tar -xf "$disk" -C "$res" 2>/dev/null || rc=1
	rm -f "$disk"
	return "$rc"
}

if [ "${1:-}" = --ensure ]; then
	ensure_guest
	exit
fi
if [ "${1:-}" = --job ]; then
	[ $# = 3 ] || die "usage: $0 --job DIR RESULTS"
	run_job "$2" "$3"
	exit
fi

[ -n "${CMD:-}" ] || die "usage: make trace CMD='shell command' [OUT=trace.dat] [EVENTS='sched ftrace:print']"
OUT=${OUT:-trace.dat}
EVENTS=${EVENTS:-$DEFAULT_EVENTS}
ensure_guest

job=$(mktemp -d)
res=$BUILD/trace/results
trap 'rm -rf "$job"' EXIT
printf 'exec >/tmp/out/cmd.out 2>&1\n%s\n' "$CMD" >"$job/cmd.sh"
for e in $EVENTS; do echo "$e"; done >"$job/events"
printf '%s\n' "${FTMMAP_OPTS:-}" >"$job/options"
say "trace: $CMD (events: $EVENTS${FTMMAP_OPTS:+; $FTMMAP_OPTS})"
rc=0
run_job "$job" "$res" || rc=$?
[ -f "$res/ftmmap.rc" ] || die "the guest wrote no results (see ${LOGS#"$TOP"/}/normal-trace.log)"
if [ -s "$res/cmd.out" ]; then
	note "output of the command (${res#"$TOP"/}/cmd.out):"
	head -n 20 "$res/cmd.out" | sed 's/^/    | /'
fi
frc=$(cat "$res/ftmmap.rc")
[ "$frc" = 0 ] || { sed 's/^/    | /' "$res/ftmmap.err"; die "ftmmap record failed in the guest (exit $frc)"; }
[ -f "$res/trace.dat" ] || die "ftmmap wrote no trace.dat"
[ "$rc" = 0 ] || die "the guest run failed (see ${LOGS#"$TOP"/}/normal-trace.log)"
case $OUT in /*) ;; *) OUT=$PWD/$OUT ;; esac
cp "$res/trace.dat" "$OUT"

# One line: the events and the losses, per CPU, as ftmmap counted them and
# as the kernel reported them (overrun of per_cpu/cpuN/stats).
total=$(sed -n 's/^total: \([0-9]*\) events.*/\1/p' "$res/ftmmap.err")
lost=$(sed -n 's/^CPU \([0-9]*\): [0-9]* events, \([0-9]*\) lost.*/cpu\1=\2/p' "$res/ftmmap.err" | tr '\n' ' ')
klost=$(for f in "$res"/stats/cpu*; do
	printf '%s=%s ' "${f##*/}" "$(sed -n 's/^overrun: //p' "$f")"
done)
echo "${OUT#"$PWD"/}: ${total:-?} events, $(du -h "$OUT" | cut -f1); lost per CPU: ${lost% } (kernel overrun: ${klost% })"
