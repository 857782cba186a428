#!/usr/bin/env bash
# Drain cost of read() against the mapping, on our kernels and on mainline.
#
#   bench.sh
#
# Boots our normal kernel, 6.12 with our mainline series (patches/6.12/)
# and Debian's 6.12 kernel (mainline's mapping) with the same guest, one
# vCPU, under "-icount shift=0,sleep=off": guest time then counts
# instructions, so the numbers repeat on a noisy host.
# In each guest, user/bench.c fills one CPU's buffer (4 KiB sub-buffers)
# with EVENTS trace_marker events, drains it with read() of trace_pipe_raw
# and again through the mapping, and checks that every event is seen once.
#
# Environment: EVENTS (100000), MAX_RATIO (0.85: our kernels fail above
# it), MAINLINE_KERNEL (a bzImage to use instead of Debian's 6.12).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

EVENTS=${EVENTS:-100000}
MAX_RATIO=${MAX_RATIO:-0.85}
icount="-icount shift=0,sleep=off"

# Debian's newest 6.12 cloud kernel: a plain bzImage that boots in QEMU.
mainline_kernel() {
	local dir=$BUILD/mainline pkg deb
	if [ -n "${MAINLINE_KERNEL:-}" ]; then
		echo "$MAINLINE_KERNEL"
		return
	fi
	mkdir -p "$dir"
	pkg=$(apt-cache search --names-only '^linux-image-6\.12\.[0-9.]+\+deb12-cloud-amd64-unsigned$' |
		awk '{print $1}' | sort -V | tail -1)
	[ -n "$pkg" ] || die "no linux-image-6.12 cloud package known to apt (apt-get update?)"
	if ! ls "$dir"/x/boot/vmlinuz-* >/dev/null 2>&1; then
		note "fetching $pkg" >&2
		(cd "$dir" && apt-get download -q "$pkg" >/dev/null) ||
			die "apt-get download $pkg failed"
		deb=$(ls "$dir"/*.deb | head -1)
		dpkg-deb -x "$deb" "$dir/x"
	fi
	ls "$dir"/x/boot/vmlinuz-* | head -1
}

# run LABEL KERNEL ARGS: boot in bench mode, print the result line
run() {
	local label=$1 kernel=$2 args=$3 log
	say "bench: $label" >&2
	KERNEL=$kernel SMP=1 QEMU_EXTRA="$icount" ARGS="$args" \
		"$(dirname "$0")/boot.sh" normal bench >"$LOGS/bench-$label.out" 2>&1 || {
		sed -n '/result:/p;/not ok/p' "$LOGS/bench-$label.out"
		die "bench on $label failed: see ${LOGS#"$TOP"/}/bench-$label.out"
	}
	log=$LOGS/other-bench.log
	cp "$log" "$LOGS/bench-$label.log"
	grep -o 'result: .*' "$log" | tail -1
}

field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$2"; }

mkdir -p "$LOGS"
"$(dirname "$0")/kernel.sh" normal
"$(dirname "$0")/tests.sh"
"$(dirname "$0")/initramfs.sh"

ours=$(run ours "$OBJ/normal/arch/x86/boot/bzImage" "-n,$EVENTS,-r,$MAX_RATIO")
# 6.12 with our mainline series (patches/6.12/), booted with the same guest
SERIES=6.12 "$(dirname "$0")/tree.sh" --keep-work
SERIES=6.12 "$(dirname "$0")/kernel.sh" normal
ours612=$(run 6.12+series "$BUILD/obj-6.12/normal/arch/x86/boot/bzImage" "-n,$EVENTS,-r,$MAX_RATIO")
main_k=$(mainline_kernel)
mainline=$(run mainline "$main_k" "-n,$EVENTS")

echo
printf '%-12s %12s %12s %14s %14s %8s\n' kernel "read/subbuf" "mmap/subbuf" "read total" "mmap total" "mmap/read"
for r in "ours:$ours" "6.12+series:$ours612" "mainline:$mainline"; do
	label=${r%%:*}
	line=${r#*:}
	rn=$(field read_ns "$line")
	rc=$(field read_calls "$line")
	mn=$(field mmap_ns "$line")
	mc=$(field get_reader_calls "$line")
	printf '%-12s %12d %12d %14d %14d %8s\n' "$label" $((rn / rc)) $((mn / mc)) "$rn" "$mn" \
		"$(field ratio "$line")"
done
echo "(guest nanoseconds under -icount shift=0: instructions; $EVENTS events, 4 KiB sub-buffers;"
echo " mainline: $(basename "$main_k"))"

# The consumer tool against trace-cmd record (issue 8): instructions per event
echo
"$(dirname "$0")/bench-tools.sh"
