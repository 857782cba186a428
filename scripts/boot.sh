#!/usr/bin/env bash
# Boot a kernel with the guest initramfs in QEMU (TCG) and judge the run.
#
#   boot.sh FLAVOUR MODE      FLAVOUR normal|debug|arm64|arm64-debug|gki|kcsan|rt|
#                             debian|debian-arm64, MODE check|demo|bench|shell|trace
#
# normal, debug, kcsan, rt and debian boot qemu-system-x86_64 (pc) with the x86_64
# guest; arm64, arm64-debug, gki and debian-arm64 boot qemu-system-aarch64 (-M virt,
# -cpu $ARM64_CPU: max) with the arm64 guest.
#
# Environment: SMP (vCPUs, 4), TIMEOUT (seconds; default by flavour),
# QEMU_EXTRA (more qemu arguments), KERNEL (boot this bzImage, or arm64
# Image, instead of ours), ARGS (comma-separated arguments for bench mode), MEM (2G),
# TRACE_CLOCK (x86 check, trace and demo: the trace clock from boot on,
# global; empty: the kernel's choice), DISK (a raw image attached as
# /dev/vda), INITRD_EXTRA (a cpio archive
# the kernel unpacks after the guest's initramfs: bench-tools.sh's job;
# the test modules kernel.sh built with the kernel follow it in check
# and shell modes),
# SILENT (check mode: stop a guest that prints nothing for this many
# seconds, 180; 0: never; guest/init's console watchdog speaks every 60 s),
# RUN_NAME (the logs' name: FLAVOUR, or "other" with KERNEL; bench.sh boots
# several at once), APPEND (more kernel command line), ALLOW_NO_TESTS=1 (no ring-buffer
# kselftest is not a failure), ONLY (check: only the listed programs whose
# name contains one of these, comma-separated), SKIP (check: none of the
# listed programs whose name contains one of these), BOOT_EVENTS=0 (no
# trace_event= on the command line: the top level buffer is left unused),
# VERDICT_ARGS (more arguments for scripts/verdict.py), ONLINE_CPUS (check:
# the CPUs the guest must find online, SMP unless maxcpus= in APPEND leaves
# some offline), V=1 (show the whole console while it runs).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

flavour=${1:?usage: $0 normal|debug|arm64|arm64-debug|gki|kcsan|rt|debian|debian-arm64 check|demo|bench|shell|trace}
mode=${2:-check}
case $flavour in normal | debug | arm64 | arm64-debug | gki | kcsan | rt | debian | debian-arm64) ;; *) die "unknown flavour '$flavour'" ;; esac
case $mode in check | demo | bench | shell | trace) ;; *) die "unknown mode '$mode'" ;; esac
set_flavour "$flavour"

