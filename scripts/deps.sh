#!/usr/bin/env bash
# Install the Debian packages the harness needs, if any are missing.
#
# The arm64 guest needs Debian's arm64 architecture (dpkg multiarch) for the
# static libraries its tests link, the cross compiler, and busybox-static of
# arm64.  That busybox is not installed (it would replace the host's): its
# package is fetched with apt-get download and unpacked into $BUSYBOX_ARM64.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

PKGS=(
	build-essential bc bison flex libelf-dev libssl-dev kmod dwarves
	cpio xz-utils rsync git perl python3
	busybox-static qemu-system-x86 sparse
	# tests link libtraceevent and libtracefs statically; make matrix
	# and the debian flavours start from Debian's own kernel configs
	libtraceevent-dev libtracefs-dev linux-config-6.1 linux-config-6.1:arm64
	linux-config-6.12 linux-config-6.12:arm64
	# map_test as a 32-bit program in the x86_64 guest (gcc -m32): gcc-12's
	# multilib, as gcc-multilib conflicts with gcc-aarch64-linux-gnu
	gcc-12-multilib
	# the gki kernel (Android's GKI is built with clang and LLVM's tools)
	clang-16 lld-16 llvm-16
	# arm64 guest: emulator, cross compiler, arm64 libraries
	qemu-system-arm gcc-aarch64-linux-gnu libc6-dev-arm64-cross
	libtraceevent-dev:arm64 libtracefs-dev:arm64
	# ftmmap prints with libtraceevent's plugins, as trace-cmd report
	# does: they go into both guests, next to its shared libraries
	libtraceevent1-plugin libtraceevent1-plugin:arm64
	# trace-cmd report reads ftmmap's trace.dat files (trace-check.sh);
	# trace-cmd record runs in the guest (bench-tools.sh)
	trace-cmd
	# ftmmap prints the function_graph tracer's events through
	# libtracecmd (dlopen(), x86_64 guest: libtracecmd1 is not
	# Multi-Arch: same, so there is no arm64 one beside it)
	libtracecmd1
	# make bench draws its plots (and make check checks them) with gnuplot
	gnuplot-nox
	# pgrep: check-selftest.sh looks for builds left running
	procps
)

missing=()
for p in "${PKGS[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed'; then
		missing+=("$p")
	fi
done
need_arch=0
dpkg --print-foreign-architectures | grep -qx arm64 || need_arch=1

if [ ${#missing[@]} = 0 ] && [ "$need_arch" = 0 ] && [ -x "$BUSYBOX_ARM64" ]; then
	say "build dependencies: all present"
	exit 0
fi

command -v apt-get >/dev/null || die "missing packages (${missing[*]}) and no apt-get: install them by hand"
SUDO=
if [ "$(id -u)" != 0 ]; then
	command -v sudo >/dev/null || die "missing packages (${missing[*]}): run 'make deps' as root"
	SUDO=sudo
fi
export DEBIAN_FRONTEND=noninteractive
apt_log=${TMPDIR:-/tmp}/ftmmap-apt.log
start=$(now_s)

if [ "$need_arch" = 1 ]; then
	say "adding Debian's arm64 architecture (dpkg --add-architecture arm64)"
	$SUDO dpkg --add-architecture arm64 || die "dpkg --add-architecture arm64 failed"
fi
if [ ${#missing[@]} != 0 ] || [ "$need_arch" = 1 ]; then
	note "apt-get update"
	$SUDO apt-get update -q >"$apt_log" 2>&1 || {
		tail -n 30 "$apt_log" >&2
		die "apt-get update failed"
	}
fi

if [ ${#missing[@]} != 0 ]; then
	say "installing build dependencies: ${missing[*]}"
	$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}" >"$apt_log" 2>&1 || {
		tail -n 30 "$apt_log" >&2
		die "apt-get install failed for: ${missing[*]}"
	}
fi

# busybox-static:arm64 conflicts with the host's busybox-static: unpack it.
if [ ! -x "$BUSYBOX_ARM64" ]; then
	say "fetching busybox-static:arm64 into ${BUSYBOX_ARM64#"$TOP"/}"
	dir=$(dirname "$(dirname "$BUSYBOX_ARM64")")
	tmp=$(mktemp -d)
	chmod 755 "$tmp" # apt's _apt user writes the download
	(cd "$tmp" && apt-get download -q busybox-static:arm64) >"$apt_log" 2>&1 || {
		rm -rf "$tmp"
		tail -n 30 "$apt_log" >&2
		die "apt-get download busybox-static:arm64 failed"
	}
	rm -rf "$dir"
	mkdir -p "$dir"
	dpkg-deb -x "$tmp"/busybox-static_*_arm64.deb "$dir" || die "cannot unpack busybox-static:arm64"
	note "$(dpkg-deb -f "$tmp"/busybox-static_*_arm64.deb Version)"
	rm -rf "$tmp"
	[ -x "$BUSYBOX_ARM64" ] || die "busybox-static:arm64 has no bin/busybox"
fi
note "done in $(fmt_secs $(($(now_s) - start)))"