SMP=${SMP:-4}
MEM=${MEM:-2G}
case $flavour in
normal) TIMEOUT=${TIMEOUT:-600} ;;
debug | arm64 | gki | kcsan | rt | debian) TIMEOUT=${TIMEOUT:-1200} ;;
arm64-debug | debian-arm64) TIMEOUT=${TIMEOUT:-2400} ;;
esac
kernel=${KERNEL:-$OBJ/$flavour/$KIMAGE}
case $kernel in /*) ;; *) kernel=$TOP/$kernel ;; esac
initrd=$INITRD
case $flavour in
arm64) make_kernel="'make kernel-arm64'" make_initrd="'make initramfs FLAVOUR=arm64'" ;;
arm64-debug) make_kernel="'make kernel-arm64-debug'" make_initrd="'make initramfs FLAVOUR=arm64'" ;;
gki) make_kernel="'make kernel-gki'" make_initrd="'make initramfs FLAVOUR=arm64'" ;;
debian) make_kernel="'make kernel-debian'" make_initrd="'make initramfs'" ;;
debian-arm64) make_kernel="'make kernel-debian-arm64'" make_initrd="'make initramfs FLAVOUR=arm64'" ;;
*) make_kernel="'make kernel' (or 'make kernel-debug')" make_initrd="'make initramfs'" ;;
esac
[ -f "$kernel" ] || die "no kernel image $kernel: run $make_kernel"
[ -f "$initrd" ] || die "no initramfs $initrd: run $make_initrd"
extras=()
if [ -n "${INITRD_EXTRA:-}" ]; then
	[ -f "$INITRD_EXTRA" ] || die "no archive $INITRD_EXTRA"
	extras+=("$INITRD_EXTRA")
fi
# The test modules kernel.sh built with this kernel (user/kmod), in
# /lib/modules/ftmmap/ of the guest: for the tests (check and shell), not
# for the benchmarks, whose guests stay as they were measured (with the
# archive, trace-cmd stream of bench-tools.sh no longer ended: its
# recorder depends on where things land).
kobj=${kernel%/"$KIMAGE"}
if { [ "$mode" = check ] || [ "$mode" = shell ]; } && [ "$kobj" != "$kernel" ] &&
	compgen -G "$kobj/ftmmap-kmod/*.ko" >/dev/null; then
	kcpio=$BUILD/kmod-${RUN_NAME:-$flavour}.cpio
	modules_cpio "$kcpio" "$kobj"/ftmmap-kmod/*.ko ||
		die "cannot pack the test modules of $kobj"
	extras+=("$kcpio")
fi
if [ ${#extras[@]} != 0 ]; then
	# One file for -initrd: the kernel unpacks the archives in turn,
	# skipping the zeros between them; an uncompressed one must start
	# on a multiple of 4 bytes.
	joined=$BUILD/initrd-${RUN_NAME:-$flavour}.img
	cp "$initrd" "$joined"
	for x in "${extras[@]}"; do
		truncate -s %512 "$joined"
		cat "$x" >>"$joined"
	done
	initrd=$joined
fi

# The machine: QEMU's pc with the 8250 UART, or virt with the PL011 and
# PSCI (which powers the guest off).  TCG either way.
case $KARCH in
x86_64)
	qemu=(qemu-system-x86_64)
	console=ttyS0,115200
	;;
arm64)
	qemu=(qemu-system-aarch64 -M virt -cpu "${ARM64_CPU:-max}")
	console=ttyAMA0
	;;
esac
command -v "${qemu[0]}" >/dev/null || die "${qemu[0]} is missing: run 'make deps'"

cmdline="console=$console printk.time=1 panic=-1 ftmmap.mode=$mode"
[ -z "${ARGS:-}" ] || cmdline+=" ftmmap.args=$ARGS"
[ -z "${APPEND:-}" ] || cmdline+=" $APPEND"
# demo and bench: only warnings and errors from the kernel on the console.
case $mode in demo | bench) cmdline+=" loglevel=5" ;; esac
# The events the tests and the tool enable with several vCPUs up (every
# scheduler event: ftmmap_test.sh's "-e sched"; its timer events; the
# write() system call's and the irq events of ftmmap_test.sh and
# trace-check.sh), enabled while one CPU runs: guest/init keeps them so
# that nothing patches code later (see there).  BOOT_EVENTS=0: none (a
# kernel nothing traced with yet, for tests/fresh_*).
case $mode-${BOOT_EVENTS:-1} in
check-1 | trace-1 | demo-1)
	cmdline+=" trace_event=sched:*,timer:hrtimer_start,timer:hrtimer_expire_entry"
	cmdline+=",irq:*,syscalls:sys_enter_write,syscalls:sys_exit_write"
	;;
esac
# ONLY=a,b: run only the listed programs whose name contains a or b.
[ -z "${ONLY:-}" ] || cmdline+=" ftmmap.only=$ONLY"
# SKIP=a,b: none of the listed programs whose name contains a or b.
[ -z "${SKIP:-}" ] || cmdline+=" ftmmap.skip=$SKIP"
# Under TCG the x86 guest's TSC is unstable, and at late_initcall the
# kernel switches the trace clock from local to global while those events
# record. An event that then sees the time go back prints "Ring buffer
# clock went backwards" from the writer, inside the scheduler with its
# locks held; lockdep then finds the 8250's port lock (printk writes the
# console) and the runqueue locks (the UART's interrupt wakes the tty's
# writers) taken in both orders, and the debug guest hangs printing that
# report from the UART's interrupt (2 boots in 11, found with gdb). With the
# clock named here, the events use global from the first one on.
# TRACE_CLOCK= (empty) leaves the clock to the kernel: bench-tools.sh's
# guest, one vCPU under -icount, keeps local.
case $mode-$KARCH in
check-x86_64 | trace-x86_64 | demo-x86_64)
	[ -z "${TRACE_CLOCK=global}" ] || cmdline+=" trace_clock=$TRACE_CLOCK"
	;;
esac

# x86 switches its IPIs to broadcast (a static key: code patching) when
# the second CPU comes online, and back when one is left, which the tests'
# CPU hotplug and guest/init do with CPUs running; no_ipi_broadcast=1
# keeps the key off (with 4 vCPUs, IPIs one by one cost nothing).
[ "$KARCH" != x86_64 ] || cmdline+=" no_ipi_broadcast=1"

# 6.12 finds the TSC of a TCG guest with several vCPUs stable and, at
# late_initcall, turns on the static key of a stable sched_clock
# ("sched_clock: Marking stable") while the other CPUs run
# sched_clock_cpu() in their idle loops. x86 patches through an int3 that
# another vCPU can still run into under TCG: Debian's 6.12 died so at boot
# ("Oops: int3" at sched_clock_cpu+0x9, the fresh clone of 2026-11-29).
# tsc=unstable keeps the key off, as 6.1's guests have it on their own
# (they find the TSCs unsynchronized and keep time with the HPET), and the
# verdict fails a guest whose kernel marked its sched_clock stable anyway.
# One vCPU has nothing to race: bench-tools.sh's guest keeps a stable TSC.
patch_guard=0
if [ "$KARCH" = x86_64 ] && [ "$SMP" -gt 1 ]; then
	cmdline+=" tsc=unstable"
	patch_guard=1
fi

qemu+=(-accel tcg -m "$MEM" -smp "$SMP" -nodefaults -nographic
	-no-reboot -kernel "$kernel" -initrd "$initrd" -append "$cmdline")
# DISK=image: a raw image as a virtio-blk disk, /dev/vda in the guest (a
# tar stream in and out: make trace, trace-check.sh)
if [ -n "${DISK:-}" ]; then
	[ -f "$DISK" ] || die "no disk image $DISK"
	case $KARCH in x86_64) blk=virtio-blk-pci ;; arm64) blk=virtio-blk-device ;; esac
	qemu+=(-drive "if=none,id=d0,file=$DISK,format=raw" -device "$blk,drive=d0")
fi
# shellcheck disable=SC2206
qemu+=(${QEMU_EXTRA:-})

if [ "$mode" = shell ]; then
	say "booting $flavour kernel, shell on the console (Ctrl-A X quits QEMU)"
	exec "${qemu[@]}" -serial mon:stdio
fi

mkdir -p "$LOGS"
run=${RUN_NAME:-$flavour}
label=$flavour
if [ -n "${KERNEL:-}" ]; then
	run=${RUN_NAME:-other}
	label="other (KERNEL=$KERNEL)"
fi
log=$LOGS/$run-$mode.log
say "booting $label kernel: $mode, $SMP vCPUs, TCG, time limit $TIMEOUT s"
note "console log: ${log#"$TOP"/}"
start=$(now_s)

timeout --kill-after=10 "$TIMEOUT" "${qemu[@]}" -serial stdio -monitor none </dev/null >"$log" 2>&1 &
qpid=$!
# Never leave QEMU behind, whatever ends this script.
trap 'kill -TERM $qpid 2>/dev/null; sleep 1; kill -KILL $qpid 2>/dev/null; true' EXIT INT TERM

# What a person sees while it runs: the guest's lines (demo, bench: all of
# them from the first one on; check: the test results), never the
# firmware's terminal escapes.
if [ "${V:-0}" = 1 ]; then
	filter=(cat)
elif [ "$mode" = check ]; then
	filter=(grep --line-buffered -E '^(# ftmmap:|not ok|ok )')
else
	filter=(awk '/^# ftmmap:/ { on = 1 } on { print; fflush() }')
fi
tail -n +1 -f --pid="$qpid" "$log" 2>/dev/null |
	sed -u -e 's/\r//g' -e 's/\x1b\[[0-9;?]*[A-Za-z]//g' -e 's/\x1bc//g' |
	"${filter[@]}" | sed -u 's/^/    | /' &
tpid=$!

# The guest powers itself off after "# ftmmap: done"; one that only halts
# (no ACPI in an alternative KERNEL) is stopped here rather than at the
# time limit. In check mode, a guest alive says something at least every
# 60 s (guest/init's console watchdog); one that printed nothing for
# SILENT seconds is hung, and waiting for the time limit only costs time.
silent=0
[ "$mode" != check ] || silent=${SILENT:-180}
silenced='' done_at='' size=-1 changed=$(now_s)
while kill -0 "$qpid" 2>/dev/null; do
	sleep 1
	if [ "$silent" != 0 ]; then
		s=$(stat -c %s "$log")
		if [ "$s" != "$size" ]; then
			size=$s changed=$(now_s)
		elif [ $(($(now_s) - changed)) -ge "$silent" ]; then
			warn "the guest printed nothing for $silent s: stopping QEMU"
			silenced=1
			kill -TERM "$qpid" 2>/dev/null || true
			break
		fi
	fi
	if [ -z "$done_at" ] && grep -q '^# ftmmap: done' "$log"; then
		done_at=$(now_s)
	elif [ -n "$done_at" ] && [ $(($(now_s) - done_at)) -ge 20 ]; then
		warn "the guest finished but did not power off: stopping QEMU"
		kill -TERM "$qpid" 2>/dev/null || true
		break
	fi
done
rc=0
wait "$qpid" || rc=$?
[ -z "$done_at" ] || [ "$rc" != 124 ] || rc=0
wait "$tpid" 2>/dev/null || true
trap - EXIT INT TERM
note "guest ran for $(fmt_secs $(($(now_s) - start)))"

vargs=(--name "$run" --counts "$LOGS/$run-$mode.counts")
[ -z "$silenced" ] || { vargs+=(--silent "$silent"); rc=0; }
case $rc in
0) ;;
124 | 137) vargs+=(--timed-out "$TIMEOUT") ;;
*) warn "qemu exited with status $rc (see $log)" ;;
esac
if [ "$mode" = check ]; then
	vargs+=(--tests "$GUEST/tests.list" --smp "${ONLINE_CPUS:-$SMP}")
	[ -z "${ONLY:-}" ] || vargs+=(--only "$ONLY")
	[ -z "${SKIP:-}" ] || vargs+=(--skip "$SKIP")
	[ "${ALLOW_NO_TESTS:-0}" = 1 ] || [ -n "${ONLY:-}" ] || vargs+=(--require ring-buffer/)
else
	vargs+=(--splats-only)
fi
[ $patch_guard = 0 ] || vargs+=(--no-stable-sched-clock)
# VERDICT_ARGS: more verdict.py arguments (scripts/kcsan.sh: the known races)
# shellcheck disable=SC2206
vargs+=(${VERDICT_ARGS:-})
python3 "$TOP/scripts/verdict.py" "${vargs[@]}" "$log"
